//! Suite YAML: any bytes give cases or `file:line:column` errors, never a panic or a hang.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let areas = gpucts::areas::all();
    // A small expansion limit keeps each input cheap; the limit itself is what is tested.
    let limits = gpucts::suite::Limits {
        max_cases_per_entry: 1000,
    };
    let _ = gpucts::suite::load_bytes(std::path::Path::new("fuzz.yaml"), data, &areas, &limits);
});
