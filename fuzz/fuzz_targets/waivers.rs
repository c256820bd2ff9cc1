//! Waiver lists: parse, compile the globs, and match them against an id.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(w) = gpucts::waivers::Waivers::parse(std::path::Path::new("fuzz.yaml"), text) {
        let _ = w.find("abi.params.clang.u8", &Default::default());
    }
});
