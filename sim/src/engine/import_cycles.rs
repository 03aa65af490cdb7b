//! No module of the engine imports one that imports it back (issue 29's rooms): a circle makes
//! every module of it a part of every other, so none can be read, tested or moved alone. The
//! test reads the source of `sim/src/engine` and follows every reference from one room to a
//! sibling: `use super::x`, `use super::{x, y::Z}`, a path `super::x::f` or `crate::engine::x::f`
//! in code (comments are skipped: a doc link is not an import). `mod.rs` is the engine's face,
//! which declares the rooms and re-exports what the crate sees; it is not a room, so a room's
//! `use super::Observer` (an item of `mod.rs`) is no edge. This file is skipped: its test data
//! names rooms.

use std::collections::{BTreeMap, BTreeSet};

/// Each file of the engine but `mod.rs` and this one, as (module name, source).
fn rooms() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("sim/src/engine is readable") {
        let path = entry.expect("a directory entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs") && stem != "mod" && stem != "import_cycles" {
            let text = std::fs::read_to_string(&path).expect("an engine file is readable");
            out.push((stem.to_string(), text));
        }
    }
    out.sort();
    out
}

/// `text` without its `//` comments (doc comments included).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |at| &l[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The sibling modules (of `names`) that `text` refers to.
fn imports(text: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let code = code_of(text);
    let mut out = BTreeSet::new();
    for prefix in ["super::", "crate::engine::"] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(prefix) {
            // `xsuper::` is not `super::`
            let before = rest[..at].chars().next_back();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            if let Some(group) = rest.strip_prefix('{') {
                // `{a, b::{C, D}, e::F}`: the first name of each part at the top level
                let mut depth = 0;
                let mut start = true;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => start = true,
                        c if start && (c.is_alphanumeric() || c == '_') => {
                            out.insert(ident_at(&group[i..]).to_string());
                            start = false;
                        }
                        _ => {}
                    }
                }
            } else {
                out.insert(ident_at(rest).to_string());
            }
        }
    }
    out.retain(|n| names.contains(n));
    out
}

/// Every circle of the graph, each as `a -> b -> a`, found by a depth-first walk in name order
/// (so the report is the same on every run).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn walk(
        at: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<String>,
    ) {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut circle = path[i..].to_vec();
            circle.push(at.to_string());
            found.push(circle.join(" -> "));
            return;
        }
        if done.contains(at) {
            return;
        }
        path.push(at.to_string());
        for next in graph.get(at).into_iter().flatten() {
            walk(next, graph, path, done, found);
        }
        path.pop();
        done.insert(at.to_string());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for start in graph.keys() {
        walk(start, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn no_room_imports_one_that_imports_it_back() {
    let rooms = rooms();
    let names: BTreeSet<String> = rooms.iter().map(|(n, _)| n.clone()).collect();
    let expected = [
        "accounting",
        "bandwidth",
        "banks",
        "code",
        "compile",
        "compile_costs",
        "compile_opnds",
        "compiled",
        "context",
        "costs",
        "gm_runs",
        "l2_order",
        "memory",
        "pipes",
        "queue",
        "result",
        "scalar",
        "scheduler",
        "seg_index",
        "state",
        "sync",
    ];
    assert!(
        expected.iter().all(|n| names.contains(*n)),
        "the engine's files were not found: {names:?}"
    );
    let graph: BTreeMap<String, BTreeSet<String>> = rooms
        .iter()
        .map(|(n, text)| {
            let mut to = imports(text, &names);
            to.remove(n);
            (n.clone(), to)
        })
        .collect();
    // the rooms the others are built on stand alone
    assert!(graph["code"].is_empty(), "code imports {:?}", graph["code"]);
    // a core's and a run's state know nothing of the rooms that act on them: each of those
    // adds its own methods to `Core`, so a behaviour moves without touching the state's file
    let acting = [
        "accounting",
        "costs",
        "pipes",
        "scalar",
        "scheduler",
        "sync",
    ];
    for data in ["queue", "state", "context"] {
        let wrong: Vec<&String> = graph[data]
            .iter()
            .filter(|n| acting.contains(&n.as_str()))
            .collect();
        assert!(
            wrong.is_empty(),
            "{data} imports the acting rooms {wrong:?}"
        );
    }
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "engine modules import each other in a circle: {}",
        found.join("; ")
    );
}

#[test]
fn imports_are_read_from_uses_groups_and_paths() {
    let names: BTreeSet<String> = ["banks", "code", "compile", "memory", "result"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let text = "use super::banks::{self, Scratch};\n\
                use super::{code::{Opnd, Val},\n    Observer, result::Stall};\n\
                /// [`super::memory::runs_of`] is a doc link, not an import\n\
                fn f() { crate::engine::compile::compile(); let x = mysuper::memory::f(); }\n\
                mod tests { use super::*; }";
    let got: Vec<String> = imports(text, &names).into_iter().collect();
    assert_eq!(got, ["banks", "code", "compile", "result"]);
}

#[test]
fn a_circle_is_found_and_named() {
    let g = |edges: &[(&str, &str)]| {
        let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            m.entry(a.to_string()).or_default().insert(b.to_string());
            m.entry(b.to_string()).or_default();
        }
        m
    };
    // the engine before issue 29's first room: compile and banks, compile and memory
    let before = g(&[
        ("compile", "banks"),
        ("banks", "compile"),
        ("compile", "memory"),
        ("memory", "compile"),
        ("exec", "compile"),
    ]);
    // the walk starts at the first name, banks
    assert_eq!(
        cycles(&before),
        ["banks -> compile -> banks", "compile -> memory -> compile"]
    );
    let long = g(&[("a", "b"), ("b", "c"), ("c", "a")]);
    assert_eq!(cycles(&long), ["a -> b -> c -> a"]);
    let after = g(&[
        ("compile", "banks"),
        ("banks", "code"),
        ("compile", "code"),
        ("memory", "code"),
        ("exec", "compile"),
        ("exec", "memory"),
    ]);
    assert!(cycles(&after).is_empty());
}
