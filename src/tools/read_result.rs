//! `read_stored_result`: pages through a tool result too large for the
//! context. The runtime stores such results under the data dir, one folder per
//! session, and keeps only a preview in context; this tool reads the rest, and
//! only the calling session's results.

use super::args::parse_args;
use super::spec::{Tool, ToolContext, ToolError, ToolSpec};
use crate::dirs::stored_result_path;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::PathBuf;

/// The tool's name, as the large-result preview tells the model.
pub const NAME: &str = "read_stored_result";
const DEFAULT_LIMIT: usize = 20_000;
/// Below the size at which a result is stored again.
const MAX_LIMIT: usize = 40_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    call_id: String,
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

pub struct ReadStoredResultTool {
    spec: ToolSpec,
    data_dir: PathBuf,
}

impl ReadStoredResultTool {
    pub fn new(data_dir: PathBuf) -> ReadStoredResultTool {
        ReadStoredResultTool {
            data_dir,
            spec: ToolSpec {
                name: NAME.into(),
                display_name: "Read stored result".into(),
                description: format!(
                    "Read part of an earlier tool result that was too large for the conversation \
                     (its preview says \"Large result\"). Pass the call_id it names and a char offset; \
                     returns up to `limit` chars (default {DEFAULT_LIMIT}, max {MAX_LIMIT})."
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "call_id": { "type": "string", "description": "The tool call id the preview names." },
                        "offset": { "type": "integer", "minimum": 0, "description": "First char to return." },
                        "limit": { "type": "integer", "minimum": 1, "maximum": MAX_LIMIT }
                    },
                    "required": ["call_id"],
                    "additionalProperties": false
                }),
                concurrency_safe: true,
                requires_approval: false,
                background: false,
                key_fields: Vec::new(),
            },
        }
    }
}

#[async_trait::async_trait]
impl Tool for ReadStoredResultTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(NAME, args)?;
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let path = stored_result_path(&self.data_dir, &ctx.session_id, &args.call_id);
        let text = match tokio::fs::read_to_string(&path).await {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ToolError::InvalidArguments(format!(
                    "no stored result for call_id {:?} in this conversation",
                    args.call_id
                )))
            }
            Err(e) => {
                return Err(ToolError::Failed {
                    message: "the stored result could not be read".into(),
                    diagnostics: Some(e.to_string()),
                })
            }
        };
        let total = text.chars().count();
        if args.offset >= total {
            return Err(ToolError::InvalidArguments(format!(
                "offset {} is past the end ({total} chars)",
                args.offset
            )));
        }
        let part: String = text.chars().skip(args.offset).take(limit).collect();
        let end = args.offset + part.chars().count();
        let more = if end < total {
            format!(" — continue with offset {end}")
        } else {
            " — the end".to_owned()
        };
        Ok(format!(
            "[chars {}–{end} of {total}{more}]\n{part}",
            args.offset
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(session: &str) -> ToolContext {
        ToolContext {
            cancel: Default::default(),
            progress: Default::default(),
            images: Default::default(),
            session_id: session.parse().unwrap(),
            origin: None,
            approvals: None,
            resumed: None,
            asked: None,
        }
    }

    #[tokio::test]
    async fn pages_through_a_stored_result_of_its_own_session_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = stored_result_path(dir.path(), &"s1".parse().unwrap(), "call:1");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text: String = "0123456789".repeat(5) + "ünïcødé";
        std::fs::write(&path, &text).unwrap();
        let tool = ReadStoredResultTool::new(dir.path().to_path_buf());

        let first = tool
            .call(json!({"call_id": "call:1", "limit": 20}), &ctx("s1"))
            .await
            .unwrap();
        assert_eq!(
            first,
            "[chars 0–20 of 57 — continue with offset 20]\n01234567890123456789"
        );
        let last = tool
            .call(json!({"call_id": "call:1", "offset": 50}), &ctx("s1"))
            .await
            .unwrap();
        assert_eq!(last, "[chars 50–57 of 57 — the end]\nünïcødé");

        let other = tool
            .call(json!({"call_id": "call:1"}), &ctx("s2"))
            .await
            .unwrap_err();
        assert!(other.to_string().contains("no stored result"), "{other}");
        let escape = tool
            .call(json!({"call_id": "../s1/call:1"}), &ctx("s2"))
            .await
            .unwrap_err();
        assert!(escape.to_string().contains("no stored result"), "{escape}");
        let past = tool
            .call(json!({"call_id": "call:1", "offset": 57}), &ctx("s1"))
            .await
            .unwrap_err();
        assert!(past.to_string().contains("past the end"), "{past}");
    }
}
