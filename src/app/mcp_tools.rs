//! The agent's own tools for `switchboard mcp` (`MCP_SERVER_TOOLS`), built
//! as the gateway builds them but without one: only the tools of the tiers
//! offered, for the user `MCP_SERVER_USER` names.

use super::parts::{grown_tools, open_sandbox, open_workspace};
use super::RunError;
use crate::config::Config;
use crate::mcp::serve::{OwnTools, Tier};
use crate::memory::MemoryBook;
use crate::store::Store;
use crate::tasks::ScheduleTool;
use crate::tools::{
    looking_back_tools, memory_tools, portfolio_tools, CheckTasksTool, ExecConfig, ExecTool,
    HttpApiTool, ReadFileTool, ScriptTool, ToolRegistry, WebFetchConfig, WebFetchTool,
    WebSearchTool, WriteFileTool,
};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The own tools `config` offers over MCP (none: `None`); the tools added
/// from the chat are reloaded until `shutdown`.
pub fn mcp_own_tools(
    config: &Config,
    store: &Store,
    shutdown: &CancellationToken,
) -> Result<Option<OwnTools>, RunError> {
    let Some(top) = config.mcp_own_tools.effective().ceiling() else {
        return Ok(None);
    };
    let mut registry = ToolRegistry::new();
    for tool in memory_tools(MemoryBook::new(store.clone(), config.memory.clone())) {
        registry.register(tool);
    }
    for tool in looking_back_tools(store.clone(), config.memory.embeddings.clone()) {
        registry.register(tool);
    }
    registry.register(Arc::new(CheckTasksTool::new(store.clone())));
    if config.portfolio_tools {
        for tool in portfolio_tools(store.clone()) {
            registry.register(tool);
        }
    }
    if top >= Tier::Act {
        acting_tools(&mut registry, config, store, top, shutdown)?;
    }
    Ok(OwnTools::new(
        registry,
        store.clone(),
        config.mcp_own_tools,
        config.mcp_notify_chat,
        config.approval_timeout,
    ))
}

/// The tools with effects (and, for `all`, the workspace's).
fn acting_tools(
    registry: &mut ToolRegistry,
    config: &Config,
    store: &Store,
    top: Tier,
    shutdown: &CancellationToken,
) -> Result<(), RunError> {
    let fetch = WebFetchConfig {
        allow: config.web_fetch_allow.clone(),
        ..WebFetchConfig::default()
    };
    registry
        .register(Arc::new(WebFetchTool::new(fetch)))
        .register(Arc::new(
            ScheduleTool::new(store.clone(), config.timezone.clone())
                .with_user_cap(config.caps.max_schedules),
        ));
    if let Some(search) = &config.search {
        let tool = WebSearchTool::new(search.clone(), &config.web_fetch_allow);
        registry.register(Arc::new(tool));
    }
    for def in &config.http_tools {
        registry.register(Arc::new(HttpApiTool::new(
            def.clone(),
            &config.web_fetch_allow,
        )));
    }
    let ws = open_workspace(config, &[])?;
    let sandbox = open_sandbox(config)?;
    let mut exec = ExecConfig::new(Arc::clone(&ws));
    exec.timeout = config.exec_timeout;
    exec.sandbox = Arc::clone(&sandbox);
    let max_output_chars = exec.max_output_chars;
    if top >= Tier::All {
        registry
            .register(Arc::new(ReadFileTool::new(Arc::clone(&ws))))
            .register(Arc::new(WriteFileTool::new(Arc::clone(&ws))))
            .register(Arc::new(ExecTool::new(exec)));
        for def in &config.script_tools {
            registry.register(Arc::new(ScriptTool::new(
                def.clone(),
                Arc::clone(&ws),
                max_output_chars,
                Arc::clone(&sandbox),
            )));
        }
    }
    let grown = grown_tools(config, store, registry, ws, sandbox, max_output_chars);
    grown.watch(shutdown.clone());
    registry.register_dynamic(grown);
    Ok(())
}
