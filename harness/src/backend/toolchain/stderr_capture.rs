//! libnvJitLink 12.9 writes some diagnostics straight to the process's standard error (fd 2)
//! rather than to its info or error log: `error : Prototype doesn't match` for a link it then
//! completes (a `.b64` argument against a `.f64` parameter, for instance). A run of the xcall
//! suite would print hundreds of them between the case lines. Links run with fd 2 pointed at a
//! temporary file; those lines are counted (the count comes back with the result, and the
//! toolchain adds it up: `Toolchain::nvjitlink_prototype_lines`) and anything else written
//! meanwhile, by the library or by another thread, is written back to stderr.

use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::sync::Mutex;

/// What nvJitLink writes for a prototype mismatch it tolerates:
/// `error   : Prototype doesn't match for 'f' in 'callee.cubin', first defined in ...`.
fn is_prototype_line(line: &str) -> bool {
    let mut words = line.split_whitespace();
    words.next() == Some("error")
        && words.next() == Some(":")
        && line.contains(": Prototype doesn't match")
}

/// One redirection at a time: fd 2 is a resource of the process, not of a run.
static REDIRECT: Mutex<()> = Mutex::new(());

/// Run `f` with fd 2 redirected to a temporary file; on any failure to redirect, run it
/// with stderr as it is. Returns `f`'s result and how many `Prototype doesn't match` lines
/// were written meanwhile.
pub(crate) fn run_with_stderr_filtered<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let _one = REDIRECT.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(mut file) = tempfile::tempfile() else {
        return (f(), 0);
    };
    let _ = std::io::stderr().flush();
    // SAFETY: dup of fd 2 has no memory-safety preconditions; the result is checked.
    let saved = unsafe { libc::dup(2) };
    if saved < 0 {
        return (f(), 0);
    }
    // SAFETY: both descriptors are open (the temporary file is owned by `file`).
    if unsafe { libc::dup2(file.as_raw_fd(), 2) } < 0 {
        // SAFETY: `saved` came from dup above and is closed once.
        unsafe { libc::close(saved) };
        return (f(), 0);
    }
    let out = f();
    let _ = std::io::stderr().flush();
    // SAFETY: `saved` is the original stderr, still open; it is restored, then closed once.
    unsafe {
        libc::dup2(saved, 2);
        libc::close(saved);
    }
    let mut text = String::new();
    let mut prototype_lines = 0;
    if file.rewind().is_ok() && file.read_to_string(&mut text).is_ok() {
        let mut rest = String::new();
        for line in text.lines() {
            if is_prototype_line(line) {
                prototype_lines += 1;
            } else {
                rest.push_str(line);
                rest.push('\n');
            }
        }
        if !rest.is_empty() {
            eprint!("{rest}");
        }
    }
    (out, prototype_lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the library writes to fd 2 is filtered: the prototype line is counted and not
    /// shown; the function's result comes back.
    #[test]
    fn prototype_lines_are_counted_and_the_rest_kept() {
        let (r, lines) = run_with_stderr_filtered(|| {
            // As libnvJitLink 12.9 writes it (three spaces after `error`).
            let line = b"error   : Prototype doesn't match for 'f' in 'callee.cubin', first defined in 'callee.cubin'\n";
            // SAFETY: writing a byte buffer to fd 2 (the redirected file).
            unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
            7
        });
        assert_eq!((r, lines), (7, 1));
    }
}
