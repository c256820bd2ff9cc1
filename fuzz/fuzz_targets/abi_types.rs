//! ABI type descriptions (`abi layout`): parse, then lay out every record.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = gpucts::abi::layout::layout_text_json(text, "fuzz.yaml");
});
