//! gpucts's own PTX emitter: the area writes the §2.3 table literally (the reference
//! producer); "compiling" sets the `.target` the area asked for.

use super::{Language, ProducerDef, Source};
use crate::backend::toolchain::{ToolError, Toolchain};

pub(crate) static DEF: ProducerDef = ProducerDef {
    name: "gpucts",
    aliases: &["reference"],
    describe: "gpucts reference PTX emitter (ptx-interop 13.2 §2.3 table)",
    tool: "gpucts",
    capability: None,
    also_requires: &[],
    accepts: &[Language::Ptx],
    hand_written: false,
    // PTX function calls need sm_20 (ptx-interop 13.2 ch. 2).
    oldest_target: "sm_20",
    version: |_, _| Some(format!("gpucts {}", env!("CARGO_PKG_VERSION"))),
    compile,
    extra_tool: None,
    user: None,
};

/// The emitter writes `.target sm_90`; the same PTX for another target.
fn compile(_: &Toolchain, src: &Source<'_>) -> Result<String, ToolError> {
    Ok(src
        .text
        .replace(".target sm_90\n", &format!(".target {}\n", src.arch)))
}
