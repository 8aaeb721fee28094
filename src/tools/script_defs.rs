//! Operator-declared script tools: one JSON manifest per tool in
//! `SCRIPT_TOOLS_DIR`, naming an executable that gets the call's arguments as
//! JSON on stdin.

use super::declared::{valid_tool_name, DeclaredSchema};
use serde::Deserialize;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A manifest as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    name: String,
    description: String,
    /// The executable: absolute, or relative to the manifest's directory.
    command: String,
    /// Fixed arguments.
    #[serde(default)]
    args: Vec<String>,
    #[serde(default = "empty_schema")]
    parameters: Value,
    timeout_secs: Option<u64>,
}

fn empty_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// A validated script tool.
#[derive(Debug, Clone)]
pub struct ScriptToolDef {
    pub name: String,
    pub description: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub parameters: DeclaredSchema,
    pub timeout: Duration,
}

/// A manifest that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptToolProblem {
    pub manifest: PathBuf,
    pub problem: String,
}

/// Longest a script may run (its manifest may ask for less).
pub const MAX_SCRIPT_TIMEOUT: Duration = Duration::from_secs(3600);
const DEFAULT_SCRIPT_TIMEOUT: Duration = Duration::from_secs(60);

/// Reads `dir/*.json`, in name order; `reserved` names are taken. A missing
/// directory is no tools.
pub fn load_script_tools(
    dir: &Path,
    reserved: &[&str],
) -> (Vec<ScriptToolDef>, Vec<ScriptToolProblem>) {
    let mut defs: Vec<ScriptToolDef> = Vec::new();
    let mut problems = Vec::new();
    let mut manifests: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            problems.push(ScriptToolProblem {
                manifest: dir.to_owned(),
                problem: format!("cannot read the directory: {e}"),
            });
            Vec::new()
        }
    };
    manifests.sort();
    for manifest in manifests {
        let loaded = std::fs::read_to_string(&manifest)
            .map_err(|e| format!("cannot read it: {e}"))
            .and_then(|text| serde_json::from_str::<RawScript>(&text).map_err(|e| e.to_string()))
            .and_then(|raw| validate(raw, dir))
            .and_then(|def| {
                if reserved.contains(&def.name.as_str()) || defs.iter().any(|d| d.name == def.name)
                {
                    Err(format!("the name {} is already taken", def.name))
                } else {
                    Ok(def)
                }
            });
        match loaded {
            Ok(def) => defs.push(def),
            Err(problem) => problems.push(ScriptToolProblem { manifest, problem }),
        }
    }
    (defs, problems)
}

/// One manifest given as JSON (a tool added from the chat); a relative
/// command is relative to `dir`.
pub(crate) fn parse_script(manifest: Value, dir: &Path) -> Result<ScriptToolDef, String> {
    let raw = serde_json::from_value::<RawScript>(manifest).map_err(|e| e.to_string())?;
    validate(raw, dir)
}

fn validate(raw: RawScript, dir: &Path) -> Result<ScriptToolDef, String> {
    if !valid_tool_name(&raw.name) {
        return Err("name must be 1–64 lowercase letters, digits or underscores".into());
    }
    if raw.description.trim().is_empty() {
        return Err("description is empty".into());
    }
    let program = dir.join(&raw.command);
    let meta = std::fs::metadata(&program)
        .map_err(|e| format!("command {} cannot be used: {e}", program.display()))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "command {} is not an executable file (chmod +x it)",
            program.display()
        ));
    }
    let timeout = raw
        .timeout_secs
        .map_or(DEFAULT_SCRIPT_TIMEOUT, Duration::from_secs)
        .clamp(Duration::from_secs(1), MAX_SCRIPT_TIMEOUT);
    Ok(ScriptToolDef {
        name: raw.name,
        description: raw.description,
        program,
        args: raw.args,
        parameters: DeclaredSchema::parse(raw.parameters)?,
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_load_and_bad_ones_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let script = d.join("report.sh");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(d.join("plain.txt"), "not executable").unwrap();
        let write = |name: &str, v: Value| std::fs::write(d.join(name), v.to_string()).unwrap();
        write(
            "a_report.json",
            serde_json::json!({"name": "report", "description": "d", "command": "report.sh", "timeout_secs": 99999}),
        );
        write(
            "b_plain.json",
            serde_json::json!({"name": "plain", "description": "d", "command": "plain.txt"}),
        );
        write(
            "c_missing.json",
            serde_json::json!({"name": "missing", "description": "d", "command": "nope.sh"}),
        );
        write(
            "d_taken.json",
            serde_json::json!({"name": "exec_command", "description": "d", "command": "report.sh"}),
        );
        write(
            "e_typo.json",
            serde_json::json!({"name": "x", "description": "d", "command": "report.sh", "env": {}}),
        );
        let (defs, problems) = load_script_tools(d, &["exec_command"]);
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].timeout, MAX_SCRIPT_TIMEOUT, "capped");
        let reasons: Vec<&str> = problems.iter().map(|p| p.problem.as_str()).collect();
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(reasons[0].contains("not an executable file"), "{reasons:?}");
        assert!(reasons[1].contains("cannot be used"), "{reasons:?}");
        assert!(reasons[2].contains("already taken"), "{reasons:?}");
        assert!(reasons[3].contains("unknown field `env`"), "{reasons:?}");
    }
}
