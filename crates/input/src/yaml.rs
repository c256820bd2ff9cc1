//! The YAML reading every gpucts file shares: strict options, and the reader's messages
//! rewritten in the file's own terms.

/// The key written on `line` of `text` before `column` (`  - clause:` gives `clause`), for
/// naming the field a YAML error is about.
fn field_at(text: &str, line: u64, column: u64) -> Option<String> {
    let l = text
        .lines()
        .nth(usize::try_from(line.checked_sub(1)?).ok()?)?;
    let upto: String = l
        .chars()
        .take(usize::try_from(column).unwrap_or(usize::MAX))
        .collect();
    // The last `key:` before the column; else the line's first key.
    let key_of = |s: &str| -> Option<String> {
        let s = s.trim_end();
        let s = s.strip_suffix(':')?;
        // The byte after the last non-key character (which may be several bytes long: a fuzz
        // input with `§` before a colon panicked on a char boundary).
        let start = s
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
            .map(|(i, c)| i + c.len_utf8())
            .unwrap_or(0);
        let k = &s[start..];
        (!k.is_empty()).then(|| k.to_string())
    };
    if let Some(i) = upto.rfind(':') {
        if let Some(k) = key_of(&upto[..=i]) {
            return Some(k);
        }
    }
    let t = l.trim_start().trim_start_matches("- ").trim_start();
    let end = t.find(':')?;
    key_of(&t[..=end])
}

/// A YAML reader's message rewritten in the file format's terms: no library advice ("set
/// DuplicateKeyPolicy in Options", "use Option<String>", "untagged enum"), the field named
/// (from the source line), and what the field allows when `help` knows it.
pub fn explain(
    text: &str,
    line: u64,
    column: u64,
    msg: &str,
    help: fn(&str) -> Option<&'static str>,
) -> String {
    let field = field_at(text, line, column);
    let named = |f: &Option<String>| {
        f.as_ref()
            .map(|f| format!("`{f}`"))
            .unwrap_or_else(|| "this value".to_string())
    };
    let allowed = |f: &Option<String>| {
        f.as_deref()
            .and_then(help)
            .map(|h| format!("; {h}"))
            .unwrap_or_default()
    };
    if let Some(rest) = msg.strip_prefix("duplicate mapping key") {
        let key = rest
            .trim_start_matches(':')
            .split(',')
            .next()
            .unwrap_or("")
            .trim();
        return if key.is_empty() {
            "duplicate key: a key is given twice in one mapping; each key may appear once"
                .to_string()
        } else {
            format!(
                "duplicate key: `{key}` is given twice in one mapping; each key may appear once"
            )
        };
    }
    if msg.contains("cannot deserialize null") {
        let h = allowed(&field);
        return if h.is_empty() {
            format!("{} has no value; write one", named(&field))
        } else {
            format!("{} has no value{h}", named(&field))
        };
    }
    if msg.contains("untagged enum") || msg.contains("did not match any variant") {
        return format!(
            "{} is not of an allowed form{}",
            named(&field),
            allowed(&field)
        );
    }
    if let Some(rest) = msg.strip_prefix("budget breached: ") {
        return format!(
            "the file is too large or too deeply nested for a hand-written file ({}); split it or simplify it",
            rest.replace(['{', '}'], "").trim()
        );
    }
    if let Some(rest) = msg.strip_prefix("unknown field ") {
        let (name, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let expected = expected.trim_start_matches("one of ").replace('`', "");
        return if expected.is_empty() {
            format!("unknown key {name}; no keys are allowed here")
        } else {
            format!("unknown key {name}; allowed keys here: {expected}")
        };
    }
    if let Some(rest) = msg.strip_prefix("missing field ") {
        let f = Some(rest.trim_matches('`').to_string());
        return format!("missing key {rest}{}", allowed(&f));
    }
    if let Some(rest) = msg
        .strip_prefix("invalid type: ")
        .or_else(|| msg.strip_prefix("invalid value: "))
    {
        let (found, expected) = rest.split_once(", expected ").unwrap_or((rest, "?"));
        let h = allowed(&field);
        return if h.is_empty() {
            format!("{}: found {found}; expected {expected}", named(&field))
        } else {
            format!("{}: found {found}{h}", named(&field))
        };
    }
    if msg.contains("in Options") || msg.contains("use String or Cow") {
        return "this value cannot be read as text; write it as a plain or quoted string"
            .to_string();
    }
    if msg.starts_with("invalid boolean") {
        return format!("{}: expected true or false", named(&field));
    }
    // Anything else (`expected sequence start`, ...): the field and what it allows, when known.
    let h = allowed(&field);
    if h.is_empty() {
        msg.to_string()
    } else {
        format!("{}: {msg}{h}", named(&field))
    }
}

/// How every gpucts YAML file is read: duplicate keys are errors, and only YAML 1.2 spellings
/// are booleans (so a matrix value `y` or `no` stays a string).
pub fn yaml_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    o.strict_booleans = true;
    o
}

/// Parse YAML text with [`yaml_options`]; the error is `(line, column, message)`.
pub fn from_yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, (u64, u64, String)> {
    let text = crate::normalize_line_ends(text);
    serde_saphyr::from_str_with_options(&text, yaml_options()).map_err(|e| {
        let (l, c) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        (l, c, explain(&text, l, c, &bare_message(&e), |_| None))
    })
}

/// serde-saphyr's message without its snippet and trailing position (we print `file:line:col`).
pub fn bare_message(e: &serde_saphyr::Error) -> String {
    let msg = e.without_snippet().to_string();
    let first = msg.lines().next().unwrap_or("").trim();
    match first.rfind(" at line ") {
        Some(i) => first[..i].to_string(),
        None => first.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multibyte_character_before_a_colon_names_no_field_and_does_not_panic() {
        // Found by the fuzz targets: `§1:` and `addϘ:` sliced a multi-byte character. The key
        // is the identifier run just before the colon.
        assert_eq!(field_at("  # §1haracter:", 1, 20), Some("1haracter".into()));
        assert_eq!(field_at("x: a§b:", 1, 8), Some("b".into()));
        // Nothing but `Ϙ` before the second colon: the line's first key.
        assert_eq!(field_at("name: addϘ: x", 1, 12), Some("name".into()));
    }
}
