//! The PTX memory model's verdict on a litmus test: a YAML or Dat3M `.litmus` file, or the
//! message-passing test below when no file is named.
//!
//! ```text
//! cargo run -p gpucts-litmus --example check [FILE]
//! ```

use gpucts_litmus::model::{report, try_check};

/// Message passing with a release store and an acquire load at `.gpu` scope across two CTAs:
/// the weak outcome (flag seen, data not) is forbidden.
const MP: &str = "\
name: MP.rel_acq.gpu
threads:
  - cta: 0
    ops:
      - st: {loc: data, val: 42, sem: relaxed, scope: gpu}
      - st: {loc: flag, val: 1, sem: release, scope: gpu}
  - cta: 1
    ops:
      - ld: {reg: r0, loc: flag, sem: acquire, scope: gpu}
      - ld: {reg: r1, loc: data, sem: relaxed, scope: gpu}
condition: 'exists (P1:r0 == 1 /\\ P1:r1 == 0)'
";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let test = match std::env::args_os().nth(1) {
        Some(file) => gpucts_litmus::load_file(std::path::Path::new(&file))?,
        None => gpucts_litmus::from_yaml(MP)?,
    };
    // The same test in Dat3M's syntax, as `gpucts litmus export` writes it.
    println!("{}", gpucts_litmus::export_dat3m(&test));
    let verdict = try_check(&test)?;
    print!("{}", report(&test, &verdict));
    Ok(())
}
