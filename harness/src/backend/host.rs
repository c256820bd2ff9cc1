//! The host platform's part of a producer's output. ptx-interop 13.2 §1.1 leaves the sizes of
//! types to the host ("pointer size and long int size are dictated by the host's ABI") and
//! records the host in every object; plain `char`'s signedness is the host's too (C11 6.2.5p15
//! makes it implementation-defined, and the psABIs define it). Measured: clang-19's CUDA device
//! code passes `char` `signext` for an x86_64 host and `zeroext` for an aarch64 host, and
//! NVRTC 12.9's aarch64 build (the sbsa wheel) zero-extends it (ci/aarch64).

/// The host this gpucts runs on (`std::env::consts::ARCH`): NVRTC and libNVVM are loaded into
/// this process, so their output is this host's, as is a compiler run here.
pub const ARCH: &str = std::env::consts::ARCH;

/// Whether plain `char` is signed on Linux hosts of architecture `arch` (Rust's spelling):
/// signed on x86 (System V i386 and x86-64 psABIs), unsigned on Arm (AAPCS, AAPCS64),
/// POWER (ELFv1/v2), RISC-V and s390x.
pub fn plain_char_signed(arch: &str) -> bool {
    !matches!(
        arch,
        "aarch64" | "arm" | "powerpc" | "powerpc64" | "riscv32" | "riscv64" | "s390x"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rust's `c_char` is the target's C `char` (i8 where it is signed, u8 where it is not),
    /// set per target by Rust's own ABI definitions: an independent source for this host.
    #[test]
    fn this_host_s_plain_char_is_rust_s_c_char() {
        assert_eq!(plain_char_signed(ARCH), std::ffi::c_char::MIN != 0);
    }

    #[test]
    fn the_psabis_of_the_hosts_users_have() {
        assert!(plain_char_signed("x86_64"));
        assert!(plain_char_signed("x86"));
        assert!(!plain_char_signed("aarch64"));
        assert!(!plain_char_signed("powerpc64"));
    }
}
