/* gpucts ptx-corpus source: clang-19 --target=nvptx64-nvidia-cuda -march=sm_90 -O2 -S */
struct S3 { char a, b, c; };
struct __attribute__((aligned(16))) S16a16 { int a; };
struct S3 g_s3; struct S16a16 g_s16; short g_short;
__attribute__((noinline)) short f_short(short x) { short r = g_short; g_short = x; return r; }
__attribute__((noinline)) struct S3 f_s3(struct S3 x) { struct S3 r = g_s3; g_s3 = x; return r; }
static __attribute__((noinline)) struct S3 f_s3_local(struct S3 x) { struct S3 r = g_s3; g_s3 = x; return r; }
__attribute__((noinline)) struct S16a16 f_s16a16(struct S16a16 x) { struct S16a16 r = g_s16; g_s16 = x; return r; }
__attribute__((nvptx_kernel)) void k(struct S3 *p) { p[0] = f_s3_local(p[1]); }
