//! The `xcall` area.

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/xcall.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum XcallCheck {}

impl Check for XcallCheck {
    fn run(&self, _ctx: &CaseContext) -> CaseStatus {
        match *self {}
    }
}
