//! Reading cubins (ELF files from ptxas or nvJitLink) with the `object` and `gimli` crates.

use object::{Object, ObjectSection, ObjectSymbol};

/// A parsed cubin; borrows the bytes.
#[derive(Debug)]
pub struct Cubin<'a> {
    file: object::File<'a>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolInfo {
    pub size: u64,
    /// Alignment of the section holding the symbol (`sh_addralign`).
    pub section_align: u64,
    pub section: String,
}

/// One row of a line-number program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRow {
    pub file: String,
    pub line: u64,
    pub address: u64,
}

impl<'a> Cubin<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Cubin<'a>, String> {
        object::File::parse(bytes)
            .map(|file| Cubin { file })
            .map_err(|e| format!("not a cubin: {e}"))
    }

    pub fn symbol(&self, name: &str) -> Option<SymbolInfo> {
        let sym = self.file.symbols().find(|s| s.name() == Ok(name))?;
        let section = sym
            .section_index()
            .and_then(|i| self.file.section_by_index(i).ok());
        Some(SymbolInfo {
            size: sym.size(),
            section_align: section.as_ref().map(|s| s.align()).unwrap_or(0),
            section: section
                .and_then(|s| s.name().ok().map(str::to_string))
                .unwrap_or_default(),
        })
    }

    pub fn has_function(&self, name: &str) -> bool {
        self.file
            .symbols()
            .any(|s| s.name() == Ok(name) && s.kind() == object::SymbolKind::Text)
    }

    pub fn section_data(&self, name: &str) -> Option<&'a [u8]> {
        self.file.section_by_name(name).and_then(|s| s.data().ok())
    }

    /// The rows of the first line-number program in `.debug_line` (ptxas writes one per
    /// module). The cubin's relocations are not applied, so addresses are section-relative.
    pub fn line_rows(&self) -> Result<Vec<LineRow>, String> {
        let data = self
            .section_data(".debug_line")
            .ok_or("the cubin has no .debug_line section")?;
        let endian = gimli::LittleEndian;
        let debug_line = gimli::DebugLine::new(data, endian);
        let program = debug_line
            .program(gimli::DebugLineOffset(0), 8, None, None)
            .map_err(|e| format!("cannot read .debug_line header: {e}"))?;
        let header = program.header().clone();
        let mut rows = program.rows();
        let mut out = Vec::new();
        while let Some((_, row)) = rows
            .next_row()
            .map_err(|e| format!("bad .debug_line program: {e}"))?
        {
            if row.end_sequence() {
                continue;
            }
            let file = row
                .file(&header)
                .and_then(|f| match f.path_name() {
                    gimli::AttributeValue::String(s) => {
                        Some(String::from_utf8_lossy(s.slice()).into_owned())
                    }
                    _ => None,
                })
                .unwrap_or_default();
            out.push(LineRow {
                file,
                line: row.line().map(|l| l.get()).unwrap_or(0),
                address: row.address(),
            });
        }
        Ok(out)
    }
}
