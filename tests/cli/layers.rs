//! The core's modules import one another one way only: no cycle between
//! the top-level modules of `src/` (test code aside), and each module only
//! reaches modules at or below its place in the documented order (README's
//! Architecture section), so a new upward import fails here by name. Inside
//! `store`, the files (one aggregate or concern each) import one another
//! without a circle either.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The core's modules, lowest first (README, Architecture).
const ORDER: &[&str] = &[
    "env",
    "secrets",
    "hex",
    "text",
    "visible",
    "markers",
    "clock",
    "domain",
    "dirs",
    "workspace",
    "busy",
    "metrics",
    "portfolio",
    "llm",
    "telemetry",
    "store",
    "caps",
    "skills",
    "media",
    "memory",
    "tools",
    "approvals",
    "tasks",
    "mcp",
    "models",
    "identity",
    "chats",
    "agent",
    "heartbeat",
    "gateway",
    "health",
    "web",
    "wiring",
    "config",
    "app",
    "cli",
    "fuzzing",
];

/// `crate::<module>` references of every top-level module, outside tests
/// and comments: module → (module it uses → a file that does).
fn imports() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let top = rel
                .split('/')
                .next()
                .unwrap()
                .trim_end_matches(".rs")
                .to_owned();
            let is_test =
                name.ends_with("_props.rs") || name.ends_with("_tests.rs") || name == "tests.rs";
            if !rel.ends_with(".rs") || is_test || top == "lib" || top == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = without_tests(&text);
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (at, _) in line.match_indices("crate::") {
                    let used: String = line[at + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect();
                    if !used.is_empty() && used != top {
                        out.entry(top.clone())
                            .or_default()
                            .entry(used)
                            .or_insert(rel.clone());
                    }
                }
            }
        }
    }
    out
}

/// `text` up to its `#[cfg(test)] mod tests` (attributes between allowed).
fn without_tests(text: &str) -> &str {
    let mut offset = 0;
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let after = lines.clone().map(str::trim).find(|l| !l.starts_with("#["));
            if after.is_some_and(|l| l.starts_with("mod tests")) {
                return &text[..offset];
            }
        }
        offset += line.len();
    }
    text
}

#[test]
fn core_modules_import_downward_only() {
    let rank: BTreeMap<&str, usize> = ORDER.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let imports = imports();
    let unplaced: BTreeSet<&String> = imports
        .keys()
        .filter(|m| !rank.contains_key(m.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "place these modules in ORDER (and README): {unplaced:?}"
    );
    let mut upward = Vec::new();
    for (from, used) in &imports {
        for (to, file) in used {
            if let (Some(a), Some(b)) = (rank.get(from.as_str()), rank.get(to.as_str())) {
                if b > a {
                    upward.push(format!("{from} → {to} (src/{file})"));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports against the module order (a cycle waiting to happen):\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_check_sees_imports_and_skips_tests_and_comments() {
    let text = "use crate::store::Store;\n// crate::web in a comment\nfn f() {}\n#[cfg(test)]\n#[allow(x)]\nmod tests {\n use crate::app::X;\n}\n";
    let code = without_tests(text);
    assert!(
        code.contains("crate::store") && !code.contains("crate::app"),
        "{code}"
    );
    let imports = imports();
    assert!(
        imports["gateway"].contains_key("store"),
        "the gateway uses the store"
    );
    assert!(imports["agent"].contains_key("llm"));
}

/// The files of `src/store` (but `mod.rs`, the facade) and which of them each
/// one imports, outside tests and comments: `super::file::…`, or a name
/// `mod.rs` re-exports from a file (`use super::{SessionId, …}`).
fn store_imports() -> BTreeMap<String, BTreeSet<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".rs").map(str::to_owned))
        .filter(|n| n != "mod")
        .collect();
    let facade = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
    let mut exported: BTreeMap<String, String> = BTreeMap::new();
    for (at, _) in facade.match_indices("use ") {
        let rest = &facade[at + 4..];
        let statement = &rest[..rest.find(';').unwrap()];
        if let Some((file, names)) = statement.split_once("::") {
            if files.contains(file) {
                for name in words(names) {
                    exported.insert(name, file.to_owned());
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(dir.join(format!("{file}.rs"))).unwrap();
        let code: String = without_tests(&text)
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut used = BTreeSet::new();
        for (at, _) in code.match_indices("super::") {
            let rest = &code[at + 7..];
            let named = if rest.starts_with('{') {
                &rest[1..rest.find('}').unwrap()]
            } else {
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                &rest[..end]
            };
            for name in words(named) {
                if files.contains(&name) {
                    used.insert(name);
                } else if let Some(from) = exported.get(&name) {
                    used.insert(from.clone());
                }
            }
        }
        used.remove(file);
        out.insert(file.clone(), used);
    }
    out
}

/// The identifiers in `text` (a `use` list, a path).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A circle in `graph`, as the files along it, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut found = path[start..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn store_files_import_one_another_without_a_circle() {
    let graph = store_imports();
    assert!(
        graph["console_lists"].contains("tasks") && graph["feedback"].contains("memories"),
        "the check sees the store's imports: {graph:?}"
    );
    if let Some(found) = circle(&graph) {
        panic!(
            "src/store files import one another in a circle: {}",
            found.join(" → ")
        );
    }
}

#[test]
fn a_circle_is_found_and_named() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(circle(&graph).unwrap(), ["a", "b", "c", "a"]);
    let mut acyclic = graph.clone();
    acyclic.get_mut("c").unwrap().clear();
    assert_eq!(circle(&acyclic), None);
}
