; gpucts ptx-corpus source: libNVVM 12.9 (nvvmCompileProgram, -arch=compute_90).
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%S3 = type { i8, i8, i8 }
@g_s3 = internal addrspace(1) global %S3 zeroinitializer
@g_h = internal addrspace(1) global half zeroinitializer
define %S3 @f_s3(%S3* byval align 1 %x) noinline {
  %v = load %S3, %S3* %x, align 1
  %old = load %S3, %S3* addrspacecast (%S3 addrspace(1)* @g_s3 to %S3*)
  store %S3 %v, %S3* addrspacecast (%S3 addrspace(1)* @g_s3 to %S3*)
  ret %S3 %old
}
define half @f_half(half %x) noinline {
  %old = load half, half* addrspacecast (half addrspace(1)* @g_h to half*)
  store half %x, half* addrspacecast (half addrspace(1)* @g_h to half*)
  ret half %old
}
!nvvmir.version = !{!0}
!0 = !{i32 2, i32 0}
