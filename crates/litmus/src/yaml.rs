//! The YAML form of a test: reading with every error at a line and column, and writing.

use serde::Deserialize;

use super::{InvalidTest, LitmusTest, YamlError};

/// Where each thread's operations and the condition stand in a YAML test, for the errors
/// found after parsing (`ld` with `.release`, an unknown register): read leniently, second.
#[derive(Deserialize)]
struct Positions {
    name: Option<serde_saphyr::Spanned<serde::de::IgnoredAny>>,
    description: Option<serde_saphyr::Spanned<serde::de::IgnoredAny>>,
    #[serde(default)]
    locations: Vec<serde_saphyr::Spanned<serde::de::IgnoredAny>>,
    #[serde(default)]
    threads: Vec<serde_saphyr::Spanned<ThreadPositions>>,
    condition: Option<serde_saphyr::Spanned<serde::de::IgnoredAny>>,
}

#[derive(Deserialize)]
struct ThreadPositions {
    #[serde(default)]
    ops: Vec<serde_saphyr::Spanned<serde::de::IgnoredAny>>,
}

/// Reads a test from YAML text. Every error carries line and column: parse errors from the
/// reader, validation errors (`P1 op 2: ...`) at the operation or the condition they name.
pub fn from_yaml(text: &str) -> Result<LitmusTest, YamlError> {
    let t: LitmusTest = gpucts_input::from_yaml(text)
        .map_err(|(line, column, what)| YamlError::Syntax { line, column, what })?;
    t.validate()
        .and_then(|()| listed_locations_only(&t))
        .map_err(|source| {
            let pos: Option<Positions> = gpucts_input::from_yaml(text).ok();
            let span = |s: &serde_saphyr::Spanned<serde::de::IgnoredAny>| {
                (s.referenced.line(), s.referenced.column())
            };
            let at = match &source {
                InvalidTest::Op { thread, op, .. } => pos
                    .as_ref()
                    .and_then(|p| p.threads.get(*thread)?.value.ops.get(op.checked_sub(1)?))
                    .map(span),
                InvalidTest::Condition(_) => {
                    pos.as_ref().and_then(|p| p.condition.as_ref()).map(span)
                }
                InvalidTest::Name(_) => pos.as_ref().and_then(|p| p.name.as_ref()).map(span),
                InvalidTest::Description(_) => {
                    pos.as_ref().and_then(|p| p.description.as_ref()).map(span)
                }
                InvalidTest::Location { index, .. } => {
                    pos.as_ref().and_then(|p| p.locations.get(*index)).map(span)
                }
                InvalidTest::Thread { index, .. } => pos.as_ref().and_then(|p| {
                    let t = p.threads.get(*index)?;
                    Some((t.referenced.line(), t.referenced.column()))
                }),
                InvalidTest::Test(_) => None,
            };
            let (line, column) = at.unwrap_or((1, 1));
            YamlError::Invalid {
                line,
                column,
                source,
            }
        })?;
    Ok(t)
}

/// A YAML test that lists its `locations:` lists every one it uses: a misspelt name would
/// otherwise be a fresh location starting at 0 and silently change the test (an MP whose
/// flag store goes elsewhere becomes forbidden). A test that lists none keeps the implicit
/// locations of the Dat3M format, each starting at 0.
fn listed_locations_only(t: &LitmusTest) -> Result<(), InvalidTest> {
    if t.locations.is_empty() {
        return Ok(());
    }
    let listed: std::collections::HashSet<&str> =
        t.locations.iter().map(|l| l.name.as_str()).collect();
    for (thread, th) in t.threads.iter().enumerate() {
        for (oi, op) in th.ops.iter().enumerate() {
            let Some(loc) = op.loc() else { continue };
            if !listed.contains(loc) {
                let listed: Vec<&str> = t.locations.iter().map(|l| l.name.as_str()).collect();
                return Err(InvalidTest::Op {
                    thread,
                    op: oi + 1,
                    what: format!(
                        "location `{loc}` is not listed under `locations:` ({}); list it, \
                         or list none to let every location start at 0",
                        listed.join(", ")
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Writes a test as YAML.
pub fn to_yaml(test: &LitmusTest) -> Result<String, serde_saphyr::SerializeError> {
    serde_saphyr::to_string(test)
}
