//! `gpucts::fuzzing::producer_file` under libFuzzer (the body is in the library, where the
//! bounded mutation test in `cargo test`, harness/tests/fuzz_smoke.rs, runs it too).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gpucts::fuzzing::producer_file(data));
