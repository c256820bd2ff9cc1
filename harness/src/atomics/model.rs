//! The PTX memory model's checker lives in the litmus crate (`gpucts_litmus::model`); this
//! keeps its path `atomics::model` for the harness.

pub use gpucts_litmus::model::*;

#[cfg(test)]
mod corpus;
