//! The `atomics` area.

pub mod catalog;
pub mod litmus;
pub mod model;

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/atomics.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum AtomicsCheck {}

impl Check for AtomicsCheck {
    fn run(&self, _ctx: &CaseContext) -> CaseStatus {
        match *self {}
    }
}
