//! The `selftest` area.

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/selftest.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SelftestCheck {}

impl Check for SelftestCheck {
    fn run(&self, _ctx: &CaseContext) -> CaseStatus {
        match *self {}
    }
}
