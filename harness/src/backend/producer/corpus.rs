//! Hand-written PTX in `ptx-corpus/`, each file with its provenance: nothing is compiled, the
//! area reads the files.

use super::{ProducerDef, Source};
use crate::backend::toolchain::{ToolError, Toolchain};

pub(crate) static DEF: ProducerDef = ProducerDef {
    name: "corpus",
    aliases: &["hand"],
    describe: "hand-written PTX (ptx-corpus/)",
    tool: "ptx-corpus",
    capability: None,
    also_requires: &[],
    accepts: &[],
    hand_written: true,
    // The corpus declares `.target sm_50`.
    oldest_target: "sm_50",
    version: |_, _| Some("hand-written".to_string()),
    compile,
    extra_tool: None,
    user: None,
};

fn compile(_: &Toolchain, _: &Source<'_>) -> Result<String, ToolError> {
    Err(ToolError::Failed {
        tool: "corpus".into(),
        log: "hand-written PTX is read from ptx-corpus/, not compiled".into(),
    })
}
