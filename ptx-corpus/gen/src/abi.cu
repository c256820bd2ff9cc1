// gpucts ptx-corpus/gen source for NVRTC: one external device function per type class of
// ptx-interop 13.2 §2.3, kernels with host-layout parameters, and the ch. 3 system calls.
// NVRTC declares printf, malloc, free and __assertfail (what <cassert>'s assert calls) itself.
struct S3 { char a, b, c; };
struct __align__(16) S16a16 { int x[4]; };
struct S12a4 { int a, b, c; };
extern "C" {
__device__ int g_sink;
__device__ __noinline__ char f_char(char x) { g_sink += x; return x; }
__device__ __noinline__ short f_short(short x) { g_sink += x; return x; }
__device__ __noinline__ int f_int(int x) { g_sink += x; return x; }
__device__ __noinline__ long long f_llong(long long x) { g_sink += (int)x; return x; }
__device__ __noinline__ float f_float(float x) { g_sink += (int)x; return x; }
__device__ __noinline__ double f_double(double x) { g_sink += (int)x; return x; }
__device__ __noinline__ int *f_ptr(int *p) { g_sink += *p; return p; }
__device__ __noinline__ S3 f_s3(S3 s) { g_sink += s.a; return s; }
__device__ __noinline__ S12a4 f_s12a4(S12a4 s) { g_sink += s.a; return s; }
__device__ __noinline__ S16a16 f_s16a16(S16a16 s) { g_sink += s.x[0]; return s; }
__device__ __noinline__ float4 f_float4(float4 v) { g_sink += (int)v.x; return v; }
__device__ __noinline__ void f_many(char a, short b, int c, long long d, float e, double f, S3 g) {
  g_sink += a + b + c + (int)d + (int)e + (int)f + g.c;
}
__global__ void k_params(char c, short s, int *out, S3 s3, float4 v) {
  out[0] = f_char(c) + f_short(s) + f_int(out[1]) + (int)f_llong(out[2]) + (int)f_float(v.y)
         + (int)f_double(v.z) + *f_ptr(out) + f_s3(s3).b + f_s12a4(S12a4{1, 2, 3}).c
         + f_s16a16(S16a16{{1, 2, 3, 4}}).x[3] + (int)f_float4(v).w;
  f_many(c, s, 1, 2, 3.0f, 4.0, s3);
}
__global__ void k_syscalls(int *out, int n) {
  printf("n=%d c=%c f=%f p=%p\n", n, 'x', 1.5, out);
  int *m = (int *)malloc(n * sizeof(int));
  if (m) { m[0] = n; out[0] = m[0]; free(m); }
  if (n < 0) __assertfail("n >= 0", "abi.cu", 37, "k_syscalls", 1);
}
}
