/* gpucts ptx-corpus/gen source for clang (C, --target=nvptx64-nvidia-cuda or nvptx-nvidia-cuda):
 * one external function per type class of ptx-interop 13.2 §2.3, a static (local) function,
 * and a kernel. */
struct S3 { char a, b, c; };
struct S16a16 { int x[4]; } __attribute__((aligned(16)));
struct S12a4 { int a, b, c; };
typedef float float4 __attribute__((ext_vector_type(4)));
int g_sink;
char f_char(char x) { g_sink += x; return x; }
short f_short(short x) { g_sink += x; return x; }
int f_int(int x) { g_sink += x; return x; }
long long f_llong(long long x) { g_sink += (int)x; return x; }
float f_float(float x) { g_sink += (int)x; return x; }
double f_double(double x) { g_sink += (int)x; return x; }
int *f_ptr(int *p) { g_sink += *p; return p; }
struct S3 f_s3(struct S3 s) { g_sink += s.a; return s; }
struct S12a4 f_s12a4(struct S12a4 s) { g_sink += s.a; return s; }
struct S16a16 f_s16a16(struct S16a16 s) { g_sink += s.x[0]; return s; }
float4 f_float4(float4 v) { g_sink += (int)v.x; return v; }
__attribute__((noinline)) static struct S3 f_s3_local(struct S3 s) { g_sink += s.b; return s; }
void f_call_local(struct S3 s) { g_sink += f_s3_local(s).c; }
__attribute__((nvptx_kernel)) void k_params(char c, short s, int *out, struct S3 s3) {
  out[0] = f_char(c) + f_short(s) + f_s3(s3).b + f_s3_local(s3).a;
}
