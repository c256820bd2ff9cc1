//! Dat3M `.litmus` tests: import, and `export` re-imports to the same test (issue 10: the
//! export wrote names its own import rejected).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = gpucts::atomics::litmus::dat3m::import(text) {
        let out = gpucts::atomics::litmus::dat3m::export(&t);
        match gpucts::atomics::litmus::dat3m::import(&out) {
            Ok(again) => assert_eq!(
                gpucts::atomics::litmus::dat3m::export(&again),
                out,
                "export | import | export is stable"
            ),
            Err(e) => panic!("export wrote a test import rejects: {e}\n{out}"),
        }
    }
});
