//! Litmus tests in YAML: parse, validate, and check against the model (its state-space guard
//! must refuse what it cannot finish).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = gpucts::atomics::litmus::from_yaml(text) {
        let _ = gpucts::atomics::model::try_check(&t);
    }
});
