//! Matrix expansion: one entry with `matrix: {a: [..], b: {range: [lo, hi]}}` becomes the
//! cartesian product of its values, crossed with the rows of `table:` (explicit parameter sets,
//! for values that go together, like a type and its size), minus the combinations listed under
//! `exclude:`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One axis of a matrix: an explicit list of scalars or an integer range `[lo, hi)`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Axis {
    List(Vec<Value>),
    Range { range: [i64; 2] },
}

/// The values chosen for one expanded case.
pub type Params = BTreeMap<String, Value>;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MatrixError {
    #[error(
        "matrix key `{0}` does not appear in the id as `{{{0}}}`, so expanded ids would repeat"
    )]
    KeyNotInId(String),
    #[error("id uses `{{{0}}}` but the matrix has no key `{0}`")]
    UnknownPlaceholder(String),
    #[error("matrix axis `{0}` is empty")]
    EmptyAxis(String),
    #[error("matrix value for `{key}` must be a string, number or boolean, found {found}")]
    NotScalar { key: String, found: String },
    #[error("exclude entry names `{0}`, which is not a matrix key")]
    UnknownExcludeKey(String),
    #[error("table row {row} has no value for `{key}`, which the id uses")]
    TableRowMissing { row: usize, key: String },
    #[error("`{0}` is both a matrix key and a table column")]
    KeyInBoth(String),
    #[error("matrix expands to more than {0} cases")]
    TooLarge(usize),
}

const MAX_CASES_PER_ENTRY: usize = 100_000;

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
pub fn substitute_text(text: &str, params: &Params) -> String {
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
pub fn substitute_value(value: &Value, params: &Params) -> Value {
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
    let table_keys: std::collections::BTreeSet<&String> =
        table.iter().flat_map(|r| r.keys()).collect();
    for k in &table_keys {
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
    // Table values may be lists or maps (substituted whole); those named in the id must be
    // scalars so the id reads well.
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
    let mut axes: Vec<(String, Vec<Value>)> = Vec::new();
    for (key, axis) in matrix {
        if !id_template.contains(&format!("{{{key}}}")) {
            return Err(MatrixError::KeyNotInId(key.clone()));
        }
        let values: Vec<Value> = match axis {
            Axis::List(v) => v.clone(),
            Axis::Range { range: [lo, hi] } => (*lo..*hi).map(Value::from).collect(),
        };
        if values.is_empty() {
            return Err(MatrixError::EmptyAxis(key.clone()));
        }
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
    for ex in exclude {
        for k in ex.keys() {
            if !matrix.contains_key(k) && !table_keys.contains(k) {
                return Err(MatrixError::UnknownExcludeKey(k.clone()));
            }
        }
    }
    let total: usize = axes.iter().map(|(_, v)| v.len()).product::<usize>() * table.len().max(1);
    if total > MAX_CASES_PER_ENTRY {
        return Err(MatrixError::TooLarge(MAX_CASES_PER_ENTRY));
    }
    let mut out: Vec<Params> = if table.is_empty() {
        vec![Params::new()]
    } else {
        table.to_vec()
    };
    for (key, values) in &axes {
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
    out.retain(|p| {
        !exclude
            .iter()
            .any(|ex| ex.iter().all(|(k, v)| p.get(k) == Some(v)))
    });
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

    #[test]
    fn no_matrix_gives_one_case() {
        assert_eq!(
            expand("abi.one", &BTreeMap::new(), &[], &[]).unwrap().len(),
            1
        );
    }
}
