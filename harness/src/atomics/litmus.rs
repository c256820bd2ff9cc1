//! Litmus tests live in their own crate (`crates/litmus`: the language, YAML and Dat3M forms,
//! conditions, validation); this keeps their path `atomics::litmus` for the harness.

pub use gpucts_litmus::*;

#[cfg(test)]
mod example_files;
#[cfg(test)]
mod tests;
