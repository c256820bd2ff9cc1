//! gpucts: conformance tests for NVIDIA GPU interoperability (the PTX ABI and GPUDirect RDMA).
//!
//! Layers, top down (each depends only on those below it; `tests/layers.rs` checks there is no
//! cycle): `cli` → `areas` (assembles the spec areas) → `runner` (scheduling, isolation, verdicts)
//! and `report` → the spec areas (`abi`, `xcall`, `syscalls`, `atomics`, `dwarf`, `gpudirect`) →
//! `suite` (YAML model) and `waivers` → the `area` contract → `capability`, `probe`, `outcome`,
//! `ptx`, `cubin` and `backend` (tools, driver, devices). See docs/ARCHITECTURE.md.

#![warn(missing_debug_implementations)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod area;
pub mod areas;
pub mod backend;
pub mod bench;
pub mod capability;
pub mod clauses;
pub mod cli;
pub mod config;
pub mod coverage;
pub mod cubin;
pub mod data;
pub mod figures;
pub mod fuzzing;
pub mod outcome;
pub mod probe;
/// The PTX reader lives in its own crate (`crates/ptx`); this keeps its path `crate::ptx`.
pub use gpucts_ptx as ptx;
pub mod report;
pub mod runner;
pub mod suite;
pub mod testkit;
pub mod vocab;
pub mod waivers;

pub mod abi;
pub mod atomics;
pub mod dwarf;
pub mod gpudirect;
pub mod selftest;
pub mod syscalls;
pub mod xcall;
