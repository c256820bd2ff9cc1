//! The crate's top-level modules form no import cycle: a module reaches only modules below it
//! (cli → areas → runner/report → spec areas → suite → area contract → shared readers and
//! backends). Edges are read from the source text: every `crate::m` path and every name in a
//! `use crate::{m, ...}` group, outside comments and `#[cfg(test)]` code, in a file of another top-level
//! module. The same holds one level down, at every level: the submodules of one module (each
//! with its own submodules) form no cycle either (`any_level_has_no_import_cycle`); a parent
//! and its children may use each other (a `mod.rs` re-exporting a child is the parent's API).
//!
//! Below the harness sit the workspace's own crates (`crates/*`: the PTX reader, bounded input and YAML reading, litmus
//! tests and the memory model, the results.json schema): each is a
//! default member (so a plain `cargo test` tests it), depends on no crate above it (never on
//! the harness), and its modules form no cycle at any level either.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module names that follow `crate::` (directly or inside a `{...}` group).
fn referenced(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    // Code only: comments may name any module.
    let code: String = text
        .split("#[cfg(test)]")
        .next()
        .unwrap_or("")
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let code = code.as_str();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end].split(',').collect()
        } else {
            vec![rest]
        };
        for n in names {
            let n = n.trim();
            let word: String = n
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if modules.contains(&word) {
                out.insert(word);
            }
        }
    }
    out
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        for w in &t.g[v] {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.stack.contains(&w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut c = Vec::new();
            while let Some(w) = t.stack.pop() {
                c.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if c.len() > 1 {
                c.sort();
                t.out.push(c);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// The harness crate's sources.
fn harness_src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = harness_src();
    // Modules compiled only for tests (`#[cfg(test)] mod tests;` in a file of its own) are
    // test code, as a `#[cfg(test)]` block inside a file is.
    let files: Vec<std::path::PathBuf> = module_files(&src).into_values().collect();
    let top = |p: &Path| -> Option<String> {
        let rel = p.strip_prefix(&src).ok()?;
        let first = rel.components().next()?.as_os_str().to_string_lossy();
        let name = first.trim_end_matches(".rs").to_string();
        (name != "lib" && name != "main").then_some(name)
    };
    let modules: BTreeSet<String> = files.iter().filter_map(|p| top(p)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for f in &files {
        let Some(m) = top(f) else { continue };
        let text = std::fs::read_to_string(f).unwrap();
        for r in referenced(&text, &modules) {
            if r != m {
                graph.get_mut(&m).unwrap().insert(r);
            }
        }
    }
    graph
}

#[test]
fn top_level_modules_have_no_import_cycle() {
    let graph = module_graph();
    assert!(graph.len() > 10, "found the crate's modules: {graph:?}");
    let c = cycles(&graph);
    assert!(c.is_empty(), "import cycles among modules: {c:?}");
}

#[test]
fn the_layers_point_down() {
    let graph = module_graph();
    // The suite model, the area contract, the runner and the backends know no spec area.
    let areas = [
        "abi",
        "xcall",
        "syscalls",
        "atomics",
        "dwarf",
        "gpudirect",
        "selftest",
    ];
    for lower in [
        "suite",
        "area",
        "runner",
        "backend",
        "capability",
        "waivers",
        "outcome",
    ] {
        for a in areas {
            assert!(
                !graph[lower].contains(a),
                "`{lower}` depends on the area `{a}`"
            );
        }
    }
    assert!(
        graph["cli"].contains("areas"),
        "the binary's top assembles the areas"
    );
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    // The detector itself, on a graph whose answer is known by construction.
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.insert("a".into(), ["b".to_string()].into());
    g.insert("b".into(), ["c".to_string()].into());
    g.insert("c".into(), ["a".to_string()].into());
    g.insert("d".into(), ["a".to_string()].into());
    assert_eq!(
        cycles(&g),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
}

/// A module path inside the crate (`[]` is the root, `["abi", "lint"]` is `abi::lint`).
type ModPath = Vec<String>;

/// Every module of the crate whose sources are `src` (its `lib.rs`/`main.rs` the root) and
/// its file, without modules compiled only for tests (`#[cfg(test)] mod x;`) and their
/// submodules.
fn module_files(src: &Path) -> BTreeMap<ModPath, std::path::PathBuf> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut mods = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap().with_extension("");
        let mut path: ModPath = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if path.last().is_some_and(|l| l == "mod") || path == ["lib"] || path == ["main"] {
            path.pop();
        }
        mods.insert(path, f);
    }
    let mut test_only = Vec::new();
    for (m, f) in &mods {
        let text = std::fs::read_to_string(f).unwrap();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("#[cfg(test)]") {
            rest = &rest[i + "#[cfg(test)]".len()..];
            let decl = rest.trim_start();
            let decl = decl.strip_prefix("pub ").unwrap_or(decl);
            if let Some(d) = decl.strip_prefix("mod ") {
                let name: String = d
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if d[name.len()..].trim_start().starts_with(';') {
                    let mut child = m.clone();
                    child.push(name);
                    test_only.push(child);
                }
            }
        }
    }
    mods.retain(|m, _| !test_only.iter().any(|t| m.starts_with(t)));
    mods
}

/// A file's code without its tests (everything after the first `#[cfg(test)]`) and comments.
fn code_of(text: &str) -> String {
    text.split("#[cfg(test)]")
        .next()
        .unwrap_or("")
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `a::b::c` path written in `code`, with `use` groups (`a::{b, c::{d}}`) expanded.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    fn expand(prefix: &str, body: &str, out: &mut Vec<String>) {
        let Some(open) = body.find('{') else {
            out.push(format!("{prefix}{body}"));
            return;
        };
        let close = body.rfind('}').filter(|&c| c > open).unwrap_or(body.len());
        let head = format!("{prefix}{}", &body[..open]);
        let inner = &body[open + 1..close];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&head, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&head, &inner[start..], out);
    }
    let mut texts = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("use ") {
        let before_ok = i == 0 || !rest[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        rest = &rest[i + 4..];
        if before_ok {
            if let Some(end) = rest.find(';') {
                let stmt: String = rest[..end].chars().filter(|c| !c.is_whitespace()).collect();
                expand("", &stmt, &mut texts);
            }
        }
    }
    // Paths used inline (`crate::x::f()`, `super::y::T`).
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let word_start = chars[i].is_alphabetic() || chars[i] == '_';
        if word_start && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')) {
            let mut j = i;
            while j < chars.len()
                && (chars[j].is_alphanumeric() || chars[j] == '_' || chars[j] == ':')
            {
                j += 1;
            }
            let p: String = chars[i..j].iter().collect();
            if p.contains("::") {
                texts.push(p);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    texts
        .iter()
        .map(|t| {
            t.split(" as ")
                .next()
                .unwrap_or("")
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// The module a path written in module `cur` names (the longest module prefix), if it is one
/// of the crate's.
fn resolve(
    cur: &ModPath,
    path: &[String],
    mods: &BTreeMap<ModPath, std::path::PathBuf>,
) -> Option<ModPath> {
    let (mut base, mut rest) = match path[0].as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "super" | "self" => (cur.clone(), path),
        _ => (cur.clone(), path),
    };
    while let Some(first) = rest.first() {
        match first.as_str() {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    if path[0] != "crate" && path[0] != "super" && path[0] != "self" {
        // A bare path starts at a child module of `cur` (or names another crate).
        let mut child = cur.clone();
        child.push(path[0].clone());
        if !mods.contains_key(&child) {
            return None;
        }
    }
    // The crate root is every module's ancestor, never a sibling: it is not an edge.
    let mut best = None;
    let mut m = base;
    if !m.is_empty() && mods.contains_key(&m) {
        best = Some(m.clone());
    }
    for seg in rest {
        m.push(seg.clone());
        if mods.contains_key(&m) {
            best = Some(m.clone());
        } else {
            break;
        }
    }
    best
}

#[test]
fn any_level_has_no_import_cycle() {
    let mods = module_files(&harness_src());
    assert!(
        mods.contains_key(&vec!["abi".to_string(), "lint".to_string()]),
        "found the crate's submodules: {:?}",
        mods.keys().take(5).collect::<Vec<_>>()
    );
    let (levels, found) = submodule_cycles(&mods);
    assert!(levels > 10, "checked {levels} levels");
    assert!(found.is_empty(), "import cycles: {found:#?}");
}

/// How many levels (modules with two or more submodules) `mods` has, and the import cycles
/// among the submodules of each.
fn submodule_cycles(mods: &BTreeMap<ModPath, std::path::PathBuf>) -> (usize, Vec<String>) {
    let mut edges: BTreeSet<(ModPath, ModPath)> = BTreeSet::new();
    for (m, f) in mods {
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        for p in paths_in(&code) {
            if let Some(to) = resolve(m, &p, mods) {
                if &to != m {
                    edges.insert((m.clone(), to));
                }
            }
        }
    }
    let parents: BTreeSet<ModPath> = mods
        .keys()
        .filter(|m| !m.is_empty())
        .map(|m| m[..m.len() - 1].to_vec())
        .collect();
    let mut found = Vec::new();
    let mut levels = 0;
    for parent in &parents {
        let under = |m: &ModPath| m.len() > parent.len() && m.starts_with(parent);
        let mut graph: BTreeMap<String, BTreeSet<String>> = mods
            .keys()
            .filter(|m| under(m))
            .map(|m| (m[parent.len()].clone(), BTreeSet::new()))
            .collect();
        if graph.len() < 2 {
            continue;
        }
        levels += 1;
        for (a, b) in &edges {
            if under(a) && under(b) && a[parent.len()] != b[parent.len()] {
                graph
                    .get_mut(&a[parent.len()])
                    .unwrap()
                    .insert(b[parent.len()].clone());
            }
        }
        for c in cycles(&graph) {
            found.push(format!("under `{}`: {c:?}", parent.join("::")));
        }
    }
    (levels, found)
}

#[test]
fn path_resolution_finds_each_form() {
    // The edge reader on known text: a cycle it cannot see would pass the test above.
    let mods: BTreeMap<ModPath, std::path::PathBuf> = [
        vec![],
        vec!["a".to_string()],
        vec!["a".to_string(), "x".to_string()],
        vec!["a".to_string(), "y".to_string()],
        vec!["b".to_string()],
    ]
    .into_iter()
    .map(|m| (m, std::path::PathBuf::new()))
    .collect();
    let x = vec!["a".to_string(), "x".to_string()];
    let code = code_of(
        "use super::y::{T, U};\nuse crate::{b, a::{y::V}};\nfn f() { super::super::b::g(); }\n// use crate::nothing;\n#[cfg(test)]\nuse crate::b::Z;",
    );
    let targets: BTreeSet<ModPath> = paths_in(&code)
        .iter()
        .filter_map(|p| resolve(&x, p, &mods))
        .collect();
    let want: BTreeSet<ModPath> = [
        vec!["a".to_string(), "y".to_string()],
        vec!["b".to_string()],
    ]
    .into_iter()
    .collect();
    assert_eq!(targets, want);
}

/// The workspace root (the harness's parent directory).
fn workspace_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The quoted strings of the array `key = [...]` in `manifest` (`members`, `default-members`).
fn string_array(manifest: &str, key: &str) -> Vec<String> {
    let Some(at) = manifest
        .lines()
        .position(|l| l.split('=').next().is_some_and(|k| k.trim() == key))
    else {
        return Vec::new();
    };
    let rest: String = manifest.lines().skip(at).collect::<Vec<_>>().join("\n");
    let open = rest.find('[').unwrap_or(0);
    let close = rest.find(']').unwrap_or(rest.len());
    rest[open..close]
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The `[package] name` of a manifest.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for l in manifest.lines().map(str::trim) {
        if l.starts_with('[') {
            in_package = l == "[package]";
        } else if in_package {
            if let Some(v) = l.strip_prefix("name") {
                let v = v.trim_start().strip_prefix('=')?.trim();
                return Some(v.trim_matches('"').to_string());
            }
        }
    }
    None
}

/// The packages a manifest depends on, in any `*dependencies` table (a renamed dependency's
/// `package = "..."` is the package).
fn dependencies(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_deps = false;
    for l in manifest.lines().map(str::trim) {
        if l.starts_with('[') {
            let table = l.trim_matches(|c| c == '[' || c == ']');
            in_deps = table.ends_with("dependencies");
            continue;
        }
        if !in_deps || l.starts_with('#') {
            continue;
        }
        let Some((key, value)) = l.split_once('=') else {
            continue;
        };
        let package = value
            .split_once("package")
            .and_then(|(_, v)| v.split('"').nth(1))
            .unwrap_or(key.trim());
        out.insert(package.to_string());
    }
    out
}

#[test]
fn the_workspace_crates_sit_below_the_harness() {
    let root = workspace_root();
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = string_array(&workspace, "members");
    let defaults = string_array(&workspace, "default-members");
    let harness = package_name(&std::fs::read_to_string(root.join("harness/Cargo.toml")).unwrap())
        .expect("the harness's package name");
    let crates: Vec<String> = members
        .iter()
        .filter(|m| m.starts_with("crates/"))
        .cloned()
        .collect();
    for c in ["crates/ptx", "crates/litmus", "crates/input"] {
        assert!(
            crates.iter().any(|m| m == c),
            "{c} is a workspace crate: {members:?}"
        );
    }
    for c in &crates {
        assert!(
            defaults.contains(c),
            "{c} is not a default member: a plain `cargo test` would not test it"
        );
        let manifest = std::fs::read_to_string(root.join(c).join("Cargo.toml")).unwrap();
        let deps = dependencies(&manifest);
        assert!(
            !deps.contains(&harness),
            "{c} depends on the harness ({harness}), which sits above it"
        );
        let src = root.join(c).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in &files {
            let code = code_of(&std::fs::read_to_string(f).unwrap());
            let named = paths_in(&code).into_iter().find(|p| p[0] == harness);
            assert!(named.is_none(), "{}: names {named:?}", f.display());
        }
        let (_, found) = submodule_cycles(&module_files(&src));
        assert!(found.is_empty(), "{c}: import cycles: {found:#?}");
    }
}

#[test]
fn manifest_reading_finds_each_form() {
    // The manifest reader on known text: a dependency it cannot see would pass the test above.
    let manifest = "[package]\nname = \"low\"\nversion = \"0.1.0\"\n\n[dependencies]\n\
        serde = { version = \"1\" }\n# gpucts = \"0\"\nup = { package = \"gpucts\", path = \"../h\" }\n\n\
        [target.'cfg(unix)'.dev-dependencies]\nlibc = \"0.2\"\n\n[features]\nx = []\n\n\
        [workspace]\nmembers = [\n    \"a\",\n    \"crates/b\",\n]\ndefault-members = [\"a\"]\n";
    assert_eq!(package_name(manifest).as_deref(), Some("low"));
    let want: BTreeSet<String> = ["gpucts", "libc", "serde"].map(String::from).into();
    assert_eq!(dependencies(manifest), want);
    assert_eq!(string_array(manifest, "members"), ["a", "crates/b"]);
    assert_eq!(string_array(manifest, "default-members"), ["a"]);
}
