//! The PTX instruction reader (public API of `ptx::instr` only): one statement, and the bodies
//! of the functions a text declares.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = gpucts::ptx::instr::parse_instruction(text, 1);
    for name in gpucts::ptx::instr::function_names(text).iter().take(8) {
        let _ = gpucts::ptx::instr::function_body(text, name);
    }
});
