//! `remember`, `recall`, `forget`: the agent's hands on the calling user's
//! long-term memory. The user is the owner of the calling session; nobody
//! else's memories are reachable.

use super::args::parse_args;
use super::spec::{Tool, ToolContext, ToolError, ToolSpec};
use crate::memory::{check_secret, memory_line, record_access, MemoryBook, Saved};
use crate::store::{MemoryKind, MemoryOwner, NewMemory};
use chrono::{Duration, Utc};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// Budget of a `recall` answer, in tokens.
const RECALL_TOKENS: usize = 1_500;
const MAX_CONTENT_CHARS: usize = 300;

/// The three memory tools over one book.
pub fn memory_tools(book: MemoryBook) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(RememberTool {
            book: book.clone(),
            spec: remember_spec(),
        }),
        Arc::new(RecallTool {
            book: book.clone(),
            spec: recall_spec(),
        }),
        Arc::new(ForgetTool {
            book,
            spec: forget_spec(),
        }),
    ]
}

fn spec(
    name: &str,
    display: &str,
    description: &str,
    parameters: Value,
    concurrency_safe: bool,
) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        display_name: display.into(),
        description: description.into(),
        parameters,
        concurrency_safe,
        requires_approval: false,
        background: false,
        key_fields: Vec::new(),
    }
}

fn remember_spec() -> ToolSpec {
    spec(
        "remember",
        "Remember",
        "Save a long-term memory about the current user (kept across conversations, only for this user). Use it when \
         the user asks you to remember something, or states a lasting preference or decision. One self-contained \
         sentence. Never secrets, passwords or one-off facts.",
        json!({
            "type": "object",
            "properties": {
                "content": { "type": "string", "description": "One self-contained sentence, at most 300 characters." },
                "kind": { "type": "string", "enum": ["fact", "preference", "decision"], "description": "Default: fact." },
                "expires_in_days": { "type": "integer", "minimum": 1, "maximum": 3650, "description": "Forget it after this many days." }
            },
            "required": ["content"],
            "additionalProperties": false
        }),
        false,
    )
}

fn recall_spec() -> ToolSpec {
    spec(
        "recall",
        "Recall",
        "Search the current user's long-term memories (ids, codes, keywords, full text; Chinese works). Relevant \
         memories are already shown with each message; use this to look for something specific.",
        json!({
            "type": "object",
            "properties": {
                "query": { "type": "string" },
                "limit": { "type": "integer", "minimum": 1, "maximum": 20 },
                "min_importance": { "type": "number", "minimum": 0, "maximum": 1, "description": "Only memories at least this important (0–1; what the user asked to keep is 0.7)." }
            },
            "required": ["query"],
            "additionalProperties": false
        }),
        true,
    )
}

fn forget_spec() -> ToolSpec {
    spec(
        "forget",
        "Forget",
        "Delete one of the current user's long-term memories by its id (the number after # in memory lists).",
        json!({
            "type": "object",
            "properties": { "id": { "type": "integer" } },
            "required": ["id"],
            "additionalProperties": false
        }),
        false,
    )
}

/// The user whose memory a call may touch: the owner of the calling session.
async fn owner(book: &MemoryBook, ctx: &ToolContext) -> Result<MemoryOwner, ToolError> {
    if !book.config().enabled {
        return Err(ToolError::failed(
            "long-term memory is disabled on this gateway",
        ));
    }
    match book.store().sessions().key(&ctx.session_id).await {
        Ok(Some(key)) => Ok(MemoryOwner::of(&key)),
        Ok(None) => Err(ToolError::failed(
            "memory is only available inside a chat session",
        )),
        Err(e) => Err(ToolError::Failed {
            message: "memory storage is unavailable".into(),
            diagnostics: Some(e.to_string()),
        }),
    }
}

fn storage(e: impl std::fmt::Display) -> ToolError {
    ToolError::Failed {
        message: "memory storage is unavailable".into(),
        diagnostics: Some(e.to_string()),
    }
}

struct RememberTool {
    book: MemoryBook,
    spec: ToolSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    content: String,
    kind: Option<String>,
    expires_in_days: Option<u32>,
}

#[async_trait::async_trait]
impl Tool for RememberTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: RememberArgs = parse_args("remember", args)?;
        let content = args.content.trim().to_owned();
        if content.is_empty() || content.chars().count() > MAX_CONTENT_CHARS {
            return Err(ToolError::InvalidArguments(format!(
                "content must be 1 to {MAX_CONTENT_CHARS} characters"
            )));
        }
        if check_secret(&content).is_err() {
            return Err(ToolError::Forbidden(
                "that looks like a secret; secrets are never stored in memory".into(),
            ));
        }
        let kind = match args.kind.as_deref() {
            None | Some("fact") => MemoryKind::Fact,
            Some("preference") => MemoryKind::Preference,
            Some("decision") => MemoryKind::Decision,
            Some(other) => {
                return Err(ToolError::InvalidArguments(format!(
                    "unknown kind {other:?}; use fact, preference or decision"
                )))
            }
        };
        let owner = owner(&self.book, ctx).await?;
        let now = Utc::now();
        let memory = NewMemory {
            kind,
            content,
            source_ref: format!("tool:{}", ctx.session_id),
            importance: 0.7,
            expires_at: args
                .expires_in_days
                .filter(|d| (1..=3650).contains(d))
                .map(|d| now + Duration::days(i64::from(d))),
        };
        let saved = match self.book.save(owner, memory, now).await {
            Err(e @ crate::memory::MemoryError::Full(_)) => {
                return Err(ToolError::Failed {
                    message: e.to_string(),
                    diagnostics: None,
                })
            }
            other => other.map_err(storage)?,
        };
        Ok(match saved {
            Saved::Added(id) => format!("Saved as memory #{id}."),
            Saved::Merged(id) => format!("Already remembered as memory #{id}; updated it."),
        })
    }
}

struct RecallTool {
    book: MemoryBook,
    spec: ToolSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    query: String,
    limit: Option<usize>,
    min_importance: Option<f64>,
}

#[async_trait::async_trait]
impl Tool for RecallTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: RecallArgs = parse_args("recall", args)?;
        let floor = args.min_importance.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&floor) {
            return Err(ToolError::InvalidArguments(
                "min_importance must be from 0 to 1".into(),
            ));
        }
        let owner = owner(&self.book, ctx).await?;
        let now = Utc::now();
        // In a shared chat, only what `MEMORY_IN_SHARED_CHATS` lets surface there.
        let private = ctx.origin.as_ref().is_some_and(|o| o.kind.is_private());
        let policy = self.book.config().shared_chats;
        let visible = |kind| policy.shows(private, kind);
        let hits = self
            .book
            .recall(owner, &args.query, RECALL_TOKENS, now, &visible)
            .await
            .map_err(storage)?;
        record_access(self.book.store(), owner, &hits, now)
            .await
            .map_err(storage)?;
        let lines: Vec<String> = hits
            .iter()
            .filter(|h| h.relevance > 0.0 && h.memory.importance >= floor)
            .take(args.limit.unwrap_or(8).clamp(1, 20))
            .map(|h| memory_line(&h.memory))
            .collect();
        Ok(if lines.is_empty() {
            format!("No memory matches {:?}.", args.query)
        } else {
            lines.join("\n")
        })
    }
}

struct ForgetTool {
    book: MemoryBook,
    spec: ToolSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetArgs {
    id: i64,
}

#[async_trait::async_trait]
impl Tool for ForgetTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: ForgetArgs = parse_args("forget", args)?;
        let owner = owner(&self.book, ctx).await?;
        if self.book.forget(owner, args.id).await.map_err(storage)? {
            Ok(format!("Forgot memory #{}.", args.id))
        } else {
            Err(ToolError::failed(format!(
                "this user has no memory #{}",
                args.id
            )))
        }
    }
}
