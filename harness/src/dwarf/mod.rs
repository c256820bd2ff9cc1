//! The `dwarf` area.

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/dwarf.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DwarfCheck {}

impl Check for DwarfCheck {
    fn run(&self, _ctx: &CaseContext) -> CaseStatus {
        match *self {}
    }
}
