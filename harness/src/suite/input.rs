//! Reading hand-written input with its limits checked lives in its own crate
//! (`crates/input`); this keeps its path `suite::input` for the readers of the harness.

#[allow(unused_imports)]
pub(crate) use gpucts_input::MAX_INPUT_BYTES;
pub(crate) use gpucts_input::{decode, normalize_line_ends, read_text};
