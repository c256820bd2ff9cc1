; gpucts ptx-corpus/gen source for llc-19 (opaque pointers; abi_nvvm.ll with typed pointers for libNVVM and llc-14): one
; function per §2.3 type class, including the byval aggregates and half values producers
; disagree on.
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%S3 = type { i8, i8, i8 }
%S12 = type { i32, i32, i32 }
@g_i8 = internal addrspace(1) global i8 0
@g_i16 = internal addrspace(1) global i16 0
@g_s3 = internal addrspace(1) global %S3 zeroinitializer
@g_s12 = internal addrspace(1) global %S12 zeroinitializer
@g_h = internal addrspace(1) global half zeroinitializer
define i8 @f_i8(i8 %x) noinline {
  %old = load i8, ptr addrspacecast (ptr addrspace(1) @g_i8 to ptr)
  store i8 %x, ptr addrspacecast (ptr addrspace(1) @g_i8 to ptr)
  ret i8 %old
}
define signext i16 @f_i16(i16 signext %x) noinline {
  %old = load i16, ptr addrspacecast (ptr addrspace(1) @g_i16 to ptr)
  store i16 %x, ptr addrspacecast (ptr addrspace(1) @g_i16 to ptr)
  ret i16 %old
}
define i64 @f_i64(i64 %x, double %y, ptr %p) noinline {
  %f = fptrunc double %y to float
  store float %f, ptr %p
  ret i64 %x
}
define %S3 @f_s3(ptr byval(%S3) align 1 %x) noinline {
  %v = load %S3, ptr %x, align 1
  %old = load %S3, ptr addrspacecast (ptr addrspace(1) @g_s3 to ptr)
  store %S3 %v, ptr addrspacecast (ptr addrspace(1) @g_s3 to ptr)
  ret %S3 %old
}
define %S12 @f_s12(ptr byval(%S12) align 4 %x) noinline {
  %v = load %S12, ptr %x, align 4
  %old = load %S12, ptr addrspacecast (ptr addrspace(1) @g_s12 to ptr)
  store %S12 %v, ptr addrspacecast (ptr addrspace(1) @g_s12 to ptr)
  ret %S12 %old
}
define half @f_half(half %x) noinline {
  %old = load half, ptr addrspacecast (ptr addrspace(1) @g_h to ptr)
  store half %x, ptr addrspacecast (ptr addrspace(1) @g_h to ptr)
  ret half %old
}
define <4 x float> @f_v4f32(<4 x float> %v) noinline {
  ret <4 x float> %v
}
!0 = !{i32 2, i32 0}
