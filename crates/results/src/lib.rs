//! The `results.json` schema of gpucts, as its own crate (as nextest-metadata is to
//! cargo-nextest): what a run stores per case (status, verdict, waiver, attempts), how the
//! run was made, the figures it measured, and the versioned reader with its limits.
//!
//! The harness writes these types and renders every report (JUnit, HTML, summaries, diffs,
//! fleet merges) from them alone; another tool reads a results set with [`load`] and no part
//! of the harness. A skip names its capability through a type parameter that defaults to
//! `String`, so a reader needs no knowledge of the harness's capability list.

pub mod figure;
pub mod results;
pub mod status;
pub mod teeth;

pub use figure::{Better, Bin, Figure, Point, Spread};
pub use results::{
    group_verdict, load, parse, Counts, HashedFile, NodeInfo, ReadError, Results, RunInfo,
    StoredCase, VerdictName, WaiverRecord, MAX_CASES, MAX_RESULTS_BYTES, OLDEST_SCHEMA,
    SCHEMA_VERSION,
};
pub use status::{
    CaseStatus, ControlRun, DeviceCapability, COMPILED_ONLY, CONTROL_WITHOUT_WEAK_OUTCOMES,
    OBSERVATION,
};
