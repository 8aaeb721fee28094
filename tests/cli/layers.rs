//! The core's modules import one another one way only: no cycle between
//! the top-level modules of `src/` (test code aside), and each module only
//! reaches modules at or below its place in the documented order (README's
//! Architecture section), so a new upward import fails here by name.
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
    "dirs",
    "domain",
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
