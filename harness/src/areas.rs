//! The spec areas this binary runs, assembled at the top so that the suite model, the runner and
//! the area contract (`crate::area`) depend on no area (ptx-interop and gpudirect-rdma checks
//! live in the area modules; this file only lists them).
//!
//! Adding an area: a module with a serde `check:` enum implementing [`crate::area::Check`], and
//! one `.with::<…>("name")` line here.

use crate::area::Areas;

/// Every area a suite file may name (`area:`), with the parser for its checks.
pub fn all() -> Areas {
    Areas::new()
        .with::<crate::abi::AbiCheck>("abi")
        .with::<crate::xcall::XcallCheck>("xcall")
        .with::<crate::syscalls::SyscallsCheck>("syscalls")
        .with::<crate::atomics::AtomicsCheck>("atomics")
        .with::<crate::dwarf::DwarfCheck>("dwarf")
        .with::<crate::gpudirect::GpudirectCheck>("gpudirect")
        .with::<crate::selftest::SelftestCheck>("selftest")
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_suite_file_names_an_assembled_area() {
        // The suite files are the independent source: each `area:` they name must be here.
        let areas = super::all();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites");
        let mut seen = 0;
        for e in std::fs::read_dir(&root).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "yaml") {
                let text = std::fs::read_to_string(&p).unwrap();
                let line = text
                    .lines()
                    .find_map(|l| l.strip_prefix("area:"))
                    .unwrap_or_else(|| panic!("{} has no area:", p.display()));
                let name = line.trim().trim_matches('"');
                assert!(areas.parser(name).is_some(), "{}: {name}", p.display());
                seen += 1;
            }
        }
        assert!(seen >= 6, "suites/ holds the area suites");
    }
}
