//! `gpucts bench AREA`: throughput figures, or with `--results DIR` the curves recorded as a
//! results set.

use std::path::Path;

use super::{error, BenchArea, EXIT_OK, EXIT_USAGE};
use crate::backend::toolchain::{ToolSettings, Toolchain};
use crate::config::RunConfig;
use crate::report;

/// `gpucts bench AREA --results DIR`: measure the area's curves and write them as a results
/// set (`crate::bench`); exit 2 when DIR cannot be written.
pub(super) fn bench_record(
    area: BenchArea,
    count: usize,
    reps: Option<usize>,
    dir: &Path,
    config: &RunConfig,
    tools: &ToolSettings,
    data: &crate::data::DataRoot,
) -> i32 {
    let reps = match crate::bench::check_reps(reps.unwrap_or(5)) {
        Ok(r) => r,
        Err(e) => {
            error(e);
            return EXIT_USAGE;
        }
    };
    let root = data.path.clone();
    let paths = match report::run::prepare(Some(&dir.join("junit.xml")), &root, "bench") {
        Ok(p) => p,
        Err(e) => {
            error(e);
            return EXIT_USAGE;
        }
    };
    let started = time::OffsetDateTime::now_utc();
    let tc = Toolchain::discover_with(tools.clone());
    let (probe, caps) = crate::probe::probe_for(&tc, &config.device);
    let fingerprint = probe.fingerprint();
    let o = crate::bench::Options { reps, count };
    let all = area == BenchArea::All;
    let mut blocks = Vec::new();
    if all || area == BenchArea::Abi {
        blocks.extend(crate::bench::abi(&tc, &caps, o));
    }
    if all || area == BenchArea::Lint {
        blocks.extend(crate::bench::lint(&root, o));
    }
    if all || area == BenchArea::Xcall {
        blocks.extend(crate::bench::xcall(o));
    }
    if all || area == BenchArea::Atomics {
        blocks.extend(crate::bench::atomics(o, &config.device, tools));
    }
    if all || area == BenchArea::Gpudirect {
        blocks.extend(crate::gpudirect::bench::blocks(reps.max(3), config));
    }
    for b in &blocks {
        print!("{}", b.text);
    }
    let results: Vec<_> = blocks.iter().map(crate::bench::case_result).collect();
    let mut record = report::run::RunRecord::new(
        &root,
        &[],
        &[],
        &[],
        serde_json::to_value(&probe).ok(),
        started,
    );
    record.run.wall_s = blocks.iter().map(|b| b.secs).sum();
    let written = report::run::write(&results, &fingerprint, &paths, &mut record);
    for e in &written.errors {
        error(e);
    }
    if let Some(p) = written.path("results") {
        println!("JSON results: {}", p.display());
    }
    if let Some(p) = written.path("html") {
        println!("HTML report: {}", p.display());
    }
    let figures: usize = blocks.iter().map(|b| b.figures.len()).sum();
    let skipped = blocks.iter().filter(|b| b.skipped.is_some()).count();
    println!(
        "gpucts bench: {} measured, {skipped} skipped, {figures} figures",
        blocks.len() - skipped
    );
    if written.errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_USAGE
    }
}

/// A toolchain that answers nothing from the disk cache of tool runs: a bench measures tools.
fn cold(tools: &ToolSettings) -> Toolchain {
    Toolchain::discover_with(ToolSettings {
        output_cache: false,
        ..tools.clone()
    })
}

pub(super) fn bench(
    area: BenchArea,
    count: usize,
    config: &RunConfig,
    tools: &ToolSettings,
    data: &crate::data::DataRoot,
) -> i32 {
    let tc = Toolchain::discover_with(tools.clone());
    match area {
        BenchArea::All => return EXIT_USAGE,
        BenchArea::Gpudirect => {
            print!("{}", crate::gpudirect::bench::run(count, config));
        }
        BenchArea::Lint => {
            print!(
                "{}",
                crate::abi::lint_corpus::bench(&tc, &data.path.join("ptx-corpus"))
            );
        }
        BenchArea::Abi => {
            println!("abi: random types verified per second, {count} types, one compilation per {} types", crate::abi::oracle::BATCH);
            print!("{}", crate::abi::oracle::bench(&tc, count));
        }
        // The tools' rate: no output answered from the disk cache of tool runs.
        BenchArea::Xcall => print!("{}", crate::xcall::bench(&cold(tools))),
        BenchArea::Atomics => {
            use crate::atomics::{catalog, mapping, model};
            let tests = catalog::catalog();
            let t0 = std::time::Instant::now();
            let mut candidates = 0usize;
            for t in &tests {
                candidates += model::check(t).candidates;
            }
            let secs = t0.elapsed().as_secs_f64();
            println!(
                "model: {} catalogue tests in {secs:.3} s = {:.0} tests/s ({candidates} candidate executions, {:.0}/s)",
                tests.len(),
                tests.len() as f64 / secs,
                candidates as f64 / secs
            );
            print!("{}", crate::atomics::corpus::bench(data));
            for producer in mapping::source::producers() {
                let cases = mapping::source::cases_for(producer);
                let t0 = std::time::Instant::now();
                let verdicts = mapping::run_batch(&cold(tools), producer, &cases);
                let secs = t0.elapsed().as_secs_f64();
                let conform = verdicts.iter().filter(|(_, v)| v.is_conforming()).count();
                println!(
                    "mapping {:<6} {} cases in {secs:.2} s = {:.0} cases/s ({conform} conform)",
                    producer.name(),
                    cases.len(),
                    cases.len() as f64 / secs
                );
            }
        }
    }
    EXIT_OK
}
