//! The subcommands that work on results sets after a run: `report`, `diff`, `bundle`
//! (`keygen`, `verify`) and `merge`. Exit codes: 0 done (no regression, intact), 1 a
//! regression or a tampered bundle, 2 unreadable input or a usage error.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::{bundle, diff, html, merge, results};

pub(crate) const EXIT_OK: i32 = 0;
pub(crate) const EXIT_FINDING: i32 = 1;
pub(crate) const EXIT_UNREADABLE: i32 = 2;

fn error(msg: impl std::fmt::Display) {
    eprintln!("gpucts: {msg}");
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A results directory (with results.json), a results.json, or a bundle (.tar.zst).
    pub results: PathBuf,
    /// Where to write the HTML (default: report.html in the results directory; for a bundle,
    /// in the working directory).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Add a diff against this baseline (results directory or bundle).
    #[arg(long, value_name = "BASE")]
    pub baseline: Option<PathBuf>,
    #[command(flatten)]
    pub figures: FigureArgs,
}

/// How `diff` (and `report --baseline`) compare figures.
#[derive(Args, Debug, Clone, Copy)]
pub struct FigureArgs {
    /// The noise band, in percent of the median, of a figure recorded as a single sample (a
    /// figure with several samples uses its measured min..max).
    #[arg(long, value_name = "PCT", default_value_t = diff::DEFAULT_TOLERANCE_PCT, value_parser = parse_pct)]
    pub tolerance: f64,
    /// Compare figures even when the two results name different GPUs or drivers.
    #[arg(long)]
    pub across_machines: bool,
}

impl FigureArgs {
    fn options(self) -> diff::Options {
        diff::Options {
            tolerance_pct: self.tolerance,
            across_machines: self.across_machines,
        }
    }
}

/// A percentage: `20` or `20%`, finite and not negative.
fn parse_pct(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim_end();
    match t.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!(
            "{s:?} is not a percentage (a number 0 or more, e.g. 20 or 20%)"
        )),
    }
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The baseline: a results directory, results.json or bundle.
    pub base: PathBuf,
    /// The run to judge against it.
    pub new: PathBuf,
    /// Print the findings as JSON (see reports/README.md).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub figures: FigureArgs,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BundleArgs {
    #[command(subcommand)]
    pub action: Option<BundleCmd>,
    /// The results directory to pack.
    #[arg(required = true, value_name = "RESULTS_DIR")]
    pub results: Option<PathBuf>,
    /// The bundle to write (NAME.tar.zst).
    #[arg(short, long, required = true, value_name = "NAME.tar.zst")]
    pub output: Option<PathBuf>,
    /// Sign the manifest with this ed25519 secret key (from `gpucts bundle keygen`).
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum BundleCmd {
    /// Make a signing key pair: NAME.key (secret, mode 0600) and NAME.pub.
    Keygen {
        #[arg(short, long, value_name = "NAME", default_value = "gpucts-signing")]
        output: PathBuf,
    },
    /// Check a bundle: exit 0 intact, 1 tampered or signature wrong (naming the file), 2
    /// unreadable.
    Verify {
        bundle: PathBuf,
        /// The signer's public key (NAME.pub): the bundle must be signed by it.
        #[arg(long, value_name = "PUB")]
        key: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Node results directories (each named after its node).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// The merged results directory to write (results.json, report.html).
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
}

fn load(p: &Path) -> Result<results::Results, i32> {
    bundle::load_results(p).map_err(|e| {
        error(e);
        EXIT_UNREADABLE
    })
}

fn write(path: &Path, text: &str) -> i32 {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(d) {
            error(format!("cannot create {}: {e}", d.display()));
            return EXIT_UNREADABLE;
        }
    }
    match std::fs::write(path, text) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            error(format!("cannot write {}: {e}", path.display()));
            EXIT_UNREADABLE
        }
    }
}

pub fn report(a: ReportArgs) -> i32 {
    let r = match load(&a.results) {
        Ok(r) => r,
        Err(c) => return c,
    };
    let d = match &a.baseline {
        Some(b) => match load(b) {
            Ok(base) => Some(diff::diff(
                &base,
                &r,
                &b.display().to_string(),
                &a.results.display().to_string(),
                a.figures.options(),
            )),
            Err(c) => return c,
        },
        None => None,
    };
    let out = a.output.clone().unwrap_or_else(|| {
        if a.results.is_dir() {
            a.results.join("report.html")
        } else if bundle::is_bundle_name(&a.results) {
            PathBuf::from("report.html")
        } else {
            results::dir_of(&a.results).join("report.html")
        }
    });
    let page = match html::render(&r, merge::fleet_view(&r), d) {
        Ok(p) => p,
        Err(e) => {
            error(e);
            return EXIT_UNREADABLE;
        }
    };
    let code = write(&out, &page);
    if code == EXIT_OK {
        println!("HTML report: {}", out.display());
    }
    code
}

pub fn diff(a: DiffArgs) -> i32 {
    let (base, new) = match (load(&a.base), load(&a.new)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(c), _) | (_, Err(c)) => return c,
    };
    let d = diff::diff(
        &base,
        &new,
        &a.base.display().to_string(),
        &a.new.display().to_string(),
        a.figures.options(),
    );
    if a.json {
        match serde_json::to_string_pretty(&d) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                error(e);
                return EXIT_UNREADABLE;
            }
        }
    } else {
        print!("{}", d.render_text());
    }
    if d.regression {
        EXIT_FINDING
    } else {
        EXIT_OK
    }
}

pub fn bundle(a: BundleArgs, root: &Path) -> i32 {
    match a.action {
        Some(BundleCmd::Keygen { output }) => match bundle::keygen(&output) {
            Ok((k, p)) => {
                println!("secret key: {}\npublic key: {}", k.display(), p.display());
                EXIT_OK
            }
            Err(e) => {
                error(e);
                EXIT_UNREADABLE
            }
        },
        Some(BundleCmd::Verify { bundle: b, key }) => match bundle::verify(&b, key.as_deref()) {
            Ok(bundle::Verified::Intact {
                files,
                signer,
                trusted,
            }) => {
                let sig = match (signer, trusted) {
                    (Some(k), true) => format!(", signed by the given key {k}"),
                    (Some(k), false) => {
                        format!(", signed by key {k} (its own; pass --key PUB to check the signer)")
                    }
                    (None, _) => ", unsigned".into(),
                };
                println!("{}: intact, {files} files{sig}", b.display());
                EXIT_OK
            }
            Ok(bundle::Verified::Tampered(problems)) => {
                for p in &problems {
                    println!("{}: tampered: {p}", b.display());
                }
                EXIT_FINDING
            }
            Err(e) => {
                error(e);
                EXIT_UNREADABLE
            }
        },
        None => {
            let (Some(dir), Some(out)) = (a.results, a.output) else {
                error("bundle: RESULTS_DIR and -o NAME.tar.zst are required");
                return EXIT_UNREADABLE;
            };
            if !bundle::is_bundle_name(&out) {
                error(format!("{}: bundles are named NAME.tar.zst", out.display()));
                return EXIT_UNREADABLE;
            }
            match bundle::create(
                &dir,
                &out,
                a.sign.as_deref(),
                root,
                std::env::args().collect(),
            ) {
                Ok(c) => {
                    println!(
                        "bundle: {} ({} files{})",
                        out.display(),
                        c.files,
                        if c.signed { ", signed" } else { "" }
                    );
                    EXIT_OK
                }
                Err(e) => {
                    error(e);
                    EXIT_UNREADABLE
                }
            }
        }
    }
}

pub fn merge(a: MergeArgs) -> i32 {
    let merged = match merge::merge(&a.dirs) {
        Ok(m) => m,
        Err(e) => {
            error(e);
            return EXIT_UNREADABLE;
        }
    };
    let json = match serde_json::to_string_pretty(&merged) {
        Ok(j) => j,
        Err(e) => {
            error(e);
            return EXIT_UNREADABLE;
        }
    };
    let results_path = a.output.join("results.json");
    let code = write(&results_path, &json);
    if code != EXIT_OK {
        return code;
    }
    let fleet = merge::fleet_view(&merged);
    let outliers = fleet.as_ref().map(|f| f.outliers.len()).unwrap_or(0);
    let page = match html::render(&merged, fleet, None) {
        Ok(p) => p,
        Err(e) => {
            error(e);
            return EXIT_UNREADABLE;
        }
    };
    let html_path = a.output.join("report.html");
    let code = write(&html_path, &page);
    if code == EXIT_OK {
        let c = results::Counts::of(&merged.cases);
        println!(
            "merged {} nodes, {} cases ({} passed, {} failed, {} skipped), {outliers} outliers: {}",
            merged.nodes.len(),
            c.total,
            c.passed,
            c.failed,
            c.skipped,
            a.output.display()
        );
    }
    code
}
