//! PTX reading shared by the areas: a tokenizer, directive and prototype parsing, and
//! instruction parsing into opcode and modifiers.
pub mod instr;
