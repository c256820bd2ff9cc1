//! gpucts: conformance tests for NVIDIA GPU interoperability (the PTX ABI and GPUDirect RDMA).
//!
//! Layers, bottom up: `capability` and `backend` (tools, driver, devices) → `suite` (YAML model)
//! → the spec areas (`abi`, `xcall`, `syscalls`, `atomics`, `dwarf`, `gpudirect`) behind the
//! `area` contract → `runner` (scheduling, isolation) → `report` (console, JUnit) → `cli`.

pub mod area;
pub mod backend;
pub mod capability;
pub mod cli;
pub mod cubin;
pub mod outcome;
pub mod probe;
pub mod ptx;
pub mod report;
pub mod runner;
pub mod suite;
pub mod testkit;
pub mod waivers;

pub mod abi;
pub mod atomics;
pub mod dwarf;
pub mod gpudirect;
pub mod selftest;
pub mod syscalls;
pub mod xcall;
