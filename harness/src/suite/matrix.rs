//! Matrix expansion: one entry with `matrix: {a: [..], b: {range: [lo, hi]}}` becomes the
//! cartesian product of its values, crossed with the rows of `table:` (explicit parameter sets,
//! for values that go together, like a type and its size), minus the combinations listed under
//! `exclude:`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::de::{Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One axis of a matrix: an explicit list of scalars or an integer range `[lo, hi)`.
#[derive(Debug, Clone)]
pub enum Axis {
    List(Vec<Value>),
    Range { range: [i64; 2] },
}

/// Read by hand (not `#[serde(untagged)]`) so a wrong axis says what an axis may be instead of
/// "did not match any variant of untagged enum Axis".
impl<'de> Deserialize<'de> for Axis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const FORMS: &str = "a matrix axis is a list of values `[a, b]` or `{range: [lo, hi]}`";
        impl<'de> Visitor<'de> for V {
            type Value = Axis;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(FORMS)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Axis, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element::<Value>()? {
                    v.push(x);
                }
                Ok(Axis::List(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Axis, A::Error> {
                let mut range = None;
                while let Some(k) = map.next_key::<String>()? {
                    if k != "range" {
                        return Err(A::Error::custom(format!(
                            "unknown key `{k}` in a matrix axis; {FORMS}"
                        )));
                    }
                    let r: Vec<i64> = map.next_value()?;
                    let [lo, hi] = r[..] else {
                        return Err(A::Error::custom(format!(
                            "`range:` has {} values; it is two integers `[lo, hi]` with lo < hi",
                            r.len()
                        )));
                    };
                    range = Some([lo, hi]);
                }
                range
                    .map(|range| Axis::Range { range })
                    .ok_or_else(|| A::Error::custom(FORMS))
            }
        }
        d.deserialize_any(V)
    }
}

/// The values chosen for one expanded case.
pub(crate) type Params = BTreeMap<String, Value>;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MatrixError {
    #[error(
        "matrix key `{0}` does not appear in the id as `{{{0}}}`, so expanded ids would repeat"
    )]
    KeyNotInId(String),
    #[error("id uses `{{{0}}}` but the matrix has no key `{0}`")]
    UnknownPlaceholder(String),
    #[error("matrix axis `{0}` is empty; an axis needs at least one value (a range `[lo, hi]` needs lo < hi)")]
    EmptyAxis(String),
    #[error("matrix value for `{key}` must be a string, number or boolean, found {found}")]
    NotScalar { key: String, found: String },
    #[error("exclude entry names `{0}`, which is not a matrix key")]
    UnknownExcludeKey(String),
    #[error("table row {row} has no value for `{key}`, which the id uses")]
    TableRowMissing { row: usize, key: String },
    #[error("`{0}` is both a matrix key and a table column")]
    KeyInBoth(String),
    /// `actual` is `None` when the product does not fit in 128 bits.
    #[error("matrix expands to {} cases (axes × table rows, before excludes); at most {limit} cases per entry (raise with --max-cases N)", actual.map(|n| n.to_string()).unwrap_or_else(|| "more than 2^128".into()))]
    TooLarge { actual: Option<u128>, limit: u64 },
    #[error("exclude entry {index} ({entry}) matches no case; every exclude must remove at least one case (check the keys and values)")]
    ExcludeMatchesNothing { index: usize, entry: String },
    #[error(
        "the excludes remove every one of the {0} cases; an entry must leave at least one case"
    )]
    ExcludesEverything(usize),
}

/// Cases one suite entry may expand to by default (`--max-cases` raises it).
pub(crate) const MAX_CASES_PER_ENTRY: u64 = 100_000;

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Placeholders `{name}` in a template, in order.
fn placeholders(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                out.push(after[..close].to_string());
                rest = &after[close + 1..];
            }
            None => break,
        }
    }
    out
}

/// Replace `{key}` in `text` by the values of `params`.
pub(crate) fn substitute_text(text: &str, params: &Params) -> String {
    let mut s = text.to_string();
    for (k, v) in params {
        let needle = format!("{{{k}}}");
        if s.contains(&needle) {
            s = s.replace(&needle, &scalar_text(v).unwrap_or_default());
        }
    }
    s
}

/// Replace placeholders in a check's content: a string that is exactly `{key}` takes the
/// value with its type (so `{size}` can stand for a number); other strings are substituted as
/// text. Map keys are left alone.
pub(crate) fn substitute_value(value: &Value, params: &Params) -> Value {
    match value {
        Value::String(s) => {
            if let Some(key) = s.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
                if let Some(v) = params.get(key) {
                    return v.clone();
                }
            }
            Value::String(substitute_text(s, params))
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| substitute_value(v, params)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute_value(v, params)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Expand a matrix for an id template. With no matrix, yields one empty parameter set.
pub fn expand(
    id_template: &str,
    matrix: &BTreeMap<String, Axis>,
    table: &[Params],
    exclude: &[BTreeMap<String, Value>],
) -> Result<Vec<Params>, MatrixError> {
    expand_limited(id_template, matrix, table, exclude, MAX_CASES_PER_ENTRY)
}

/// The number of values of an axis, without materialising a range.
fn axis_len(axis: &Axis) -> u128 {
    match axis {
        Axis::List(v) => v.len() as u128,
        Axis::Range { range: [lo, hi] } => {
            u128::try_from(i128::from(*hi) - i128::from(*lo)).unwrap_or(0)
        }
    }
}

/// [`expand`] with a limit on the cases: the product is computed with checked 128-bit
/// arithmetic from the axis lengths before any value is materialised.
pub(crate) fn expand_limited(
    id_template: &str,
    matrix: &BTreeMap<String, Axis>,
    table: &[Params],
    exclude: &[BTreeMap<String, Value>],
    limit: u64,
) -> Result<Vec<Params>, MatrixError> {
    check_size(matrix, table, limit)?;
    let table_keys: BTreeSet<&String> = table.iter().flat_map(|r| r.keys()).collect();
    check_id_keys(id_template, matrix, table, &table_keys)?;
    let axes = axis_values(id_template, matrix)?;
    for ex in exclude {
        for k in ex.keys() {
            if !matrix.contains_key(k) && !table_keys.contains(k) {
                return Err(MatrixError::UnknownExcludeKey(k.clone()));
            }
        }
    }
    let out = product(table, &axes);
    apply_excludes(out, exclude)
}

/// The expansion's size (table rows × every axis) is at most `limit`; no axis is empty.
fn check_size(
    matrix: &BTreeMap<String, Axis>,
    table: &[Params],
    limit: u64,
) -> Result<(), MatrixError> {
    let mut total: Option<u128> = Some(table.len().max(1) as u128);
    for (key, axis) in matrix {
        let n = axis_len(axis);
        if n == 0 {
            return Err(MatrixError::EmptyAxis(key.clone()));
        }
        total = total.and_then(|t| t.checked_mul(n));
    }
    match total {
        Some(t) if t <= u128::from(limit) => Ok(()),
        _ => Err(MatrixError::TooLarge {
            actual: total,
            limit,
        }),
    }
}

/// A key is the matrix's or the table's, not both; every placeholder of the id names one, and
/// a table key the id names is in every row, as a scalar (so the id reads well; other table
/// values may be lists or maps, substituted whole).
fn check_id_keys(
    id_template: &str,
    matrix: &BTreeMap<String, Axis>,
    table: &[Params],
    table_keys: &BTreeSet<&String>,
) -> Result<(), MatrixError> {
    for k in table_keys {
        if matrix.contains_key(*k) {
            return Err(MatrixError::KeyInBoth((*k).clone()));
        }
    }
    for p in placeholders(id_template) {
        if matrix.contains_key(&p) {
            continue;
        }
        if !table_keys.contains(&p) {
            return Err(MatrixError::UnknownPlaceholder(p));
        }
        if let Some(row) = table.iter().position(|r| !r.contains_key(&p)) {
            return Err(MatrixError::TableRowMissing {
                row: row + 1,
                key: p,
            });
        }
    }
    let id_keys = placeholders(id_template);
    for (i, row) in table.iter().enumerate() {
        for (k, v) in row {
            if id_keys.contains(k) && scalar_text(v).is_none() {
                return Err(MatrixError::NotScalar {
                    key: format!("{k} (table row {})", i + 1),
                    found: v.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Each axis's values, in the matrix's key order: every axis is named in the id, and its
/// values are scalars.
fn axis_values(
    id_template: &str,
    matrix: &BTreeMap<String, Axis>,
) -> Result<Vec<(String, Vec<Value>)>, MatrixError> {
    let mut axes: Vec<(String, Vec<Value>)> = Vec::new();
    for (key, axis) in matrix {
        if !id_template.contains(&format!("{{{key}}}")) {
            return Err(MatrixError::KeyNotInId(key.clone()));
        }
        // The size was checked first, so the range is at most `limit` values.
        let values: Vec<Value> = match axis {
            Axis::List(v) => v.clone(),
            Axis::Range { range: [lo, hi] } => (*lo..*hi).map(Value::from).collect(),
        };
        for v in &values {
            if scalar_text(v).is_none() {
                return Err(MatrixError::NotScalar {
                    key: key.clone(),
                    found: v.to_string(),
                });
            }
        }
        axes.push((key.clone(), values));
    }
    Ok(axes)
}

/// Every table row (or one empty row) with every combination of the axes' values, the last
/// axis varying fastest.
fn product(table: &[Params], axes: &[(String, Vec<Value>)]) -> Vec<Params> {
    let mut out: Vec<Params> = if table.is_empty() {
        vec![Params::new()]
    } else {
        table.to_vec()
    };
    for (key, values) in axes {
        let mut next = Vec::with_capacity(out.len() * values.len());
        for partial in &out {
            for v in values {
                let mut p = partial.clone();
                p.insert(key.clone(), v.clone());
                next.push(p);
            }
        }
        out = next;
    }
    out
}

/// `out` without the combinations `exclude` lists; every exclude must remove something, and
/// something must remain.
fn apply_excludes(
    mut out: Vec<Params>,
    exclude: &[BTreeMap<String, Value>],
) -> Result<Vec<Params>, MatrixError> {
    // Excludes grouped by the keys they name, each group a hash set of value tuples: one
    // lookup per group per case, so 100k cases × 50k excludes is 100k × (distinct key sets)
    // lookups, not 5·10^9 comparisons.
    let mut groups: BTreeMap<Vec<&String>, HashMap<Vec<String>, Vec<usize>>> = BTreeMap::new();
    for (i, ex) in exclude.iter().enumerate() {
        let keys: Vec<&String> = ex.keys().collect();
        let vals: Vec<String> = ex.values().map(Value::to_string).collect();
        groups
            .entry(keys)
            .or_default()
            .entry(vals)
            .or_default()
            .push(i);
    }
    let mut used = vec![false; exclude.len()];
    let before = out.len();
    out.retain(|p| {
        let mut excluded = false;
        for (keys, set) in &groups {
            let vals: Option<Vec<String>> = keys
                .iter()
                .map(|k| p.get(*k).map(Value::to_string))
                .collect();
            if let Some(hit) = vals.as_ref().and_then(|v| set.get(v)) {
                for &i in hit {
                    used[i] = true;
                }
                excluded = true;
            }
        }
        !excluded
    });
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(MatrixError::ExcludeMatchesNothing {
            index: i + 1,
            entry: serde_json::to_string(&exclude[i]).unwrap_or_default(),
        });
    }
    if out.is_empty() {
        return Err(MatrixError::ExcludesEverything(before));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn axis_list(v: &[&str]) -> Axis {
        Axis::List(v.iter().map(|s| json!(s)).collect())
    }

    #[test]
    fn cartesian_product_with_exclusion() {
        let mut m = BTreeMap::new();
        m.insert("op".to_string(), axis_list(&["load", "store"]));
        m.insert(
            "order".to_string(),
            axis_list(&["acquire", "release", "relaxed"]),
        );
        let mut ex = BTreeMap::new();
        ex.insert("op".to_string(), json!("load"));
        ex.insert("order".to_string(), json!("release"));
        let cases = expand("atomics.map.{op}.{order}", &m, &[], &[ex]).unwrap();
        assert_eq!(cases.len(), 5);
        let ids: std::collections::BTreeSet<String> = cases
            .iter()
            .map(|p| substitute_text("atomics.map.{op}.{order}", p))
            .collect();
        assert_eq!(ids.len(), 5, "expanded ids are distinct");
        assert!(!ids.contains("atomics.map.load.release"));
        assert!(ids.contains("atomics.map.store.release"));
    }

    #[test]
    fn range_axis_and_typed_substitution() {
        let mut m = BTreeMap::new();
        m.insert("seed".to_string(), Axis::Range { range: [10, 13] });
        let cases = expand("abi.random.{seed}", &m, &[], &[]).unwrap();
        assert_eq!(cases.len(), 3);
        let v = substitute_value(&json!({"seed": "{seed}", "name": "t{seed}"}), &cases[2]);
        assert_eq!(v, json!({"seed": 12, "name": "t12"}));
    }

    #[test]
    fn key_missing_from_id_is_rejected() {
        let mut m = BTreeMap::new();
        m.insert("x".to_string(), axis_list(&["a"]));
        assert_eq!(
            expand("abi.case", &m, &[], &[]),
            Err(MatrixError::KeyNotInId("x".into()))
        );
        assert_eq!(
            expand("abi.{y}", &BTreeMap::new(), &[], &[]),
            Err(MatrixError::UnknownPlaceholder("y".into()))
        );
    }

    #[test]
    fn table_rows_cross_matrix_axes() {
        let row = |t: &str, s: i64| -> Params {
            [("ty".to_string(), json!(t)), ("size".to_string(), json!(s))].into()
        };
        let mut m = BTreeMap::new();
        m.insert("space".to_string(), axis_list(&["global", "shared"]));
        let cases = expand("abi.{ty}.{space}", &m, &[row("u8", 1), row("u64", 8)], &[]).unwrap();
        assert_eq!(cases.len(), 4);
        let v = substitute_value(&json!({"n": "{size}"}), &cases[3]);
        assert_eq!(v, json!({"n": 8}));
        let missing: Params = [("size".to_string(), json!(2))].into();
        assert_eq!(
            expand("abi.{ty}", &BTreeMap::new(), &[row("u8", 1), missing], &[]),
            Err(MatrixError::TableRowMissing {
                row: 2,
                key: "ty".into()
            })
        );
    }

    fn ranges(n: usize, hi: i64) -> BTreeMap<String, Axis> {
        (0..n)
            .map(|i| (format!("k{i}"), Axis::Range { range: [0, hi] }))
            .collect()
    }

    fn template(n: usize) -> String {
        "abi".to_string() + &(0..n).map(|i| format!(".{{k{i}}}")).collect::<String>()
    }

    #[test]
    fn range_products_are_checked_before_expansion() {
        // Issue 10: four axes of 65536 values overflowed usize to 0 cases; two axes of 10^6
        // allocated gigabytes before the 100k limit was looked at.
        let m = ranges(4, 65_536);
        let e = expand(&template(4), &m, &[], &[]).unwrap_err();
        assert_eq!(
            e,
            MatrixError::TooLarge {
                actual: Some(1u128 << 64),
                limit: 100_000
            }
        );
        let msg = e.to_string();
        assert!(
            msg.contains("18446744073709551616") && msg.contains("100000"),
            "{msg}"
        );
        assert!(msg.contains("--max-cases"), "{msg}");
        // Eight full-width i64 ranges overflow even 128 bits.
        let mut wide = BTreeMap::new();
        for i in 0..8 {
            wide.insert(
                format!("k{i}"),
                Axis::Range {
                    range: [i64::MIN, i64::MAX],
                },
            );
        }
        let e = expand(&template(8), &wide, &[], &[]).unwrap_err();
        assert!(e.to_string().contains("more than 2^128"), "{e}");
        // The limit can be raised.
        assert_eq!(
            expand_limited(&template(2), &ranges(2, 400), &[], &[], 160_000)
                .unwrap()
                .len(),
            160_000
        );
        assert!(expand(&template(2), &ranges(2, 400), &[], &[]).is_err());
    }

    #[test]
    fn a_backwards_range_is_an_empty_axis() {
        let mut m = BTreeMap::new();
        m.insert("k0".to_string(), Axis::Range { range: [5, 3] });
        assert_eq!(
            expand("abi.{k0}", &m, &[], &[]),
            Err(MatrixError::EmptyAxis("k0".into()))
        );
    }

    #[test]
    fn an_exclude_matching_nothing_or_everything_is_an_error() {
        let mut m = BTreeMap::new();
        m.insert("op".to_string(), axis_list(&["load", "store"]));
        let ex = |v: &str| -> BTreeMap<String, Value> { [("op".to_string(), json!(v))].into() };
        assert!(matches!(
            expand("a.{op}", &m, &[], &[ex("lod")]),
            Err(MatrixError::ExcludeMatchesNothing { index: 1, .. })
        ));
        assert_eq!(
            expand("a.{op}", &m, &[], &[ex("load"), ex("store")]),
            Err(MatrixError::ExcludesEverything(2))
        );
        assert_eq!(expand("a.{op}", &m, &[], &[ex("load")]).unwrap().len(), 1);
    }

    #[test]
    fn excludes_are_applied_in_linear_time() {
        // Issue 10: 100k cases × 50k excludes took a minute when every case was compared with
        // every exclude.
        let m = ranges(2, 316);
        let excludes: Vec<BTreeMap<String, Value>> = (0..50_000i64)
            .map(|i| {
                [
                    ("k0".to_string(), json!(i % 316)),
                    ("k1".to_string(), json!((i / 316) % 316)),
                ]
                .into()
            })
            .collect();
        let t0 = std::time::Instant::now();
        let out = expand(&template(2), &m, &[], &excludes).unwrap();
        assert_eq!(out.len(), 316 * 316 - 50_000);
        assert!(t0.elapsed().as_secs() < 20, "{:?}", t0.elapsed());
    }

    #[test]
    fn axis_errors_say_what_an_axis_may_be() {
        let e =
            crate::suite::from_yaml::<BTreeMap<String, Axis>>("a: {rang: [0, 3]}\n").unwrap_err();
        assert!(!e.2.contains("untagged"), "{e:?}");
        assert!(
            e.2.contains("{range: [lo, hi]}") && e.2.contains("`rang`"),
            "{e:?}"
        );
        let e = crate::suite::from_yaml::<BTreeMap<String, Axis>>("a: {range: [0, 3, 4]}\n")
            .unwrap_err();
        assert!(e.2.contains("3 values") && e.2.contains("lo < hi"), "{e:?}");
        let e = crate::suite::from_yaml::<BTreeMap<String, Axis>>("a: 7\n").unwrap_err();
        assert!(e.2.contains("list of values"), "{e:?}");
    }

    #[test]
    fn no_matrix_gives_one_case() {
        assert_eq!(
            expand("abi.one", &BTreeMap::new(), &[], &[]).unwrap().len(),
            1
        );
    }
}
