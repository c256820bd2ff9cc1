//! Reading a hand-written input file with
//! its limits checked before the work: only regular files are opened (a FIFO or `/dev/zero`
//! would never end), the size is checked against a limit before and while reading, text must be
//! UTF-8 (an invalid byte is reported at its line and column), and line ends are normalised so
//! that a file with CR-only line ends (YAML 1.2 §5.4 counts CR, LF and CRLF as line breaks)
//! gets the same line numbers as one with LF.

use std::io::Read;
use std::path::Path;

use crate::InputError;

/// The largest input file read (16 MiB: the shipped suites are under 100 KiB; a larger file is
/// almost certainly not a hand-written suite).
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

fn err(path: &Path, line: u64, column: u64, message: String) -> InputError {
    InputError {
        file: path.to_path_buf(),
        line,
        column,
        message,
    }
}

/// Read `path` as text under [`MAX_INPUT_BYTES`].
pub fn read_text(path: &Path) -> Result<String, InputError> {
    read_text_limited(path, MAX_INPUT_BYTES)
}

/// Read `path` as text, refusing anything but a regular file of at most `limit` bytes.
pub fn read_text_limited(path: &Path, limit: u64) -> Result<String, InputError> {
    // `metadata` follows symbolic links and does not open the file, so a FIFO is refused
    // before `open` could block on it.
    let meta = std::fs::metadata(path).map_err(|e| err(path, 0, 0, format!("cannot read: {e}")))?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a device, FIFO or socket)"
        };
        return Err(err(
            path,
            0,
            0,
            format!("cannot read: {kind}; only regular files are read"),
        ));
    }
    let too_big = |n: u64| {
        err(
            path,
            0,
            0,
            format!("file is {n} bytes; at most {limit} bytes are read"),
        )
    };
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    let file =
        std::fs::File::open(path).map_err(|e| err(path, 0, 0, format!("cannot read: {e}")))?;
    // The file may grow between `metadata` and the read: read at most one byte past the limit.
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| err(path, 0, 0, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(err(
            path,
            0,
            0,
            format!("file is over {limit} bytes; at most {limit} bytes are read"),
        ));
    }
    decode(path, &bytes)
}

/// Bytes → text: UTF-8 (else an error at the line and column of the first invalid byte), a
/// leading byte-order mark dropped, and CRLF and lone CR line ends turned into LF.
pub fn decode(path: &Path, bytes: &[u8]) -> Result<String, InputError> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let (line, column) = position_of_end(good);
            return Err(err(
                path,
                line,
                column,
                format!(
                    "byte 0x{:02x} (offset {}) is not UTF-8; the file must be UTF-8 text",
                    bytes[e.valid_up_to()],
                    e.valid_up_to()
                ),
            ));
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    Ok(normalize_line_ends(text))
}

/// CRLF → LF and a lone CR → LF (YAML 1.2 §5.4: all three are line breaks).
pub fn normalize_line_ends(text: &str) -> String {
    if !text.contains('\r') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

/// The 1-based line and column just after `good` (valid UTF-8 up to there), counting CR, LF and
/// CRLF as one line end each and columns in characters.
fn position_of_end(good: &[u8]) -> (u64, u64) {
    let text = std::str::from_utf8(good).unwrap_or("");
    let text = normalize_line_ends(text);
    let line = text.matches('\n').count() as u64 + 1;
    let last = text.rsplit('\n').next().unwrap_or("");
    (line, last.chars().count() as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_reported_at_its_line_and_column() {
        // Issue 10: non-UTF-8 input got no position. `é` in Latin-1 (0xe9) on line 3, col 7.
        let bytes = b"area: abi\ncases:\n  - id\xe9: x\n";
        let e = decode(Path::new("s.yaml"), bytes).unwrap_err();
        assert_eq!((e.line, e.column), (3, 7), "{e}");
        assert!(e.to_string().starts_with("s.yaml:3:7: byte 0xe9"), "{e}");
    }

    #[test]
    fn cr_only_line_ends_count_as_lines() {
        assert_eq!(normalize_line_ends("a\rb\r\nc\n"), "a\nb\nc\n");
        let e = decode(Path::new("x"), b"a\rb\r\xff").unwrap_err();
        assert_eq!((e.line, e.column), (3, 1));
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_before_reading() {
        for p in ["/dev/zero", "/dev/null", "/"] {
            let e = read_text(Path::new(p)).unwrap_err();
            assert!(
                e.message.contains("only regular files are read"),
                "{p}: {e}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(rc, 0);
        let t0 = std::time::Instant::now();
        let e = read_text(&fifo).unwrap_err();
        assert!(e.message.contains("only regular files"), "{e}");
        assert!(t0.elapsed().as_secs() < 2);
    }

    #[test]
    fn the_size_limit_is_checked_with_both_figures() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.yaml");
        std::fs::write(&p, vec![b'#'; 101]).unwrap();
        let e = read_text_limited(&p, 100).unwrap_err();
        assert!(
            e.message.contains("101 bytes") && e.message.contains("at most 100"),
            "{e}"
        );
        assert_eq!(read_text_limited(&p, 101).unwrap().len(), 101);
    }
}
