//! Reading cubins (ELF files from ptxas or nvJitLink) with the `object` and `gimli` crates.

use object::{Object, ObjectSection, ObjectSymbol};

/// A parsed cubin; borrows the bytes.
#[derive(Debug)]
pub(crate) struct Cubin<'a> {
    file: object::File<'a>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SymbolInfo {
    pub size: u64,
    /// Alignment of the section holding the symbol (`sh_addralign`).
    pub section_align: u64,
    pub section: String,
}

/// One row of a line-number program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRow {
    /// The file entry's directory and name.
    pub file: String,
    pub line: u64,
    /// 0: DWARF's "left edge" (no column).
    pub column: u64,
    pub address: u64,
}

impl<'a> Cubin<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Cubin<'a>, CubinError> {
        object::File::parse(bytes)
            .map(|file| Cubin { file })
            .map_err(|e| CubinError::NotElf(e.to_string()))
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

    pub(crate) fn has_function(&self, name: &str) -> bool {
        self.file
            .symbols()
            .any(|s| s.name() == Ok(name) && s.kind() == object::SymbolKind::Text)
    }

    pub(crate) fn section_data(&self, name: &str) -> Option<&'a [u8]> {
        self.file.section_by_name(name).and_then(|s| s.data().ok())
    }

    /// The rows of every line-number program in `.debug_line` (ptxas writes one per module;
    /// a linked cubin may hold several). The cubin's relocations are not applied, so addresses
    /// are section-relative. At most [`MAX_LINE_ROWS`] rows are read (the reader's limit,
    /// checked while reading: `.debug_line` of an untrusted object is attacker data).
    pub(crate) fn line_rows(&self) -> Result<Vec<LineRow>, CubinError> {
        let data = self
            .section_data(".debug_line")
            .ok_or(CubinError::NoDebugLine)?;
        let debug_line = gimli::DebugLine::new(data, gimli::LittleEndian);
        let mut out = Vec::new();
        let mut offset = 0usize;
        while offset < data.len() {
            let bad = |e: gimli::Error| CubinError::LineProgram {
                offset,
                why: e.to_string(),
            };
            let program = debug_line
                .program(gimli::DebugLineOffset(offset), 8, None, None)
                .map_err(bad)?;
            let header = program.header().clone();
            // unit_length excludes its own 4-byte field (DWARF 2 section 6.2.4, 32-bit format).
            let len = header.unit_length().saturating_add(4);
            let mut rows = program.rows();
            while let Some((_, row)) = rows.next_row().map_err(bad)? {
                if out.len() >= MAX_LINE_ROWS {
                    return Err(CubinError::TooManyRows(MAX_LINE_ROWS));
                }
                if row.end_sequence() {
                    continue;
                }
                out.push(LineRow {
                    file: row
                        .file(&header)
                        .map(|f| file_path(f, &header))
                        .unwrap_or_default(),
                    line: row.line().map_or(0, |l| l.get()),
                    column: match row.column() {
                        gimli::ColumnType::LeftEdge => 0,
                        gimli::ColumnType::Column(c) => c.get(),
                    },
                    address: row.address(),
                });
            }
            if len == 4 {
                break;
            }
            offset = offset.saturating_add(len);
        }
        Ok(out)
    }
}

/// The most line-table rows [`Cubin::line_rows`] reads.
pub(crate) const MAX_LINE_ROWS: usize = 10_000_000;

/// Why a cubin or its line table could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CubinError {
    #[error("not a cubin: {0}")]
    NotElf(String),
    #[error("no .debug_line section")]
    NoDebugLine,
    #[error("line program at {offset:#x}: {why}")]
    LineProgram { offset: usize, why: String },
    #[error("more than {0} line rows")]
    TooManyRows(usize),
}

/// A file entry's path: its directory joined to its name unless the name is absolute.
fn file_path<R: gimli::Reader>(
    f: &gimli::FileEntry<R>,
    header: &gimli::LineProgramHeader<R>,
) -> String {
    let text = |v: gimli::AttributeValue<R>| match v {
        gimli::AttributeValue::String(s) => s
            .to_slice()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default(),
        _ => String::new(),
    };
    let name = text(f.path_name());
    match f
        .directory(header)
        .map(text)
        .filter(|d| !d.is_empty() && !name.starts_with('/'))
    {
        Some(d) => format!("{}/{name}", d.trim_end_matches('/')),
        None => name,
    }
}
