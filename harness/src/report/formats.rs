//! The report files of a run, one list. `results.json` is written from the run's results and
//! is the one source of truth; every other format is rendered from it alone (as read back by
//! `results::parse`), so a report never says what results.json does not.
//!
//! A new format: a file in `report/` with `fn render(&Results) -> Result<String, E>` and one
//! line in [`REPORTS`]. The run writes it beside results.json, names it in the closing lines
//! (`LABEL: PATH`) and in the JSON stream's `report` event (`KEY: PATH`).

use super::results::Results;

/// How a report file comes to be.
#[derive(Debug, Clone, Copy)]
pub enum Make {
    /// results.json, written from the run's results (`report::run::write`).
    Source,
    /// Rendered from the results set results.json holds.
    Render(fn(&Results) -> Result<String, String>),
}

/// One report file of a run.
#[derive(Debug)]
pub struct ReportFormat {
    /// Its key in the JSON stream's `report` event.
    pub key: &'static str,
    /// What the closing line calls it (`LABEL: PATH`).
    pub label: &'static str,
    /// Its file name in the report directory.
    pub file: &'static str,
    pub make: Make,
}

/// Every report a run writes, in the order the closing lines name them: JUnit first (the file
/// CI reads), then results.json, then the rest.
pub(crate) static REPORTS: &[ReportFormat] = &[
    ReportFormat::rendered("junit", "JUnit report", "junit.xml", |r| {
        text(super::junit::render(r))
    }),
    ReportFormat::source("results", "JSON results", "results.json"),
    ReportFormat::rendered("html", "HTML report", "report.html", |r| {
        text(super::html::render(r, super::merge::fleet_view(r), None))
    }),
];

impl ReportFormat {
    /// The results.json entry.
    const fn source(key: &'static str, label: &'static str, file: &'static str) -> ReportFormat {
        ReportFormat {
            key,
            label,
            file,
            make: Make::Source,
        }
    }

    /// A format rendered from the results set.
    const fn rendered(
        key: &'static str,
        label: &'static str,
        file: &'static str,
        render: fn(&Results) -> Result<String, String>,
    ) -> ReportFormat {
        ReportFormat {
            key,
            label,
            file,
            make: Make::Render(render),
        }
    }
}

/// A renderer's result with its error as text (the closing lines show it after the path).
fn text<E: std::fmt::Display>(r: Result<String, E>) -> Result<String, String> {
    r.map_err(|e| e.to_string())
}

/// The report with `key` in [`REPORTS`].
pub fn by_key(key: &str) -> Option<&'static ReportFormat> {
    REPORTS.iter().find(|r| r.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys and file names tell the reports apart, and exactly one is the source.
    #[test]
    fn one_source_and_distinct_names() {
        let sources = REPORTS
            .iter()
            .filter(|r| matches!(r.make, Make::Source))
            .count();
        assert_eq!(sources, 1);
        for (i, a) in REPORTS.iter().enumerate() {
            for b in &REPORTS[i + 1..] {
                assert!(a.key != b.key && a.file != b.file && a.label != b.label);
            }
        }
        assert_eq!(by_key("results").map(|r| r.file), Some("results.json"));
    }
}
