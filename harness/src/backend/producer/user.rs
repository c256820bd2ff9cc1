//! Producers a user describes in a file (`--producer-file FILE`): a compiler gpucts does not
//! know, run as a command line on the sources the areas write, and judged like a built-in
//! producer in every suite entry that takes user producers (`user_producers:`). ptx-interop
//! 13.2 §2.3 binds every generator of PTX; this is how one gpucts has never heard of is held
//! to it without a rebuild.
//!
//! ```yaml
//! producers:
//!   - name: clang-o3                 # a producer id: [a-z0-9-], not a built-in name
//!     language: c                    # cuda | cuda-no-headers | c | llvm-ir | nvvm-ir
//!     command: [clang-19, --target=nvptx64-nvidia-cuda, "-march={arch}", -O3, -S,
//!               -o, "{output}", "{input}"]
//!     version: [clang-19, --version] # its first line is the producer's version
//! ```
//!
//! `{input}` is a file holding the source (`.cu`, `.c` or `.ll` by language), `{output}` the
//! PTX file the command writes, `{arch}` the target (`sm_90`), `{compute}` its `compute_90`
//! spelling. The areas' own tool options are not passed: the command says everything (keep
//! external functions: NVRTC's and nvcc's `-rdc=true`). The version command runs once when
//! the file is read; one that does not run is an error there, before any case.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde::Deserialize;

use super::{Language, ProducerDef, Source};
use crate::backend::toolchain::{process, ToolError, Toolchain};

/// The most producers one run takes from files (each is a case axis value in every entry that
/// takes them).
pub const MAX_PRODUCERS: usize = 16;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProducerFile {
    producers: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    language: UserLanguage,
    command: Vec<String>,
    version: Vec<String>,
}

/// The languages a user producer may read: those the areas write that a compiler gpucts does
/// not ship might read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum UserLanguage {
    /// CUDA C++ with CUDA's built-in declarations (NVRTC's and nvcc's dialect).
    Cuda,
    /// CUDA device C++ that declares what it uses (clang's `-nocudainc` dialect).
    CudaNoHeaders,
    /// C for `nvptx64-nvidia-cuda`.
    C,
    /// LLVM IR of LLVM 19 (opaque pointers).
    LlvmIr,
    /// NVVM IR (LLVM 7 typed pointers, libNVVM's dialect).
    NvvmIr,
}

impl UserLanguage {
    fn language(self) -> Language {
        match self {
            UserLanguage::Cuda => Language::CudaCpp,
            UserLanguage::CudaNoHeaders => Language::ClangCuda,
            UserLanguage::C => Language::C,
            UserLanguage::LlvmIr => Language::LlvmIr,
            UserLanguage::NvvmIr => Language::NvvmIr,
        }
    }

    /// The input file's extension.
    fn extension(self) -> &'static str {
        match self {
            UserLanguage::Cuda | UserLanguage::CudaNoHeaders => "cu",
            UserLanguage::C => "c",
            UserLanguage::LlvmIr | UserLanguage::NvvmIr => "ll",
        }
    }
}

/// What runs a user producer.
#[derive(Debug)]
pub struct UserCommand {
    /// The file it was described in, for messages.
    pub file: PathBuf,
    language: UserLanguage,
    command: Vec<String>,
    /// The first line its version command printed.
    pub version: String,
}

/// The producers read from files, and the files (isolated cases' children read them again).
static USER: OnceLock<(Vec<&'static ProducerDef>, Vec<PathBuf>)> = OnceLock::new();

/// The user producers registered in this process.
pub(super) fn registered() -> &'static [&'static ProducerDef] {
    USER.get().map_or(&[], |(defs, _)| defs)
}

/// The files the user producers came from.
pub fn files() -> &'static [PathBuf] {
    USER.get().map_or(&[], |(_, files)| files)
}

/// Why a producer file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProducerFileError {
    #[error(transparent)]
    Input(#[from] gpucts_input::InputError),
    #[error("producers from files are registered once per run, before any case is read")]
    AlreadyRegistered,
}

fn at(file: &Path, line: u64, column: u64, message: String) -> gpucts_input::InputError {
    gpucts_input::InputError {
        file: file.to_path_buf(),
        line,
        column,
        message,
    }
}

/// Read and check `files` and register their producers for this process: names unique and
/// not built-in, commands with `{input}` and `{output}`, version commands that run. Call once,
/// before anything asks for producers.
pub fn register(files: &[PathBuf]) -> Result<(), ProducerFileError> {
    let mut defs: Vec<&'static ProducerDef> = Vec::new();
    for file in files {
        for def in read(file, &defs)? {
            defs.push(def);
        }
    }
    if super::Producer::in_use() {
        return Err(ProducerFileError::AlreadyRegistered);
    }
    // Children (isolated cases) read the same files from wherever they start.
    let absolute = files
        .iter()
        .map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
        .collect();
    USER.set((defs, absolute))
        .map_err(|_| ProducerFileError::AlreadyRegistered)
}

/// The producers one file describes, checked against the built-in ones and `earlier`, each
/// with the first line of its version command.
fn read(
    file: &Path,
    earlier: &[&'static ProducerDef],
) -> Result<Vec<&'static ProducerDef>, gpucts_input::InputError> {
    let text = gpucts_input::read_text(file)?;
    let taken: Vec<&str> = earlier.iter().map(|d| d.name).collect();
    let mut out = Vec::new();
    for (line, e) in parse(file, &text, &taken)? {
        let version = run_version(&e.version)
            .map_err(|m| at(file, line, 1, format!("producer `{}`: {m}", e.name)))?;
        out.push(leak(file, e, version));
    }
    Ok(out)
}

/// A producer file's entries with the line of each (`file` names it in errors): the format,
/// the names (unique, not built-in, not in `taken`), the commands' placeholders. Runs
/// nothing.
fn parse(
    file: &Path,
    text: &str,
    taken: &[&str],
) -> Result<Vec<(u64, Entry)>, gpucts_input::InputError> {
    let parsed: ProducerFile =
        gpucts_input::from_yaml(text).map_err(|(l, c, m)| at(file, l, c, m))?;
    if parsed.producers.is_empty() {
        return Err(at(file, 1, 1, "`producers:` lists no producer".into()));
    }
    // Each entry's line: where its `name:` is written (one per entry, in order).
    let name_lines: Vec<u64> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            l.trim_start()
                .trim_start_matches("- ")
                .trim_start()
                .starts_with("name:")
        })
        .map(|(i, _)| i as u64 + 1)
        .collect();
    let mut out: Vec<(u64, Entry)> = Vec::new();
    for (i, e) in parsed.producers.into_iter().enumerate() {
        let line = name_lines.get(i).copied().unwrap_or(1);
        let fail = |m: String| at(file, line, 1, format!("producer `{}`: {m}", e.name));
        check_entry(&e).map_err(fail)?;
        let built_in = super::REGISTRY
            .iter()
            .any(|d| d.name == e.name || d.aliases.contains(&e.name.as_str()));
        if built_in || taken.contains(&e.name.as_str()) || out.iter().any(|(_, o)| o.name == e.name)
        {
            return Err(fail("the name is already a producer's".into()));
        }
        if taken.len() + out.len() >= MAX_PRODUCERS {
            return Err(fail(format!(
                "more than {MAX_PRODUCERS} producers from files"
            )));
        }
        out.push((line, e));
    }
    Ok(out)
}

/// For fuzzing: a producer file's text read as [`register`] reads it, without running any
/// command.
pub fn parse_only(text: &str) -> Result<usize, gpucts_input::InputError> {
    parse(Path::new("producers.yaml"), text, &[]).map(|v| v.len())
}

/// An entry's own rules: a producer id for a name, a command with its input and output.
fn check_entry(e: &Entry) -> Result<(), String> {
    let id_like = !e.name.is_empty()
        && e.name.len() <= 32
        && e.name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !e.name.starts_with('-');
    if !id_like {
        return Err(
            "`name:` is a producer id: 1 to 32 of a-z, 0-9 and `-`, not starting with `-`".into(),
        );
    }
    for (field, argv) in [("command", &e.command), ("version", &e.version)] {
        if argv.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(format!("`{field}:` names no program"));
        }
    }
    for placeholder in ["{input}", "{output}"] {
        if !e.command.iter().any(|a| a.contains(placeholder)) {
            return Err(format!("`command:` has no `{placeholder}`"));
        }
    }
    Ok(())
}

/// The first line the version command prints (stdout, else stderr).
fn run_version(argv: &[String]) -> Result<String, String> {
    let out = process::output_within(
        Command::new(&argv[0]).args(&argv[1..]),
        &argv[0],
        process::PROBE_TIMEOUT,
    )
    .map_err(|e| format!("`version:` does not run: {e}"))?;
    if !out.status.success() {
        return Err(format!("`version:` exited with {}", out.status));
    }
    let text = [&out.stdout, &out.stderr]
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .find(|t| !t.trim().is_empty())
        .unwrap_or_default();
    let first = text.lines().next().unwrap_or("").trim().to_string();
    if first.is_empty() {
        return Err("`version:` printed nothing".into());
    }
    Ok(first)
}

/// The registry entry of a user producer: leaked, as the built-in ones are statics (a handful
/// per process, for its whole life).
fn leak(file: &Path, e: Entry, version: String) -> &'static ProducerDef {
    let s = |t: String| -> &'static str { Box::leak(t.into_boxed_str()) };
    let user: &'static UserCommand = Box::leak(Box::new(UserCommand {
        file: file.to_path_buf(),
        language: e.language,
        command: e.command,
        version,
    }));
    let accepts: &'static [Language] = Box::leak(Box::new([e.language.language()]));
    Box::leak(Box::new(ProducerDef {
        name: s(e.name.clone()),
        aliases: &[],
        describe: s(format!("{} (from {})", e.name, file.display())),
        tool: s(e.name),
        capability: None,
        also_requires: &[],
        accepts,
        hand_written: false,
        oldest_target: "sm_50",
        version: |def, _| def.user.map(|u| u.version.clone()),
        compile: |_, _| unreachable!("Producer::compile runs a user producer's command"),
        extra_tool: None,
        user: Some(user),
    }))
}

impl UserCommand {
    /// The command line for one compilation.
    fn argv(&self, input: &Path, output: &Path, arch: &str) -> Vec<String> {
        let compute = arch.replacen("sm_", "compute_", 1);
        self.command
            .iter()
            .map(|a| {
                a.replace("{input}", &input.display().to_string())
                    .replace("{output}", &output.display().to_string())
                    .replace("{compute}", &compute)
                    .replace("{arch}", arch)
            })
            .collect()
    }

    /// What identifies the compiler for disk caches: its version and command line.
    pub(super) fn identity(&self) -> String {
        format!("{} | {}", self.version, self.command.join(" "))
    }

    /// Run the command on `src`; its PTX, or its log when it fails or writes none.
    pub(super) fn compile(
        &self,
        name: &str,
        tc: &Toolchain,
        src: &Source<'_>,
    ) -> Result<String, ToolError> {
        let dir = crate::backend::toolchain::tempfile_dir()?;
        let input = dir
            .path()
            .join(format!("gpucts_source.{}", self.language.extension()));
        let output = dir.path().join("out.ptx");
        std::fs::write(&input, src.text)?;
        let argv = self.argv(&input, &output, src.arch);
        let out = process::output_within(
            Command::new(&argv[0])
                .args(&argv[1..])
                .current_dir(dir.path()),
            name,
            tc.tool_timeout(),
        )?;
        let log = || {
            let mut l = String::from_utf8_lossy(&out.stderr).into_owned();
            l.push_str(&String::from_utf8_lossy(&out.stdout));
            l
        };
        if !out.status.success() {
            return Err(ToolError::Failed {
                tool: name.to_string(),
                log: log(),
            });
        }
        std::fs::read_to_string(&output).map_err(|e| ToolError::Failed {
            tool: name.to_string(),
            log: format!("exited 0 but wrote no {}: {e}\n{}", output.display(), log()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = crate::backend::toolchain::tempfile_dir().unwrap();
        let p = d.path().join("producers.yaml");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    fn err(text: &str) -> String {
        let (_d, p) = write(text);
        read(&p, &[]).unwrap_err().to_string()
    }

    /// A file's errors say where and what: an unknown key or language at its line and
    /// column, a taken or malformed name, a command without its input or output, a version
    /// command that does not run.
    #[test]
    fn bad_files_are_refused_at_their_place() {
        let e = err("producers:\n  - name: x\n    language: fortran\n    command: [cc]\n    version: [cc]\n");
        assert!(
            e.contains("producers.yaml:3:") && e.contains("fortran"),
            "{e}"
        );
        let e = err("producers:\n  - name: x\n    langauge: c\n");
        assert!(
            e.contains("producers.yaml:3:") && e.contains("langauge"),
            "{e}"
        );
        let ok_rest = "    language: c\n    command: [sh, -c, 'cp {input} {output}']\n    version: [sh, -c, 'echo v1']\n";
        let e = err(&format!("producers:\n  - name: clang\n{ok_rest}"));
        assert!(
            e.contains("producers.yaml:2:1: producer `clang`: the name is already a producer's"),
            "{e}"
        );
        let e = err(&format!("producers:\n  - name: llc\n{ok_rest}"));
        assert!(e.contains("already a producer's"), "{e}");
        let e = err(&format!("producers:\n  - name: My_CC\n{ok_rest}"));
        assert!(e.contains("is a producer id"), "{e}");
        let e = err("producers:\n  - name: cc\n    language: c\n    command: [cc, '{input}']\n    version: [cc]\n");
        assert!(e.contains("`command:` has no `{output}`"), "{e}");
        let e = err("producers:\n  - name: cc\n    language: c\n    command: ['{input}', '{output}']\n    version: [/nonexistent/cc, --version]\n");
        assert!(e.contains("`version:` does not run"), "{e}");
        let e = err("producers: []\n");
        assert!(e.contains("lists no producer"), "{e}");
        let e = err(&format!(
            "producers:\n  - name: a\n{ok_rest}  - name: a\n{ok_rest}"
        ));
        assert!(
            e.contains("producers.yaml:6:1: producer `a`: the name is already"),
            "{e}"
        );
    }

    /// A producer read from a file compiles by its command, with the placeholders filled, and
    /// reports its version's first line; a command that fails is the producer's failure, with
    /// its log.
    #[test]
    fn a_user_producer_runs_its_command() {
        let (_d, p) = write(
            "producers:\n  - name: copier\n    language: llvm-ir\n    command: [sh, -c, 'echo \"// {arch} {compute}\" > {output}; cat {input} >> {output}']\n    version: [sh, -c, 'echo copier 1.0; echo more']\n  - name: failing\n    language: c\n    command: [sh, -c, 'echo broken >&2; exit 3', '{input}', '{output}']\n    version: [sh, -c, 'echo f 2 >&2']\n",
        );
        let defs = read(&p, &[]).unwrap();
        let tc = Toolchain::default();
        let copier = defs[0].user.unwrap();
        assert_eq!(copier.version, "copier 1.0");
        assert_eq!(defs[0].accepts, [Language::LlvmIr]);
        let src = Source::new(Language::LlvmIr, "target triple\n").arch("sm_87");
        let ptx = copier.compile("copier", &tc, &src).unwrap();
        assert_eq!(ptx, "// sm_87 compute_87\ntarget triple\n");
        let failing = defs[1].user.unwrap();
        assert_eq!(failing.version, "f 2");
        let e = failing
            .compile("failing", &tc, &Source::new(Language::C, "int x;"))
            .unwrap_err();
        assert!(e.to_string().contains("failing failed: broken"), "{e}");
    }
}
