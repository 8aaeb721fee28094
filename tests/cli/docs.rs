//! The documentation stays true to the code: every variable the configuration
//! reads is in the configuration reference (`src/config/reference`) and in
//! `.env.example`, the reference lists nothing the configuration does not
//! read, the committed `docs/src/configuration.md` is the reference as
//! generated, and README's short table names only variables that exist.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use switchboard::config::reference;

/// The files that read the environment.
const CONFIG_SOURCES: &[&str] = &[
    "src/config/mod.rs",
    "src/config/basics.rs",
    "src/config/chat.rs",
    "src/config/files.rs",
    "src/config/limits.rs",
    "src/config/llm_env.rs",
    "src/config/mcp_serve.rs",
    "src/config/otel.rs",
    "src/config/search.rs",
    "src/models/config.rs",
    "src/config/web.rs",
    "src/media/config.rs",
    "src/tools/sandbox/settings.rs",
    "src/memory/config.rs",
    "src/memory/semantic/config.rs",
    "src/tools/grown/builders.rs",
    "adapters/telegram/src/config.rs",
    "adapters/discord/src/config.rs",
    "adapters/platform/src/status.rs",
];

/// Documented variables read outside the configuration, with the file that
/// reads them and the text there that does: `RUST_LOG` is read by tracing's
/// `EnvFilter`.
const READ_ELSEWHERE: &[(&str, &str, &str)] = &[(
    "RUST_LOG",
    "src/cli/mod.rs",
    "EnvFilter::try_from_default_env",
)];

const REGENERATE: &str = "cargo run -- config reference > docs/src/configuration.md";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Outside `#[cfg(test)]` code: upper-case string literals with an
/// underscore, and single words given to `get(…)` or named as `var: …`
/// (`TIMEZONE`, `SUBAGENTS`).
fn variables_read() -> BTreeSet<String> {
    let literal = regex::Regex::new(r#""([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)""#).unwrap();
    let word = regex::Regex::new(r#"(?:get\(|var: )"([A-Z][A-Z0-9]{2,})""#).unwrap();
    let mut vars = BTreeSet::new();
    for file in CONFIG_SOURCES {
        let text = read(file);
        let code = text.split("#[cfg(test)]").next().unwrap();
        for m in literal.captures_iter(code).chain(word.captures_iter(code)) {
            vars.insert(m[1].to_owned());
        }
    }
    vars
}

fn documented() -> BTreeSet<&'static str> {
    reference::variables().map(|v| v.name).collect()
}

#[test]
fn every_variable_read_is_in_the_reference_and_in_env_example() {
    let example = read(".env.example");
    let vars = variables_read();
    assert!(vars.len() > 100, "the scan found the variables: {vars:?}");
    for single in ["TIMEZONE", "SUBAGENTS"] {
        assert!(vars.contains(single), "the scan misses {single}: {vars:?}");
    }
    let missing_example: Vec<&String> = vars
        .iter()
        .filter(|v| !example.contains(&format!("{v}=")))
        .collect();
    assert!(
        missing_example.is_empty(),
        ".env.example lacks {missing_example:?}"
    );
    let documented = documented();
    let missing: Vec<&String> = vars
        .iter()
        .filter(|v| !documented.contains(v.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the configuration reference (src/config/reference/) lacks {missing:?}; add them, then run `{REGENERATE}`"
    );
}

#[test]
fn the_reference_lists_only_variables_that_are_read() {
    let vars = variables_read();
    for (var, file, reader) in READ_ELSEWHERE {
        assert!(read(file).contains(reader), "{file} no longer reads {var}");
        assert!(read(".env.example").contains(&format!("{var}=")));
    }
    let stale: Vec<&str> = documented()
        .into_iter()
        .filter(|v| !vars.contains(*v) && !READ_ELSEWHERE.iter().any(|(e, _, _)| e == v))
        .collect();
    assert!(
        stale.is_empty(),
        "the configuration reference lists variables nothing reads: {stale:?}"
    );
}

#[test]
fn the_committed_configuration_page_is_the_generated_reference() {
    let committed = read("docs/src/configuration.md");
    let generated = reference::render();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "its length".to_owned(), |i| format!("line {}", i + 1));
        panic!(
            "docs/src/configuration.md is not the generated reference (first difference: {line}); \
             regenerate it with `{REGENERATE}`"
        );
    }
    for var in reference::variables() {
        assert!(
            generated.contains(&format!("| `{}` |", var.name)),
            "{var:?}"
        );
    }
}

/// The command prints the same page and needs no configuration: no model,
/// and a value that would stop any other command is not even read.
#[test]
fn config_reference_prints_the_page_without_a_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["config", "reference"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LOG_FORMAT", "not-a-format")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), reference::render());
}

/// README keeps a short table: the essentials, and nothing that does not exist.
#[test]
fn readme_names_the_essential_variables_and_only_real_ones() {
    let readme = read("README.md");
    let table = readme
        .split("\n## Configuration\n")
        .nth(1)
        .expect("README has a Configuration section");
    let table = table.split("\n## ").next().unwrap();
    let name = regex::Regex::new(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`").unwrap();
    let named: BTreeSet<&str> = table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split(" | ").next())
        .flat_map(|cell| name.captures_iter(cell).map(|m| m.get(1).unwrap().as_str()))
        .collect();
    let documented = documented();
    let unknown: Vec<&&str> = named.iter().filter(|v| !documented.contains(*v)).collect();
    assert!(
        unknown.is_empty(),
        "README's table names {unknown:?}, which nothing reads"
    );
    for essential in [
        "LLM_BASE_URL",
        "LLM_MODEL",
        "LLM_API",
        "LLM_API_KEY",
        "DATA_DIR",
        "DATABASE_URL",
        "TELEGRAM_BOT_TOKEN",
        "DISCORD_BOT_TOKEN",
        "ACCESS_POLICY",
    ] {
        assert!(
            named.contains(essential),
            "README's table lacks {essential}"
        );
    }
    assert!(
        table.contains("docs/src/configuration.md"),
        "README links the full reference"
    );
}
