//! What a tool is: its spec, the `Tool` trait, the per-call context and errors.

use serde_json::Value;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// A tool's static description and scheduling flags.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub display_name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
    /// Safe to run in parallel with other concurrency-safe calls of a round.
    pub concurrency_safe: bool,
    /// Never runs without a recorded approval decision.
    pub requires_approval: bool,
    /// Always runs as a background task (see also [`Tool::runs_in_background`]).
    pub background: bool,
    /// What compaction keeps word for word of this tool's results: of a JSON
    /// object, these keys' values; of text, the lines naming one of them
    /// (case-insensitive). Empty: the generic key fields, summarized.
    pub key_fields: Vec<String>,
}

/// Where a tool comes from, for `/tools`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ToolSource {
    BuiltIn,
    /// An operator-declared HTTP API (`HTTP_TOOLS_FILE`).
    Http,
    /// An operator-declared script (`SCRIPT_TOOLS_DIR`).
    Script,
    /// Added from the chat (`http_tool`, `script_tool`), approved on a card.
    Grown,
    /// A tool of this MCP server.
    Mcp(String),
}

impl std::fmt::Display for ToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolSource::BuiltIn => f.write_str("Built-in"),
            ToolSource::Http => f.write_str("HTTP APIs"),
            ToolSource::Script => f.write_str("Scripts"),
            ToolSource::Grown => f.write_str("Added from the chat"),
            ToolSource::Mcp(server) => write!(f, "MCP server {server}"),
        }
    }
}

/// Progress of a running (background) tool call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    pub stage: String,
    pub detail: String,
    pub percent: Option<u8>,
}

impl Progress {
    /// One line for a chat: "research sub-agent — step 2: web_fetch (40%)".
    pub fn line(&self) -> String {
        let mut line = self.stage.clone();
        if !self.detail.is_empty() {
            if !line.is_empty() {
                line.push_str(" — ");
            }
            line.push_str(&self.detail);
        }
        if let Some(p) = self.percent {
            line.push_str(&format!(" ({p}%)"));
        }
        line
    }
}

/// Where a tool reports progress. Cheap to clone; a no-op for foreground calls.
#[derive(Debug, Clone, Default)]
pub struct ProgressSink(Option<watch::Sender<Progress>>);

impl ProgressSink {
    pub fn new(tx: watch::Sender<Progress>) -> Self {
        Self(Some(tx))
    }

    pub fn report(&self, progress: Progress) {
        if let Some(tx) = &self.0 {
            tx.send_replace(progress);
        }
    }
}

/// Per-call context.
#[derive(Clone, Default)]
pub struct ToolContext {
    /// Cancelled when the turn or the background task is cancelled.
    pub cancel: CancellationToken,
    pub progress: ProgressSink,
    /// Where the call hands over images it produced for the model to see
    /// with its result; takes nothing unless the turn's model sees images.
    pub images: super::ImageSink,
    /// Stable id of the calling session (for tools that keep per-session state).
    pub session_id: crate::domain::SessionId,
    /// Who called and from which chat (for tools that act later on the user's
    /// behalf, like schedules; the file and exec tools act in that user's own
    /// workspace folder). `None` outside a chat turn: the whole workspace.
    pub origin: Option<crate::domain::Conversation>,
    /// Who decides the approval cards of work done on the caller's behalf
    /// (a sub-agent that acts); `None` where nobody can be asked.
    pub approvals: Option<std::sync::Arc<dyn super::TurnHost>>,
    /// A delegation resumed after its sub-agent's approval was decided:
    /// where the sub-agent continues from.
    pub resumed: Option<Box<super::NestedResume>>,
    /// The user's own message that started the turn (for a sub-agent, which
    /// sees it beside the delegating model's brief); `None` outside a chat turn.
    pub asked: Option<String>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.session_id)
            .field("origin", &self.origin)
            .field("approvals", &self.approvals.is_some())
            .finish_non_exhaustive()
    }
}

/// A tool failure. [`ToolError::for_model`] is what the model sees; `Display`
/// adds diagnostics for the operator. Neither may contain secrets.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("not allowed: {0}")]
    Forbidden(String),
    #[error("{message}{}", diagnostics.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Failed {
        message: String,
        diagnostics: Option<String>,
    },
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("cancelled")]
    Cancelled,
    /// The tool's work waits for approval `0` (a sub-agent's call): the
    /// calling turn pauses and resumes the tool once it is decided.
    #[error("waiting for approval {0}")]
    Paused(crate::domain::ApprovalId),
}

impl ToolError {
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed {
            message: message.into(),
            diagnostics: None,
        }
    }

    /// The text fed back to the model as the observation.
    pub fn for_model(&self) -> String {
        match self {
            ToolError::Failed { message, .. } => format!("error: {message}"),
            other => format!("error: {other}"),
        }
    }
}

impl From<crate::workspace::PathError> for ToolError {
    /// A path refused by the caller's view of the workspace.
    fn from(e: crate::workspace::PathError) -> ToolError {
        use crate::workspace::PathError;
        match e {
            PathError::Invalid(m) => ToolError::InvalidArguments(m),
            PathError::Outside(m) => ToolError::Forbidden(m),
            PathError::Unreadable(m) => ToolError::failed(m),
        }
    }
}

impl From<crate::workspace::BeneathError> for ToolError {
    /// A workspace directory that could not be opened without following a
    /// link (the caller's folder, on the way to a file).
    fn from(e: crate::workspace::BeneathError) -> ToolError {
        use crate::workspace::BeneathError;
        match e {
            BeneathError::Link(_) | BeneathError::Outside(_) => ToolError::Forbidden(e.to_string()),
            BeneathError::NotDir(_) | BeneathError::Io { .. } => ToolError::failed(e.to_string()),
        }
    }
}

/// A tool the agent can call.
#[async_trait::async_trait]
pub trait Tool: Send + Sync + 'static {
    fn spec(&self) -> &ToolSpec;

    /// Where the tool comes from (built in unless declared by the operator).
    fn source(&self) -> ToolSource {
        ToolSource::BuiltIn
    }

    /// The description shown to the model; the spec's unless the tool's
    /// offer changes while running (the skills `execute_skill` lists).
    fn description(&self) -> String {
        self.spec().description.clone()
    }

    /// Checks the arguments without acting, so a call that would be refused is
    /// reported to the model at once — before an approval card asks a person
    /// about it, and before a background task is started for it.
    fn validate(&self, _args: &Value) -> Result<(), ToolError> {
        Ok(())
    }

    /// [`Tool::validate`] for a call made in `caller`'s turn (`None`: outside
    /// a chat). Tools whose files depend on who calls (each user has their
    /// own workspace folder) check against the caller's; the agent calls this.
    fn validate_for(
        &self,
        args: &Value,
        _caller: Option<&crate::domain::Conversation>,
    ) -> Result<(), ToolError> {
        self.validate(args)
    }

    /// Whether the progress of a foreground call is shown in the chat while it
    /// runs (a sub-agent's steps). Off by default: a command's output lines,
    /// for one, are for the model, not for everyone in the chat.
    fn progress_in_chat(&self) -> bool {
        false
    }

    /// Whether this particular call runs as a background task.
    fn runs_in_background(&self, _args: &Value) -> bool {
        self.spec().background
    }

    /// The exact action shown on an approval card (command text, path and a diff
    /// summary, ...). Defaults to the pretty-printed arguments.
    async fn approval_summary(&self, args: &Value) -> String {
        serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string())
    }

    /// [`Tool::approval_summary`] for a call made in `caller`'s turn: a card
    /// shows what the call does in the caller's own workspace folder (and
    /// never the content of another user's file). The agent calls this.
    async fn approval_summary_for(
        &self,
        args: &Value,
        _caller: Option<&crate::domain::Conversation>,
    ) -> String {
        self.approval_summary(args).await
    }

    /// Runs the call. The returned text is the observation the model sees.
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError>;
}
