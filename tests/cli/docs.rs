//! The documentation stays true to the code: every variable the configuration
//! reads is listed in `.env.example` and in README's configuration table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::Path;

/// The files that read the environment.
const CONFIG_SOURCES: &[&str] = &[
    "src/config/mod.rs",
    "src/config/chat.rs",
    "src/config/files.rs",
    "src/config/limits.rs",
    "src/media/config.rs",
    "src/tools/sandbox/settings.rs",
    "src/memory/config.rs",
    "adapters/telegram/src/config.rs",
    "adapters/discord/src/config.rs",
];

/// Upper-case string literals with an underscore, outside `#[cfg(test)]` code.
fn variables_read() -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let literal = regex::Regex::new(r#""([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)""#).unwrap();
    let mut vars = BTreeSet::new();
    for file in CONFIG_SOURCES {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for m in literal.captures_iter(code) {
            vars.insert(m[1].to_owned());
        }
    }
    vars
}

#[test]
fn every_variable_is_documented() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = std::fs::read_to_string(root.join(".env.example")).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let vars = variables_read();
    assert!(vars.len() > 40, "the scan found the variables: {vars:?}");
    let missing_example: Vec<&String> = vars
        .iter()
        .filter(|v| !example.contains(&format!("{v}=")))
        .collect();
    assert!(
        missing_example.is_empty(),
        ".env.example lacks {missing_example:?}"
    );
    let missing_readme: Vec<&String> = vars.iter().filter(|v| !in_readme(&readme, v)).collect();
    assert!(
        missing_readme.is_empty(),
        "README.md lacks {missing_readme:?}"
    );
}

/// README's table names families by their first member and suffixes:
/// `LLM_FALLBACK_1_BASE_URL`, `_MODEL`, ... (also `2`, `3`) or
/// `TELEGRAM_WEBHOOK_URL` + `_LISTEN` + `_SECRET`.
fn in_readme(readme: &str, var: &str) -> bool {
    if readme.contains(var) {
        return true;
    }
    let first = var.replace("_2_", "_1_").replace("_3_", "_1_");
    readme.contains(&first)
        || first.match_indices('_').any(|(i, _)| {
            let (prefix, suffix) = first.split_at(i);
            readme.contains(&format!("`{prefix}")) && readme.contains(&format!("`{suffix}`"))
        })
}
