//! The DWARF of an ELF object (a cubin from ptxas or nvJitLink): the sections, and the
//! relocations of `.debug_info` as [`Target`]s, each symbol with the state space of the section
//! that holds it (`.nv.global` → `.global`, `.nv.shared.*` → `.shared`, ...).

use std::collections::{BTreeMap, HashMap};

use object::{Object, ObjectSection, ObjectSymbol};

use super::ptxscan::AddressClass;
use super::read::{Sections, Target};

/// `EM_CUDA` (ELF machine 190).
pub(crate) const EM_CUDA: u16 = 190;

/// Why an ELF file cannot be checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ElfError {
    #[error("offset 0: not an ELF file: {0}")]
    NotElf(String),
    #[error("offset 18: e_machine {0} is not EM_CUDA (190): a cubin of another machine")]
    OtherMachine(u16),
}

/// A parsed CUDA ELF and its symbols by name.
#[derive(Debug)]
pub(crate) struct Elf<'a> {
    pub file: object::File<'a>,
    /// Function symbols.
    pub functions: Vec<String>,
    /// Data symbols and their state space.
    pub variables: HashMap<String, (AddressClass, u64)>,
}

/// The state space an ELF section name stands for.
pub(crate) fn section_space(name: &str) -> Option<AddressClass> {
    Some(if name.starts_with(".text") {
        AddressClass::Code
    } else if name.starts_with(".nv.global") {
        AddressClass::Global
    } else if name.starts_with(".nv.shared") {
        AddressClass::Shared
    } else if name.starts_with(".nv.constant") {
        AddressClass::Const
    } else if name.starts_with(".nv.local") {
        AddressClass::Local
    } else {
        return None;
    })
}

impl<'a> Elf<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Elf<'a>, ElfError> {
        if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
            return Err(ElfError::NotElf("no \\x7fELF magic".into()));
        }
        let machine = u16::from_le_bytes([bytes[18], bytes[19]]);
        if bytes[5] != 1 || machine != EM_CUDA {
            return Err(ElfError::OtherMachine(if bytes[5] == 1 {
                machine
            } else {
                u16::from_be_bytes([bytes[18], bytes[19]])
            }));
        }
        let file = object::File::parse(bytes).map_err(|e| ElfError::NotElf(e.to_string()))?;
        let mut functions = Vec::new();
        let mut variables = HashMap::new();
        for s in file.symbols() {
            let Ok(name) = s.name() else { continue };
            if name.is_empty() {
                continue;
            }
            let sec = s
                .section_index()
                .and_then(|i| file.section_by_index(i).ok())
                .and_then(|x| x.name().ok().map(str::to_string))
                .unwrap_or_default();
            if s.kind() == object::SymbolKind::Text {
                functions.push(name.to_string());
            } else if s.kind() == object::SymbolKind::Data {
                if let Some(sp) = section_space(&sec) {
                    variables.insert(name.to_string(), (sp, s.address()));
                }
            }
        }
        Ok(Elf {
            file,
            functions,
            variables,
        })
    }

    pub fn section(&self, name: &str) -> Option<&'a [u8]> {
        self.file.section_by_name(name).and_then(|s| s.data().ok())
    }

    /// `.debug_info`, `.debug_abbrev`, `.debug_str` and the relocations of `.debug_info`.
    pub(crate) fn sections(&self) -> Sections<'a> {
        let mut refs = BTreeMap::new();
        if let Some(info) = self.file.section_by_name(".debug_info") {
            for (off, r) in info.relocations() {
                let object::RelocationTarget::Symbol(si) = r.target() else {
                    continue;
                };
                let Ok(sym) = self.file.symbol_by_index(si) else {
                    continue;
                };
                let name = sym.name().unwrap_or("").to_string();
                let sec = sym
                    .section_index()
                    .and_then(|i| self.file.section_by_index(i).ok())
                    .and_then(|x| x.name().ok().map(str::to_string))
                    .unwrap_or_default();
                let space = if sym.kind() == object::SymbolKind::Text {
                    Some(AddressClass::Code)
                } else {
                    section_space(&sec)
                };
                refs.insert(
                    off as usize,
                    Target {
                        name,
                        addend: r.addend(),
                        space,
                        section: sym.kind() == object::SymbolKind::Section,
                    },
                );
            }
        }
        Sections {
            info: self.section(".debug_info").unwrap_or(&[]),
            abbrev: self.section(".debug_abbrev").unwrap_or(&[]),
            str: self.section(".debug_str").unwrap_or(&[]),
            refs,
        }
    }
}
