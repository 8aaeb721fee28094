//! Shaping tool results for the context: large ones stored on disk with a
//! preview and an index, stale ones shrunk to their key fields.

use crate::text::clip;
use crate::tools::{stored_result_path, READ_STORED_RESULT as READ_TOOL};
use serde_json::Value;
use std::path::Path;

/// Results above this many chars are stored and previewed.
pub(crate) const LARGE_RESULT_CHARS: usize = 50_000;
const PREVIEW_CHARS: usize = 2_000;
/// Results of earlier rounds above this many chars are shrunk.
pub(crate) const STALE_RESULT_CHARS: usize = 800;
const SHRUNK_MARK: &str = "[earlier tool result, shrunk";

/// Returns the text to keep in context for a tool result: unchanged when small,
/// else a reference to the stored file, a structured index and a preview.
pub(crate) async fn keep_or_store(
    data_dir: &Path,
    session: &crate::domain::SessionId,
    call_id: &str,
    result: String,
) -> String {
    let chars = result.chars().count();
    if chars <= LARGE_RESULT_CHARS {
        return result;
    }
    let path = stored_result_path(data_dir, session, call_id);
    let rel = path.strip_prefix(data_dir).unwrap_or(&path).to_owned();
    let saved = match path.parent() {
        Some(dir) => match tokio::fs::create_dir_all(dir).await {
            Ok(()) => tokio::fs::write(&path, &result).await,
            Err(e) => Err(e),
        },
        None => Ok(()),
    };
    let location = match saved {
        Ok(()) => format!(
            "saved as {}; read more with {READ_TOOL} {{\"call_id\": {call_id:?}, \"offset\": {PREVIEW_CHARS}}}",
            rel.display()
        ),
        Err(e) => {
            tracing::warn!(error = %e, path = %path.display(), "could not store a large tool result");
            "not saved (storage failed)".to_owned()
        }
    };
    let preview: String = result.chars().take(PREVIEW_CHARS).collect();
    format!(
        "[Large result: {chars} chars, {location}]\n[Index: {}]\n[Preview of the first {PREVIEW_CHARS} chars]\n{preview}\n[… {} more chars not shown]",
        index(&result),
        chars - PREVIEW_CHARS
    )
}

/// A one-line structural index: JSON keys and sizes, or line counts.
fn index(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => {
            let keys: Vec<String> = map
                .iter()
                .take(30)
                .map(|(k, v)| format!("{k}: {}", kind(v)))
                .collect();
            format!("JSON object with {} keys — {}", map.len(), keys.join(", "))
        }
        Ok(Value::Array(items)) => format!("JSON array of {} items", items.len()),
        _ => format!("{} lines", text.lines().count()),
    }
}

fn kind(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("array[{}]", a.len()),
        Value::Object(o) => format!("object{{{}}}", o.len()),
        Value::String(s) => format!("string({})", s.chars().count()),
        other => other.to_string().chars().take(40).collect(),
    }
}

/// Shrinks a result of an earlier round to its key fields, or `None` when it
/// is short enough (or already shrunk).
pub(crate) fn shrink_stale(text: &str) -> Option<String> {
    let chars = text.chars().count();
    if chars <= STALE_RESULT_CHARS || text.starts_with(SHRUNK_MARK) {
        return None;
    }
    let body = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => {
            let fields: Vec<String> = map
                .iter()
                .take(20)
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}: {}", clip(s, 120)),
                    Value::Array(_) | Value::Object(_) => format!("{k}: {}", kind(v)),
                    other => format!("{k}: {other}"),
                })
                .collect();
            fields.join("\n")
        }
        _ => {
            let head: String = text.chars().take(500).collect();
            let tail: String = text.chars().skip(chars.saturating_sub(200)).collect();
            format!("{head}\n…\n{tail}")
        }
    };
    Some(format!("{SHRUNK_MARK} from {chars} chars]\n{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn large_results_are_stored_with_preview_and_index() {
        let dir = tempfile::tempdir().unwrap();
        let big = "line of output\n".repeat(10_000);
        let kept = keep_or_store(
            dir.path(),
            &"sess/1".parse().unwrap(),
            "call:1",
            big.clone(),
        )
        .await;
        assert!(kept.len() < 3_000, "{}", kept.len());
        assert!(
            kept.contains("150000 chars") && kept.contains("10000 lines"),
            "{kept}"
        );
        let stored = std::fs::read_to_string(dir.path().join("results/sess_1/call_1.txt")).unwrap();
        assert_eq!(stored, big);
        assert_eq!(
            keep_or_store(dir.path(), &"s".parse().unwrap(), "c", "small".into()).await,
            "small"
        );
    }

    #[test]
    fn stale_json_keeps_key_fields() {
        let v = serde_json::json!({"status": "ok", "total": 42, "rows": vec!["x".repeat(50); 40]});
        let shrunk = shrink_stale(&v.to_string()).unwrap();
        assert!(
            shrunk.contains("status: ok")
                && shrunk.contains("total: 42")
                && shrunk.contains("rows: array[40]")
        );
        assert!(shrink_stale(&shrunk).is_none(), "idempotent");
        assert!(shrink_stale("short").is_none());
    }

    #[test]
    fn stale_text_keeps_head_and_tail() {
        let text = format!("HEAD{}TAIL", "x".repeat(2_000));
        let shrunk = shrink_stale(&text).unwrap();
        assert!(shrunk.contains("HEAD") && shrunk.contains("TAIL") && shrunk.len() < 900);
    }
}
