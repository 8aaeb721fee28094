//! The core's modules import one another one way only: no cycle between
//! the top-level modules of `src/` (test code aside), and each module only
//! reaches modules at or below its place in the documented order (README's
//! Architecture section), so a new upward import fails here by name. Inside
//! `gateway`, `tools`, `mcp`, `web` and `store`, no two parts of a folder
//! import each other in a circle.
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
    "loaded",
    "domain",
    "dirs",
    "workspace",
    "busy",
    "footprint",
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

/// Folders whose parts (sub-folders and files) must not import one another
/// in a circle — nor the files of any folder below them.
const FOLDERS: &[&str] = &["gateway", "tools", "mcp", "web", "store"];

/// Circles not broken yet: (folder, its members). A new circle fails the
/// test, and so does one listed here that is gone (take it off the list).
/// None is left: the sessions run turns through the runner they are given
/// (gateway/session/runner.rs), so session/ names neither turn/ nor commands/.
const KNOWN_CIRCLES: &[(&str, &[&str])] = &[];

/// The module path of a source file (`gateway/turn/mod.rs` → gateway, turn).
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The `crate::…` and `super::…` paths a line names, as module paths from
/// the crate's root (a `{a, b}` group gives one path each).
fn paths_in(line: &str, me: &[String]) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = ["crate::", "super::"]
        .iter()
        .filter_map(|k| line[at..].find(k).map(|i| (at + i, *k)))
        .min()
    {
        let (start, key) = found;
        at = start + key.len();
        let before = &line[..start];
        if before.chars().next_back().is_some_and(ident) || before.ends_with("::") {
            continue;
        }
        let mut base: Vec<String> = if key == "crate::" {
            Vec::new()
        } else {
            me[..me.len().saturating_sub(1)].to_vec()
        };
        let mut rest = &line[at..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                for item in inner.split(',') {
                    let name: String = item.trim().chars().take_while(|c| ident(*c)).collect();
                    match name.as_str() {
                        "" => {}
                        "self" => out.push(base.clone()),
                        _ => out.push([base.clone(), vec![name]].concat()),
                    }
                }
                break;
            }
            let name: String = rest.chars().take_while(|c| ident(*c)).collect();
            if name.is_empty() {
                out.push(base);
                break;
            }
            rest = &rest[name.len()..];
            base.push(name);
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => {
                    out.push(base);
                    break;
                }
            }
        }
    }
    out
}

/// Each folder under `FOLDERS` with the imports between its parts: folder
/// → (part → (part it uses → a file that does)).
type PartImports = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

fn part_imports() -> PartImports {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for folder in FOLDERS {
        let mut stack = vec![src.join(folder)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let rel = path.strip_prefix(&src).unwrap().to_string_lossy();
                let name = path.file_name().unwrap().to_string_lossy();
                let is_test = name.ends_with("_props.rs")
                    || name.ends_with("_tests.rs")
                    || name == "tests.rs";
                if rel.ends_with(".rs") && !is_test {
                    let text = std::fs::read_to_string(&path).unwrap();
                    files.insert(rel.into_owned(), without_tests(&text).to_owned());
                }
            }
        }
    }
    let folders: BTreeSet<String> = files
        .keys()
        .filter_map(|f| f.rsplit_once('/').map(|(d, _)| d.to_owned()))
        .collect();
    let mut out = PartImports::new();
    for folder in folders {
        let depth = folder.split('/').count();
        // Each part of the folder and the files it holds; its `mod.rs` is
        // the folder's face (declarations, re-exports), no part of its own.
        let mut parts: BTreeMap<String, Vec<&String>> = BTreeMap::new();
        for file in files.keys() {
            let module = module_of(file);
            if file.starts_with(&format!("{folder}/")) && module.len() > depth {
                parts.entry(module[depth].clone()).or_default().push(file);
            }
        }
        // What the face re-exports, by name: `use part::…::Name`.
        let mut reexported: BTreeMap<String, String> = BTreeMap::new();
        if let Some(face) = files.get(&format!("{folder}/mod.rs")) {
            for statement in face.split(';') {
                let statement = statement.lines().last().unwrap_or("").trim();
                let Some((_, used)) = statement.split_once("use ") else {
                    continue;
                };
                let Some((part, names)) = used.split_once("::") else {
                    continue;
                };
                if parts.contains_key(part) {
                    for name in names.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                        reexported.entry(name.to_owned()).or_insert(part.to_owned());
                    }
                }
            }
        }
        let edges = out.entry(folder.clone()).or_default();
        let prefix: Vec<String> = folder.split('/').map(str::to_owned).collect();
        for (part, part_files) in &parts {
            edges.entry(part.clone()).or_default();
            for file in part_files {
                let me = module_of(file);
                let code = &files[*file];
                for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                    for path in paths_in(line, &me) {
                        if path.len() <= depth || path[..depth] != prefix[..] {
                            continue;
                        }
                        let name = &path[depth];
                        let used = if parts.contains_key(name) {
                            name
                        } else if let Some(p) = reexported.get(name) {
                            p
                        } else {
                            continue;
                        };
                        if used != part {
                            edges
                                .get_mut(part)
                                .unwrap()
                                .entry(used.clone())
                                .or_insert_with(|| (*file).clone());
                        }
                    }
                }
            }
        }
    }
    out
}

/// The circles of a graph: its groups of two or more parts that reach one
/// another, each sorted.
fn circles(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(part) = stack.pop() {
            for next in edges.get(part).into_iter().flat_map(BTreeMap::keys) {
                if seen.insert(next.clone()) {
                    stack.push(next);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|p| (p, reach(p))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for (part, from) in &reached {
        let circle: Vec<String> = from
            .iter()
            .filter(|other| reached.get(other).is_some_and(|r| r.contains(*part)))
            .cloned()
            .collect();
        if circle.len() > 1 && !out.contains(&circle) {
            out.push(circle);
        }
    }
    out
}

#[test]
fn folders_parts_import_one_another_without_circles() {
    let mut found = Vec::new();
    for (folder, edges) in part_imports() {
        for circle in circles(&edges) {
            let known = KNOWN_CIRCLES
                .iter()
                .any(|(f, members)| *f == folder && *members == circle.as_slice());
            let how: Vec<String> = circle
                .iter()
                .flat_map(|a| {
                    edges[a]
                        .iter()
                        .filter(|(b, _)| circle.contains(b))
                        .map(move |(b, file)| format!("{a} → {b} (src/{file})"))
                })
                .collect();
            found.push((folder.clone(), circle, known, how));
        }
    }
    let new: Vec<String> = found
        .iter()
        .filter(|(_, _, known, _)| !known)
        .map(|(folder, circle, _, how)| format!("{folder}: {circle:?}\n  {}", how.join("\n  ")))
        .collect();
    assert!(
        new.is_empty(),
        "circles between the parts of a folder:\n{}",
        new.join("\n")
    );
    let gone: Vec<String> = KNOWN_CIRCLES
        .iter()
        .filter(|(f, members)| {
            !found
                .iter()
                .any(|(folder, circle, _, _)| folder == f && circle.as_slice() == *members)
        })
        .map(|(f, members)| format!("{f}: {members:?}"))
        .collect();
    assert!(
        gone.is_empty(),
        "these circles are gone: take them off KNOWN_CIRCLES\n{}",
        gone.join("\n")
    );
}

#[test]
fn the_part_check_reads_paths_and_groups() {
    let me: Vec<String> = ["gateway", "turn", "run"].map(str::to_owned).to_vec();
    let paths = paths_in(
        "use crate::gateway::{delivery::origin::Origin, Inner}; super::hold::x(); super::super::text",
        &me,
    );
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        joined,
        [
            "gateway::delivery",
            "gateway::Inner",
            "gateway::turn::hold::x",
            "gateway::text"
        ]
    );
    let mut edges = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "a"), ("b", "c")] {
        edges
            .entry(a.to_owned())
            .or_insert_with(BTreeMap::new)
            .insert(b.to_owned(), String::new());
    }
    assert_eq!(circles(&edges), [vec!["a".to_owned(), "b".to_owned()]]);
    assert!(part_imports()["gateway"]["intake"].contains_key("session"));
}
