// gpucts ptx-corpus source: NVRTC 12.9, `-rdc=true --gpu-architecture=compute_90`.
struct S3 { char a, b, c; };
__device__ char g_c; __device__ S3 g_s; __device__ float2 g_f;
extern "C" __device__ __noinline__ char f_char(char x) { char r = g_c; g_c = x; return r; }
extern "C" __device__ __noinline__ S3 f_s3(S3 x) { S3 r = g_s; g_s = x; return r; }
extern "C" __device__ __noinline__ float2 f_float2(float2 x) { float2 r = g_f; g_f = x; return r; }
extern "C" __global__ void k(char c, S3 s, int *p) { p[0] = f_char(c) + f_s3(s).b + (int)f_float2(make_float2(1, 2)).y; }
