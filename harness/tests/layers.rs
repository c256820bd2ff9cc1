//! The crate's top-level modules form no import cycle: a module reaches only modules below it
//! (cli → areas → runner/report → spec areas → suite → area contract → shared readers and
//! backends). Edges are read from the source text: every `crate::m` path and every name in a
//! `use crate::{m, ...}` group, outside comments and `#[cfg(test)]` code, in a file of another top-level
//! module. Cycles inside one module (a parent and its children) are not this test's concern.

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

fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
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
