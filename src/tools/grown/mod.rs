//! Tools the agent can grow: HTTP API tools and script tools added from the
//! chat by the users the operator allows (`TOOL_BUILDERS`), each change
//! through the `http_tool` / `script_tool` tools, whose every call needs a
//! card that can only be allowed once. The approved manifests live in the
//! database; every process loads the same set (at once after its own
//! change, within [`REFRESH_EVERY`] after another's).

mod builders;
mod guarded;
mod http_manage;
mod script_check;
mod script_manage;
mod script_precheck;

pub use builders::ToolBuilders;
pub use http_manage::{HttpToolManager, HTTP_TOOL};
pub use script_manage::{ScriptToolManager, SCRIPT_TOOL};

use super::sandbox::Sandbox;
use super::{DynamicTools, HttpApiTool, Tool, ToolSource, Workspace};
use crate::store::{GrownKind, GrownStamp, GrownToolRow, Store, StoreError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use switchboard_platform::Secret;
use tokio_util::sync::CancellationToken;

/// How often another process's changes are looked for.
pub const REFRESH_EVERY: Duration = Duration::from_secs(10);
/// The prefix of the variables a tool added from the chat may take a
/// credential from; the gateway's own secrets are out of its reach.
pub const SECRET_PREFIX: &str = "TOOL_SECRET_";

/// What building the tools needs.
pub struct GrownEnv {
    pub workspace: Arc<Workspace>,
    pub sandbox: Arc<Sandbox>,
    pub max_output_chars: usize,
    /// Private hosts HTTP tools may reach (`WEB_FETCH_ALLOW`).
    pub allow: Vec<String>,
    /// `TOOL_SECRET_*` values, captured before the environment was sealed.
    pub secrets: BTreeMap<String, Secret>,
    /// Names taken by the built-in and the operator's tools.
    pub reserved: Vec<String>,
}

impl GrownEnv {
    /// A credential by variable name, only from `TOOL_SECRET_*`.
    pub(crate) fn secret(&self, name: &str) -> Option<String> {
        name.starts_with(SECRET_PREFIX)
            .then(|| self.secrets.get(name))
            .flatten()
            .map(|s| s.expose().to_owned())
    }
}

#[derive(Default)]
struct Loaded {
    stamp: Option<GrownStamp>,
    tools: Vec<Arc<dyn Tool>>,
    rows: Vec<GrownToolRow>,
}

/// The tools added from the chat, as loaded now.
pub struct GrownTools {
    store: Store,
    env: GrownEnv,
    loaded: RwLock<Loaded>,
}

impl GrownTools {
    pub fn new(store: Store, env: GrownEnv) -> GrownTools {
        GrownTools {
            store,
            env,
            loaded: RwLock::new(Loaded::default()),
        }
    }

    pub(crate) fn env(&self) -> &GrownEnv {
        &self.env
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// The stored rows as last loaded (export, `/tools`).
    pub fn rows(&self) -> Vec<GrownToolRow> {
        self.read().rows.clone()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Loaded> {
        self.loaded.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Reloads when the stored set changed since the last load.
    pub async fn refresh(&self) -> Result<(), StoreError> {
        let stamp = self.store.grown_stamp().await?;
        if self.read().stamp == Some(stamp) {
            return Ok(());
        }
        let rows = self.store.grown_tools().await?;
        let tools = rows.iter().filter_map(|row| self.build(row)).collect();
        let mut loaded = self.loaded.write().unwrap_or_else(|e| e.into_inner());
        *loaded = Loaded {
            stamp: Some(stamp),
            tools,
            rows,
        };
        Ok(())
    }

    /// Refreshes every [`REFRESH_EVERY`] until `shutdown`.
    pub fn watch(self: &Arc<Self>, shutdown: CancellationToken) {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                if let Err(e) = me.refresh().await {
                    tracing::warn!(error = %e, "could not load the tools added from the chat");
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(REFRESH_EVERY) => {}
                }
            }
        });
    }

    /// The tool a row declares; `None` (logged) when it cannot be used now —
    /// a credential unset, a script gone.
    fn build(&self, row: &GrownToolRow) -> Option<Arc<dyn Tool>> {
        let manifest: Value = match serde_json::from_str(&row.manifest) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(tool = %row.name, error = %e, "a stored tool manifest is unreadable");
                return None;
            }
        };
        let built: Result<Arc<dyn Tool>, String> = match row.kind {
            GrownKind::Http => super::http_api_defs::parse_http(manifest, |k| self.env.secret(k))
                .map(|def| {
                    Arc::new(Grown(HttpApiTool::new(def, &self.env.allow))) as Arc<dyn Tool>
                }),
            GrownKind::Script => {
                guarded::GuardedScript::load(manifest, row.script_sha256.as_deref(), &self.env)
                    .map(|t| Arc::new(t) as Arc<dyn Tool>)
            }
        };
        match built {
            Ok(tool) => Some(tool),
            Err(problem) => {
                tracing::warn!(tool = %row.name, %problem, "a tool added from the chat cannot be used now");
                None
            }
        }
    }
}

impl DynamicTools for GrownTools {
    fn current(&self, taken: &[String]) -> Vec<Arc<dyn Tool>> {
        self.read()
            .tools
            .iter()
            .filter(|t| !taken.contains(&t.spec().name))
            .cloned()
            .collect()
    }
}

/// An HTTP API tool added from the chat: the operator's kind of tool, listed
/// under its own source.
struct Grown<T>(T);

#[async_trait::async_trait]
impl<T: Tool> Tool for Grown<T> {
    fn spec(&self) -> &super::ToolSpec {
        self.0.spec()
    }
    fn source(&self) -> ToolSource {
        ToolSource::Grown
    }
    fn validate(&self, args: &Value) -> Result<(), super::ToolError> {
        self.0.validate(args)
    }
    fn validate_for(
        &self,
        args: &Value,
        caller: Option<&crate::domain::Conversation>,
    ) -> Result<(), super::ToolError> {
        self.0.validate_for(args, caller)
    }
    async fn approval_summary(&self, args: &Value) -> String {
        self.0.approval_summary(args).await
    }
    async fn approval_summary_for(
        &self,
        args: &Value,
        caller: Option<&crate::domain::Conversation>,
    ) -> String {
        self.0.approval_summary_for(args, caller).await
    }
    async fn call(
        &self,
        args: Value,
        ctx: &super::ToolContext,
    ) -> Result<String, super::ToolError> {
        self.0.call(args, ctx).await
    }
}

/// `platform:user` of the caller, for the audit log.
pub(crate) fn caller(ctx: &super::ToolContext) -> String {
    ctx.origin
        .as_ref()
        .map(|o| format!("{}:{}", o.key.platform, o.user.id))
        .unwrap_or_else(|| "unknown".into())
}
