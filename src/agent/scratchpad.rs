//! The scratchpad: one JSONL trace per turn under the data dir, secrets redacted
//! (secret-looking fields, and every known secret value anywhere).

use super::redact::redact;
use crate::domain::TurnId;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Appends trace records for one turn. Tracing failures never fail the turn.
pub(crate) struct Scratchpad {
    file: Option<std::fs::File>,
}

impl Scratchpad {
    /// `{data_dir}/scratchpad/{trace}/{turn}.jsonl`; `trace` names the
    /// turn's run (its session, or the session and a subagent's role).
    pub(crate) fn path_for(data_dir: &Path, trace: &str, turn_id: &TurnId) -> PathBuf {
        data_dir
            .join("scratchpad")
            .join(crate::text::safe_name(trace))
            .join(format!(
                "{}.jsonl",
                crate::text::safe_name(turn_id.as_str())
            ))
    }

    pub(crate) fn open(data_dir: &Path, trace: &str, turn_id: &TurnId) -> Scratchpad {
        let path = Self::path_for(data_dir, trace, turn_id);
        let file = path
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .and_then(|_| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
            });
        match file {
            Ok(f) => Scratchpad { file: Some(f) },
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "scratchpad disabled for this turn");
                Scratchpad { file: None }
            }
        }
    }

    /// Writes one record `{"at":…, "type": kind, …fields}` with secrets redacted.
    pub(crate) fn record(&mut self, kind: &str, fields: Value) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut record = json!({ "at": chrono::Utc::now().to_rfc3339(), "type": kind });
        let fields = crate::secrets::scrub_value(&redact(&fields));
        if let (Some(obj), Value::Object(extra)) = (record.as_object_mut(), fields) {
            obj.extend(extra);
        }
        let line = format!("{record}\n");
        if let Err(e) = file.write_all(line.as_bytes()) {
            tracing::warn!(error = %e, "scratchpad write failed; disabling it for this turn");
            self.file = None;
        }
    }

    /// Tool arguments as JSON for the trace (raw text when they don't parse).
    pub(crate) fn args_value(arguments: &str) -> Value {
        serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_jsonl_with_secrets_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let mut pad = Scratchpad::open(dir.path(), "s1", &"t1".parse().unwrap());
        pad.record("init", json!({"model": "m"}));
        pad.record(
            "tool_result",
            json!({"args": {"url": "u", "api_key": "sk-123"}, "status": "ok"}),
        );
        let text = std::fs::read_to_string(Scratchpad::path_for(
            dir.path(),
            "s1",
            &"t1".parse().unwrap(),
        ))
        .unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["type"], "init");
        assert_eq!(lines[1]["args"]["api_key"], "<redacted>");
        assert!(!text.contains("sk-123"));
    }
}
