//! PTX reading shared by the areas: a tokenizer, directive and prototype parsing, and
//! instruction parsing into opcode and modifiers.

pub mod instr;
pub mod lexer;
pub mod literal;
pub mod module;

pub use module::{
    AddressSize, FunctionDecl, FunctionKind, ParamDecl, ParamSpace, PtxError, PtxModule, PtxType,
};
