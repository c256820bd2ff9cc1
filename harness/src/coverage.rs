//! `gpucts coverage [--json] [RESULTS]`: which clauses of the two specifications the shipped
//! suites check, how strongly and where (offline, GPU, VM), and, given a run's results.json (or
//! the report folder holding it), what those cases did. Clauses no case checks come first.
//!
//! The joining itself is [`crate::clauses::coverage`]; this module reads the inputs and prints.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::clauses::{Catalogue, ClauseCoverage};

/// The command's exit codes: 0 printed, 2 an input could not be read.
pub(crate) const EXIT_OK: i32 = 0;
pub(crate) const EXIT_BAD_INPUT: i32 = 2;

/// The largest results.json read (a full run's is about 10 MB).
pub(crate) const MAX_RESULTS_BYTES: u64 = 512 << 20;

/// Why coverage could not be computed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CoverageError {
    #[error("{0}")]
    Catalogue(#[from] crate::clauses::CatalogueError),
    #[error("{0}")]
    Suites(String),
    #[error("{}: {message}", path.display())]
    Results { path: PathBuf, message: String },
}

/// A run's verdicts by case id, from a results.json or a folder holding one.
pub(crate) fn read_verdicts(path: &Path) -> Result<HashMap<String, String>, CoverageError> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let bad = |message: String| CoverageError::Results {
        path: file.clone(),
        message,
    };
    let meta = std::fs::metadata(&file).map_err(|e| bad(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(bad("cannot read: not a regular file".into()));
    }
    if meta.len() > MAX_RESULTS_BYTES {
        return Err(bad(format!(
            "{} bytes; at most {MAX_RESULTS_BYTES} bytes are read",
            meta.len()
        )));
    }
    let mut text = String::new();
    std::fs::File::open(&file)
        .and_then(|f| f.take(MAX_RESULTS_BYTES).read_to_string(&mut text))
        .map_err(|e| bad(format!("cannot read: {e}")))?;
    #[derive(serde::Deserialize)]
    struct Results {
        cases: Vec<Case>,
    }
    #[derive(serde::Deserialize)]
    struct Case {
        id: String,
        verdict: String,
    }
    let r: Results = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "{}:{}: not a gpucts results.json: {e}",
            e.line(),
            e.column()
        ))
    })?;
    Ok(r.cases.into_iter().map(|c| (c.id, c.verdict)).collect())
}

/// Every case of the data root's suites as (id, `clause:` text).
pub(crate) fn shipped_cases(
    data: &crate::data::DataRoot,
) -> Result<Vec<(String, String)>, CoverageError> {
    let files = crate::suite::resolve_suite_arg("all", &data.path.join("suites"))
        .map_err(|e| CoverageError::Suites(e.to_string()))?;
    let suites = crate::suite::load_suites(&files, &crate::areas::all()).map_err(|errors| {
        CoverageError::Suites(
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    Ok(suites
        .into_iter()
        .flat_map(|s| s.cases.into_iter().map(|c| (c.id, c.clause)))
        .collect())
}

/// The coverage of the data root's catalogue by its suites, with a run's verdicts if given.
pub(crate) fn compute(
    data: &crate::data::DataRoot,
    results: Option<&Path>,
) -> Result<Vec<ClauseCoverage>, CoverageError> {
    let catalogue = Catalogue::load(&data.path)?;
    let cases = shipped_cases(data)?;
    let verdicts = results.map(read_verdicts).transpose()?;
    Ok(crate::clauses::coverage(
        &catalogue,
        cases.iter().map(|(a, b)| (a.as_str(), b.as_str())),
        verdicts.as_ref(),
    ))
}

/// `gpucts coverage`.
pub fn cli(json: bool, results: Option<&Path>, data: &crate::data::DataRoot) -> i32 {
    let cov = match compute(data, results) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gpucts: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if json {
        match serde_json::to_string_pretty(&cov) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("gpucts: {e}");
                return EXIT_BAD_INPUT;
            }
        }
    } else {
        print!("{}", render(&cov, results.is_some()));
    }
    EXIT_OK
}

fn counts_text(v: &BTreeMap<String, usize>) -> String {
    v.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text report: gaps, untestable clauses, then each covered clause with its cases' reach
/// and strength (and verdicts), then totals per chapter.
pub fn render(cov: &[ClauseCoverage], with_run: bool) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let gaps: Vec<&ClauseCoverage> = cov.iter().filter(|c| c.strength == "none").collect();
    let _ = writeln!(s, "clauses no case checks ({}):", gaps.len());
    for c in &gaps {
        let _ = writeln!(s, "  {}  {}", c.id, c.summary);
    }
    let untestable: Vec<&ClauseCoverage> =
        cov.iter().filter(|c| c.strength == "untestable").collect();
    let _ = writeln!(
        s,
        "\nclauses no case can check here ({}):",
        untestable.len()
    );
    for c in &untestable {
        let _ = writeln!(s, "  {}  ({})", c.id, c.untestable.as_deref().unwrap_or(""));
    }
    let _ = writeln!(s, "\nclauses with cases:");
    for c in cov
        .iter()
        .filter(|c| c.strength == "strong" || c.strength == "weak")
    {
        // Cases per reach and strength: `offline 228, gpu 36 (weak 10)`.
        let mut reach: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for k in &c.cases {
            let e = reach
                .entry(k.on.map_or("cited", |r| r.as_str()))
                .or_default();
            e.0 += 1;
            if k.strength != Some(crate::clauses::Strength::Strong) {
                e.1 += 1;
            }
        }
        let reach: Vec<String> = reach
            .iter()
            .map(|(r, (n, weak))| {
                if *weak > 0 {
                    format!("{r} {n} (weak {weak})")
                } else {
                    format!("{r} {n}")
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "  {:<6} {}  [{}]{}{}",
            c.strength,
            c.id,
            reach.join(", "),
            c.verdicts
                .as_ref()
                .map(|v| format!("  {}", counts_text(v)))
                .unwrap_or_default(),
            if c.judged_in_run == Some(false) {
                "  (not judged in this run)"
            } else {
                ""
            }
        );
    }
    // The specifications' own mistakes, so a reader of a verdict knows where the text itself
    // cannot be followed.
    let errata: Vec<&ClauseCoverage> = cov.iter().filter(|c| c.erratum.is_some()).collect();
    if !errata.is_empty() {
        let _ = writeln!(s, "\nerrata in the specifications ({}):", errata.len());
        for c in &errata {
            let _ = writeln!(s, "  {}  {}", c.id, c.erratum.as_deref().unwrap_or(""));
        }
    }
    // Totals per chapter, in first-seen catalogue order.
    let mut chapters: Vec<(String, [usize; 4], BTreeMap<String, usize>)> = Vec::new();
    for c in cov {
        let i = match chapters.iter().position(|(ch, _, _)| *ch == c.chapter) {
            Some(i) => i,
            None => {
                chapters.push((c.chapter.clone(), [0; 4], BTreeMap::new()));
                chapters.len() - 1
            }
        };
        let slot = match c.strength {
            "strong" => 0,
            "weak" => 1,
            "none" => 2,
            _ => 3,
        };
        chapters[i].1[slot] += 1;
        for (k, n) in c.verdicts.iter().flatten() {
            *chapters[i].2.entry(k.clone()).or_insert(0) += n;
        }
    }
    chapters.sort_by(|a, b| a.0.cmp(&b.0));
    let _ = writeln!(
        s,
        "\nper chapter (clauses: strong, weak, none, untestable):"
    );
    for (ch, n, v) in &chapters {
        let _ = writeln!(
            s,
            "  {ch:<24} {:>3} {:>3} {:>3} {:>3}{}",
            n[0],
            n[1],
            n[2],
            n[3],
            if with_run {
                format!("  {}", counts_text(v))
            } else {
                String::new()
            }
        );
    }
    let total = |slot: &str| cov.iter().filter(|c| c.strength == slot).count();
    if with_run {
        // A clause the run gave no evidence for, whatever the catalogue's strength: every case
        // of it skipped, waived or absent.
        let unjudged = cov
            .iter()
            .filter(|c| c.judged_in_run == Some(false))
            .count();
        let _ = writeln!(
            s,
            "\nclauses with cases none of which was judged in this run (skipped, waived or not run): {unjudged}"
        );
    }
    let _ = writeln!(
        s,
        "\ngpucts: {} clauses: {} strong, {} weak, {} none, {} untestable",
        cov.len(),
        total("strong"),
        total("weak"),
        total("none"),
        total("untestable")
    );
    s
}
