//! The agent's own tools as `switchboard mcp` offers them: those of the
//! tiers `MCP_SERVER_TOOLS` allows, each call run in the session of the
//! configured user (`MCP_SERVER_USER`: their memory, ledger and caps), a
//! tool that asks for approval in a chat asking here too (see
//! [`OwnApproval`]), every call audited (`mcp.tool_call`,
//! `mcp.tool_refused`).

use super::exposure::{tier_of, Exposure, OwnToolsConfig, ServerUser, Tier};
use super::own_approval::{Asked, OwnApproval, Verdict};
use crate::domain::{Conversation, SessionKey};
use crate::store::Store;
use crate::tools::{Tool as OwnTool, ToolContext, ToolRegistry};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{ChatAddress, ChatKind, User};
use tokio_util::sync::CancellationToken;

/// How long one call may run.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The own tools offered to every client of this server.
pub struct OwnTools {
    registry: ToolRegistry,
    exposure: Exposure,
    user: ServerUser,
    store: Store,
    approval: OwnApproval,
    /// Names the server's own tools (`notify`, …) take first.
    taken: Vec<String>,
}

/// A refused or failed call: the text the client reads.
pub type Refusal = String;

impl OwnTools {
    /// The tools of `registry` that `config` offers, acting as its user;
    /// `None` when it offers none. Cards go to `target` (`MCP_NOTIFY_CHAT`)
    /// and wait at most `approval_timeout`.
    pub fn new(
        registry: ToolRegistry,
        store: Store,
        config: OwnToolsConfig,
        target: Option<ChatAddress>,
        approval_timeout: Duration,
    ) -> Option<OwnTools> {
        let user = config.user?;
        let exposure = config.effective();
        exposure.ceiling()?;
        Some(OwnTools {
            registry,
            exposure,
            user,
            approval: OwnApproval::new(store.clone(), target, approval_timeout),
            store,
            taken: super::tools::list()
                .into_iter()
                .map(|t| t.name.to_string())
                .collect(),
        })
    }

    /// The tool `name` of the registry with its tier, if the server does
    /// not use the name itself.
    fn find(&self, name: &str) -> Option<(Arc<dyn OwnTool>, Option<Tier>)> {
        if self.taken.iter().any(|t| t == name) {
            return None;
        }
        let tool = self.registry.get(name)?;
        let tier = tier_of(name, &tool.source());
        Some((tool, tier))
    }

    /// The tools offered, as listed to clients.
    pub fn list(&self) -> Vec<Tool> {
        self.registry
            .names()
            .iter()
            .filter_map(|name| self.find(name))
            .filter_map(|(tool, tier)| {
                let tier = tier.filter(|t| self.exposure.offers(*t))?;
                Some(listed(tool.as_ref(), tier))
            })
            .collect()
    }

    /// Whether `name` is one of the agent's tools (offered or not), so
    /// that a call of it is answered here.
    pub fn knows(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// Runs `name` with `args` for `client`: its observation, or why not.
    pub async fn call(
        &self,
        name: &str,
        args: JsonObject,
        client: &str,
        cancel: &CancellationToken,
    ) -> Result<String, Refusal> {
        let Some((tool, tier)) = self.find(name) else {
            return Err(format!("unknown tool {name:?}"));
        };
        let Some(tier) = tier.filter(|t| self.exposure.offers(*t)) else {
            let why = format!(
                "`{name}` is not offered: MCP_SERVER_TOOLS={} offers {}",
                self.exposure.as_str(),
                offered_words(self.exposure)
            );
            return Err(self.refused(name, client, &why).await);
        };
        let args = Value::Object(args);
        let origin = self.origin(client);
        tool.validate_for(&args, Some(&origin))
            .map_err(|e| e.for_model())?;
        if tool.spec().requires_approval {
            let asked = Asked {
                user: &origin.user,
                tool_name: name,
                tool_display: &tool.spec().display_name,
                arguments: &args,
                summary: tool.approval_summary_for(&args, Some(&origin)).await,
            };
            match self.approval.ask(self.user.platform, asked, cancel).await? {
                Verdict::Allowed { .. } => {}
                Verdict::Refused(why) => return Err(self.refused(name, client, &why).await),
            }
        }
        let outcome = self.run(tool.as_ref(), args, origin, cancel).await;
        self.store
            .audit()
            .record(
                "mcp.tool_call",
                json!({"tool": name, "tier": tier.as_str(), "user": self.user.describe(),
                       "client": super::requests::clip(client), "ok": outcome.is_ok()}),
            )
            .await;
        outcome
    }

    async fn run(
        &self,
        tool: &dyn OwnTool,
        args: Value,
        origin: Conversation,
        cancel: &CancellationToken,
    ) -> Result<String, Refusal> {
        let ctx = ToolContext {
            cancel: cancel.child_token(),
            session_id: self.session(&origin.key).await?,
            origin: Some(origin),
            ..ToolContext::default()
        };
        match tokio::time::timeout(CALL_TIMEOUT, tool.call(args, &ctx)).await {
            Ok(Ok(text)) => Ok(text),
            Ok(Err(e)) => Err(e.for_model()),
            Err(_) => {
                ctx.cancel.cancel();
                Err(format!(
                    "error: timed out after {} s",
                    CALL_TIMEOUT.as_secs()
                ))
            }
        }
    }

    /// The configured user speaking in their chat, as a chat turn would
    /// see them.
    fn origin(&self, client: &str) -> Conversation {
        let user = User {
            is_approver: false,
            id: self.user.user,
            display_name: format!("MCP client {}", super::requests::clip(client)),
            is_bot: false,
        };
        let direct = !self.user.named_chat || self.user.user.0 == self.user.chat.chat.0;
        let kind = if direct {
            ChatKind::Dm
        } else {
            ChatKind::Group
        };
        Conversation::new(self.user.chat, kind, user, None)
    }

    async fn session(&self, key: &SessionKey) -> Result<crate::domain::SessionId, Refusal> {
        self.store
            .sessions()
            .open(key)
            .await
            .map_err(super::requests::store_error)
    }

    /// Audits a refusal; returns its text.
    async fn refused(&self, name: &str, client: &str, why: &str) -> Refusal {
        self.store
            .audit()
            .record(
                "mcp.tool_refused",
                json!({"tool": name, "user": self.user.describe(),
                       "client": super::requests::clip(client), "why": why}),
            )
            .await;
        format!("refused: {why}")
    }
}

/// "read-only tools", "read-only tools and …", for a refusal.
fn offered_words(exposure: Exposure) -> &'static str {
    match exposure {
        Exposure::None => "none of the agent's tools",
        Exposure::Read => "only read-only tools",
        Exposure::Data => "read-only tools and tools that write the agent's own data",
        Exposure::Act => "every tool but the workspace's files and commands",
        Exposure::All => "every tool",
    }
}

/// A tool as listed to clients: its description says its tier and whether
/// it asks.
fn listed(tool: &dyn OwnTool, tier: Tier) -> Tool {
    let spec = tool.spec();
    let mut description = tool.description();
    if spec.requires_approval {
        description.push_str(
            " (Each call waits for a person's approval in the operator's chat; denied or expired calls are not run.)",
        );
    }
    let schema = match &spec.parameters {
        Value::Object(map) => map.clone(),
        _ => JsonObject::new(),
    };
    Tool::new(spec.name.clone(), description, Arc::new(schema)).with_annotations(
        ToolAnnotations::new()
            .read_only(tier == Tier::Read)
            .destructive(tier >= Tier::Act),
    )
}
