//! Reading a hand-written input file (a suite, a waiver list, a type description, a litmus
//! test) with its limits checked before the work starts, and YAML read the same way by every
//! reader. Errors always say where: [`InputError`] displays as `file:line:column: message`
//! (`file: message` when the problem is the whole file).
//!
//! ```
//! #[derive(Debug, serde::Deserialize)]
//! #[serde(deny_unknown_fields)]
//! struct Case { id: String }
//! let case: Case = gpucts_input::from_yaml("id: abi.one\n").unwrap();
//! assert_eq!(case.id, "abi.one");
//! // A misspelt key is an error at its line and column, in the file's terms.
//! let (line, column, message) = gpucts_input::from_yaml::<Case>("idd: x\n").unwrap_err();
//! assert_eq!((line, column), (1, 1));
//! assert!(message.contains("unknown key"), "{message}");
//! ```

use std::fmt;
use std::path::PathBuf;

mod text;
mod yaml;

pub use text::{decode, normalize_line_ends, read_text, read_text_limited, MAX_INPUT_BYTES};
pub use yaml::{bare_message, explain, from_yaml, yaml_options};

/// An input problem, always with the place it was found (line and column are 1-based; line 0
/// means the whole file).
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file.display(),
                self.line,
                self.column,
                self.message
            )
        }
    }
}

impl std::error::Error for InputError {}
