//! The `abi` area: data representation (ptx-interop 13.2 ch. 1) and parameter passing (§2.3).

mod fundamental;

pub mod lint;
pub mod paramgen;

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::capability::Capability;
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/abi.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum AbiCheck {
    /// A §1.1 table row: ptxas must place a global of `ptx_type` with this size and alignment.
    FundamentalType {
        ptx_type: String,
        size: u64,
        align: u64,
    },
}

impl Check for AbiCheck {
    fn requires(&self) -> Vec<Capability> {
        match self {
            AbiCheck::FundamentalType { .. } => vec![Capability::Ptxas],
        }
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        match self {
            AbiCheck::FundamentalType {
                ptx_type,
                size,
                align,
            } => fundamental::check(ctx, ptx_type, *size, *align),
        }
    }
}

pub mod layout;
pub mod oracle;
pub mod random;
pub mod types;
