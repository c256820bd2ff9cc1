//! `dwarf check` input: PTX text or ELF bytes (no toolchain: the in-process checks only).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = gpucts::dwarf::check::check_bytes("fuzz", data, None);
});
