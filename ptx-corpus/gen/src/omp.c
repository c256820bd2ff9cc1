/* gpucts ptx-corpus/gen source for GCC's nvptx offload compiler (OpenMP target region): the
 * declare-target functions become .func with their §2.3 parameters. */
struct S3 { char a, b, c; };
#pragma omp declare target
int g_sink;
__attribute__((noinline)) char f_char(char x) { g_sink += x; return x; }
__attribute__((noinline)) short f_short(short x) { g_sink += x; return x; }
__attribute__((noinline)) long long f_llong(long long x) { g_sink += (int)x; return x; }
__attribute__((noinline)) double f_double(double x) { return x * 2; }
__attribute__((noinline)) struct S3 f_s3(struct S3 s) { g_sink += s.a; return s; }
__attribute__((noinline)) int *f_ptr(int *p) { g_sink += *p; return p; }
#pragma omp end declare target
int main(void) {
  int r = 0;
  struct S3 s = {1, 2, 3};
#pragma omp target map(tofrom: r)
  { r = f_char(3) + f_short(4) + (int)f_llong(5) + f_s3(s).b + (int)f_double(1.0) + *f_ptr(&r); }
  return r;
}
