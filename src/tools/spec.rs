//! What a tool is: its spec, the `Tool` trait, the per-call context and errors,
//! and the `TurnHost` a turn's calls reach their surroundings through.

use super::{Asked, NestedResume, ProgressSink, TurnCheckpoint};
use crate::domain::ApprovalId;
use crate::llm::{Message, ToolCall};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
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
    pub approvals: Option<std::sync::Arc<dyn TurnHost>>,
    /// A delegation resumed after its sub-agent's approval was decided:
    /// where the sub-agent continues from.
    pub resumed: Option<Box<NestedResume>>,
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

/// Implemented by the gateway for each turn: it knows the chat, the requester
/// and the platform.
#[async_trait::async_trait]
pub trait TurnHost: Send + Sync + 'static {
    /// Applies a stored rule, or records an approval for `call` (with these
    /// `arguments`) and stores `checkpoint` so the turn can pause. Never waits
    /// for the decision.
    async fn request_approval(
        &self,
        spec: &ToolSpec,
        call: &ToolCall,
        arguments: &Value,
        summary: String,
        checkpoint: TurnCheckpoint,
    ) -> Asked;

    /// Starts `tool` as a background task; returns its task id at once.
    async fn start_background(
        &self,
        tool: Arc<dyn Tool>,
        call: &ToolCall,
        arguments: Value,
    ) -> Result<crate::domain::TaskId, String>;

    /// Called once `tool` is cleared to run (approved when it needs it),
    /// before it runs or its background task starts: where the host records
    /// that a tool with side effects ran, so that a crash from here on does
    /// not run the turn again. Default: nothing.
    async fn before_run(&self, _tool: &str) {}

    /// Called before `head` is folded into a summary by compaction, so what is
    /// worth remembering can be saved first (memory flush). Default: nothing.
    async fn before_compaction(&self, _head: &[Message]) {}

    /// The host a sub-agent that acts asks for its approvals (cards to the
    /// same requester); `None`: sub-agents cannot be approved.
    fn for_subagent(&self) -> Option<Arc<dyn TurnHost>> {
        None
    }

    /// A delegation's sub-agent paused on `approval` (recorded through
    /// [`TurnHost::for_subagent`]'s host, with the sub-agent's checkpoint):
    /// stores this turn's `checkpoint` around it so the whole turn pauses as
    /// one row. `false`: it could not be kept (the approval is withdrawn).
    async fn pause_nested(&self, _approval: &ApprovalId, _checkpoint: TurnCheckpoint) -> bool {
        false
    }

    /// Added to the system prompt of each model call of the turn, read anew
    /// every round (the plan and its current step). Default: nothing.
    async fn round_context(&self) -> Option<String> {
        None
    }

    /// Called after a round's tools ran, with its calls and their result
    /// messages: where the host records each result on the plan's current
    /// step. Returns the `plan_outcome` trace records. Default: nothing.
    async fn after_tools(&self, _calls: &[ToolCall], _results: &[Message]) -> Vec<Value> {
        Vec::new()
    }
}
