//! What a run would refuse, found before it starts: each case's area checks
//! the content of its `check:` ([`crate::area::Check::validate`]: files it reads, names it looks
//! up, values it rejects), and each problem is placed at `file:line:column` of the key in the
//! suite file, or of the matrix or table value it came from.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use super::load::SuiteError;
use super::LoadedSuite;
use crate::area::{CaseError, ValidateContext};

/// Problems reported for one entry at most; a matrix entry with one bad value would otherwise
/// repeat it for every expansion.
const MAX_PER_ENTRY: usize = 10;

/// Every problem the cases' areas find, in file order, each with its position. Empty: a run
/// meets none of them.
/// Leave out the cases a producer from `--producer-file` added that their check refuses: the
/// producer reads a language the area does not write (a C compiler in xcall), as a built-in
/// producer is left off an area's axes.
pub(crate) fn drop_out_of_view(suites: &mut [LoadedSuite], root: &Path) {
    let ctx = ValidateContext { root };
    for s in suites {
        if s.from_producer_files.is_empty() {
            continue;
        }
        let added = std::mem::take(&mut s.from_producer_files);
        s.cases
            .retain(|c| !added.contains(&c.id) || c.check.validate(&ctx).is_ok());
        s.from_producer_files = added;
    }
}

pub(crate) fn validate_cases(suites: &[LoadedSuite], root: &Path) -> Vec<SuiteError> {
    let ctx = ValidateContext { root };
    let mut out = Vec::new();
    for s in suites {
        let lines: Vec<&str> = s.source.lines().collect();
        // Per entry (its position): the problems found, deduplicated, in order.
        let mut per_entry: BTreeMap<(u64, u64), (Vec<SuiteError>, usize)> = BTreeMap::new();
        let mut seen: HashSet<(u64, u64, String)> = HashSet::new();
        for case in &s.cases {
            let Err(errors) = case.check.validate(&ctx) else {
                continue;
            };
            let entry = (case.origin.line, case.origin.column);
            for e in errors {
                let (line, column) = place(&lines, entry, &e).unwrap_or(entry);
                let message = format!("case `{}`: {}", case.id, e.message);
                // The same value from one matrix axis fails every expansion: report it once.
                if !seen.insert((line, column, e.message.clone())) {
                    continue;
                }
                let slot = per_entry.entry(entry).or_default();
                if slot.0.len() < MAX_PER_ENTRY {
                    slot.0.push(SuiteError {
                        file: s.file.clone(),
                        line,
                        column,
                        message,
                    });
                } else {
                    slot.1 += 1;
                }
            }
        }
        out.extend(unknown_clauses(s, &lines, root));
        for ((line, column), (errors, more)) in per_entry {
            out.extend(errors);
            if more > 0 {
                out.push(SuiteError {
                    file: s.file.clone(),
                    line,
                    column,
                    message: format!("{more} more problem(s) in this entry's expansions"),
                });
            }
        }
    }
    out
}

/// Cases whose `clause:` does not begin with an id of the clause catalogue
/// ([`crate::clauses`]), each placed on its entry's `clause:` key (or on the table value the
/// id came from), once per position. Every case of the data root's own `suites/` cites the
/// catalogue; a suite elsewhere (a test's, a user's) is held to it where its clause names one
/// of the catalogued specifications. No catalogue file under the root: nothing to check.
fn unknown_clauses(s: &LoadedSuite, lines: &[&str], root: &Path) -> Vec<SuiteError> {
    let catalogue = match crate::clauses::load_cached(root) {
        Ok(c) => c,
        Err(e) if e.line == 0 && !root.join(crate::clauses::CATALOGUE).exists() => return vec![],
        Err(e) => {
            return vec![SuiteError {
                file: e.file,
                line: e.line,
                column: e.column,
                message: e.message,
            }]
        }
    };
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let shipped = canon(&s.file).starts_with(canon(&root.join("suites")));
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for case in &s.cases {
        if !shipped && !crate::clauses::names_a_catalogued_spec(&case.clause) {
            continue;
        }
        let Err(why) = catalogue.check_citation(&case.clause) else {
            continue;
        };
        let (line, column) =
            place_clause(lines, (case.origin.line, case.origin.column), &case.clause);
        if seen.insert((line, column)) {
            out.push(SuiteError {
                file: s.file.clone(),
                line,
                column,
                message: format!("case `{}`: {why}", case.id),
            });
        }
    }
    out
}

/// Where the entry at `entry` writes the clause `cited`: the cited id where it stands written
/// (a table row's value), else the entry's `clause:` key, else the entry.
fn place_clause(lines: &[&str], entry: (u64, u64), cited: &str) -> (u64, u64) {
    let id = crate::clauses::cited_id(cited);
    let Some(first) = entry.0.checked_sub(1).and_then(|l| usize::try_from(l).ok()) else {
        return entry;
    };
    let indent = entry.1.saturating_sub(1) as usize;
    let mut key = None;
    for (i, l) in lines.iter().enumerate().skip(first) {
        let t = l.trim_start();
        if i > first && !t.is_empty() && !t.starts_with('#') && l.len() - t.len() < indent {
            break;
        }
        if let Some(b) = l.find(id) {
            return (i as u64 + 1, column_of(l, b));
        }
        if key.is_none() {
            key = find_key(l, "clause", 0).map(|b| (i as u64 + 1, column_of(l, b)));
        }
    }
    key.unwrap_or(entry)
}

/// Character index → 1-based column.
fn column_of(line: &str, byte: usize) -> u64 {
    line.get(..byte).map_or(0, |p| p.chars().count()) as u64 + 1
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || "_-+.".contains(c)
}

/// Byte offsets in `line`, from `from`, where `key` stands as a YAML key (`key:` after a
/// non-word character or the line start).
fn find_key(line: &str, key: &str, from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(i) = line.get(at..).and_then(|r| r.find(key)) {
        let start = at + i;
        let end = start + key.len();
        let before_ok = line[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_word(c));
        let after_ok = line[end..].trim_start().starts_with(':');
        if before_ok && after_ok {
            return Some(start);
        }
        at = end;
    }
    None
}

/// Byte offset of `value` as a whole word in `line` (not inside a longer name).
fn find_word(line: &str, value: &str) -> Option<usize> {
    if value.is_empty() {
        return None;
    }
    let mut at = 0;
    while let Some(i) = line.get(at..).and_then(|r| r.find(value)) {
        let start = at + i;
        let end = start + value.len();
        let before_ok = line[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_word(c));
        let after_ok = line[end..].chars().next().is_none_or(|c| !is_word(c));
        if before_ok && after_ok {
            return Some(start);
        }
        at = end;
    }
    None
}

/// Where in the entry starting at `entry` (line, column) the problem is: the matrix or table
/// value it came from when the key's value is a `{placeholder}` and the value is written in
/// the entry, else the key under `check:`.
fn place(lines: &[&str], entry: (u64, u64), e: &CaseError) -> Option<(u64, u64)> {
    let first = usize::try_from(entry.0.checked_sub(1)?).ok()?;
    let indent = usize::try_from(entry.1.checked_sub(1)?).ok()?;
    // The entry's lines: until a line less indented than its first key.
    let mut region: Vec<(usize, &str)> = vec![(first, *lines.get(first)?)];
    for (i, l) in lines.iter().enumerate().skip(first + 1) {
        let t = l.trim_start();
        if !t.is_empty() && !t.starts_with('#') && l.len() - t.len() < indent {
            break;
        }
        region.push((i, l));
    }
    // `check:`, then the key after it.
    let mut check_at = None;
    for (k, (_, l)) in region.iter().enumerate() {
        if let Some(b) = find_key(l, "check", 0) {
            check_at = Some((k, b));
            break;
        }
    }
    let (k0, b0) = check_at?;
    // The field is looked for after the check's kind (`check: {probe: {probe: x}}`: the
    // second `probe`), that is after the second colon from `check`.
    let mut after_kind = None;
    let mut colons = 0;
    'scan: for (k, (_, l)) in region.iter().enumerate().skip(k0) {
        let from = if k == k0 { b0 } else { 0 };
        for (b, c) in l[from..].char_indices() {
            if c == ':' {
                colons += 1;
                if colons == 2 {
                    after_kind = Some((k, from + b + 1));
                    break 'scan;
                }
            }
        }
    }
    let (k1, b1) = after_kind.unwrap_or((k0, b0));
    let mut key_at = None;
    for (k, (i, l)) in region.iter().enumerate().skip(k1) {
        let from = if k == k1 { b1 } else { 0 };
        if let Some(b) = find_key(l, e.field, from) {
            key_at = Some((k, *i, b));
            break;
        }
    }
    let Some((k, i, b)) = key_at else {
        let (i, l) = region[k0];
        return Some((i as u64 + 1, column_of(l, b0)));
    };
    let line = region[k].1;
    let after = &line[b + e.field.len()..];
    let written = after
        .trim_start()
        .trim_start_matches(':')
        .split([',', '}'])
        .next()
        .unwrap_or("");
    if written.contains('{') {
        if let Some(v) = &e.value {
            // The value as written in the matrix or table (outside `check:`).
            for (j, (li, l)) in region.iter().enumerate() {
                if j >= k0 {
                    break;
                }
                if let Some(vb) = find_word(l, v) {
                    return Some((*li as u64 + 1, column_of(l, vb)));
                }
            }
        }
    }
    Some((i as u64 + 1, column_of(line, b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_under_check_and_a_matrix_value_are_placed_where_they_are_written() {
        let text = "area: abi\ncases:\n  - id: abi.x.{p}\n    clause: c\n    matrix:\n      p: [nvrtc, bogus]\n    check:\n      param_passing: {producer: \"{p}\", file: x}\n  - id: abi.y\n    clause: c\n    check: {lint: {file: nowhere.ptx, exit: 0, rules: []}}\n";
        let lines: Vec<&str> = text.lines().collect();
        // `bogus` is on line 6, column 18 (counted by hand from the text above).
        let e = CaseError::new("producer", "bogus", "m");
        assert_eq!(place(&lines, (3, 5), &e), Some((6, 18)));
        // A literal value: the key itself, line 8 column 40.
        let e = CaseError::new("file", "x", "m");
        assert_eq!(place(&lines, (3, 5), &e), Some((8, 40)));
        // Flow style on one line: `file` at line 11 column 20.
        let e = CaseError::new("file", "nowhere.ptx", "m");
        assert_eq!(place(&lines, (9, 5), &e), Some((11, 20)));
        // A key the entry does not write: `check:` itself (line 11 column 5).
        let e = CaseError::about("seed", "m");
        assert_eq!(place(&lines, (9, 5), &e), Some((11, 5)));
    }
}
