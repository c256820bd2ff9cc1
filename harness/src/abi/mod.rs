//! The `abi` area.

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/abi.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum AbiCheck {}

impl Check for AbiCheck {
    fn run(&self, _ctx: &CaseContext) -> CaseStatus {
        match *self {}
    }
}

pub mod layout;
pub mod oracle;
pub mod random;
pub mod types;
