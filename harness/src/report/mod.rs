//! Reports written after a run: `results.json` (every case's status, verdict and clause, the
//! probe, how the run was made, the figures cases measured), the one source the others are
//! rendered from (`formats`): JUnit XML (for CI) and the HTML qualification report; and the
//! commands that work on results sets afterwards (`report`, `diff`, `bundle`, `merge`). Formats: reports/README.md.

pub mod bundle;
pub mod commands;
pub mod diff;
pub mod formats;
pub mod html;
pub mod junit;
pub mod merge;
pub mod plot;
pub mod results;
pub mod run;
pub mod summary;

/// Figures live below the areas that record them (`crate::figures`); reports read them here.
pub use crate::figures;
