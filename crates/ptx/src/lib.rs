//! PTX reading shared by gpucts's areas: a tokenizer ([`lexer`]), the one literal grammar
//! ([`literal`]), directive and prototype parsing ([`module`]), and instruction parsing into
//! opcode, modifiers and operands ([`instr`]).
//!
//! A crate of its own below the harness: it names nothing of gpucts, so the harness, the fuzz
//! targets and other tools can read PTX through it alone. The harness re-exports it as
//! `gpucts::ptx`.

#![warn(missing_debug_implementations)]

pub mod exec;
pub mod instr;
pub mod lexer;
pub mod literal;
pub mod module;
pub mod table;

pub use module::{
    AddressSize, FunctionDecl, FunctionKind, ParamDecl, ParamSpace, PtxError, PtxModule, PtxType,
};
