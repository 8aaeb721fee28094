//! The parts the gateway is assembled from: the model provider (with its
//! fallbacks), the tool registry (built-in, the operator's, grown from the
//! chat) and the skills.

use super::RunError;
use crate::config::Config;
use crate::llm::{EndpointConfig, FallbackProvider, ModelInfo, Provider};
use crate::memory::MemoryBook;
use crate::skills::{SkillBook, SkillLibrary, SkillProblem};
use crate::store::Store;
use crate::tasks::{CancelTaskTool, ScheduleTool, TaskManager};
use crate::tools::{
    looking_back_tools, memory_tools, portfolio_tools, AskUserTool, CheckTasksTool, ExecConfig,
    ExecTool, GrownEnv, GrownTools, HttpApiTool, HttpToolManager, InstallSkillTool, PlanTool,
    PreviewSkillTool, ReadFileTool, ReadStoredResultTool, Sandbox, ScriptTool, ScriptToolManager,
    SendFileTool, SkillTool, ToolRegistry, WebFetchConfig, WebFetchTool, WebSearchTool, Workspace,
    WriteFileTool, TOOL_SECRET_PREFIX,
};
use std::sync::Arc;
use switchboard_platform::{PlatformAdapter, Secret};

/// Builds the model provider from the config.
pub fn build_provider(config: &Config) -> Result<Arc<dyn Provider>, RunError> {
    let llm = &config.llm;
    let endpoint = |api, base_url: &str, model: &str, window, key: Option<&Secret>, text_calls| {
        let mut ec = EndpointConfig::new(base_url, ModelInfo::new(model, window))
            .with_idle_timeout(llm.idle_timeout);
        ec.frequency_penalty = llm.frequency_penalty;
        ec.max_output_tokens = llm.max_output_tokens;
        ec.thinking_budget = llm.thinking_budget;
        ec.text_tool_calls = text_calls;
        if let Some(key) = key {
            ec = ec.with_api_key(key.clone());
        }
        crate::llm::connect(api, ec)
    };
    let primary = endpoint(
        llm.api,
        &llm.base_url,
        &llm.model,
        llm.context_window,
        llm.api_key.as_ref(),
        llm.text_tool_calls,
    )?;
    if llm.fallbacks.is_empty() {
        return Ok(primary);
    }
    let fallbacks = llm
        .fallbacks
        .iter()
        .map(|f| {
            endpoint(
                f.api,
                &f.base_url,
                &f.model,
                f.context_window,
                f.api_key.as_ref(),
                f.text_tool_calls,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(FallbackProvider::new(primary, fallbacks)))
}

/// The workspace (`WORKSPACE_DIR`, created when missing): each chat user's
/// folder of it holds `WORKSPACE_QUOTA_MB`; the users of a platform whose
/// adapter is the operator at the machine (`local_operator`: the console)
/// see all of it.
pub(crate) fn open_workspace(
    config: &Config,
    adapters: &[Arc<dyn PlatformAdapter>],
) -> Result<Arc<Workspace>, RunError> {
    let ws = Workspace::new(&config.workspace_dir).map_err(|e| RunError::Workspace {
        path: config.workspace_dir.display().to_string(),
        reason: e.to_string(),
    })?;
    let operators = adapters
        .iter()
        .filter(|a| a.capabilities().local_operator)
        .map(|a| a.platform())
        .collect();
    Ok(Arc::new(
        ws.with_operators(operators)
            .with_quota(config.workspace_quota),
    ))
}

/// The built-in tools, the operator's, and those added from the chat.
pub fn build_tools(
    config: &Config,
    store: &Store,
    tasks: &Arc<TaskManager>,
    skills: &Arc<SkillLibrary>,
    adapters: &[Arc<dyn PlatformAdapter>],
) -> Result<(ToolRegistry, Arc<GrownTools>), RunError> {
    let ws = open_workspace(config, adapters)?;
    let sandbox = open_sandbox(config)?;
    let mut exec = ExecConfig::new(Arc::clone(&ws));
    exec.timeout = config.exec_timeout;
    exec.sandbox = Arc::clone(&sandbox);
    let max_output_chars = exec.max_output_chars;
    let fetch = WebFetchConfig {
        allow: config.web_fetch_allow.clone(),
        ..WebFetchConfig::default()
    };
    let mut registry = ToolRegistry::new();
    registry
        .register(Arc::new(ReadFileTool::new(Arc::clone(&ws))))
        .register(Arc::new(WriteFileTool::new(Arc::clone(&ws))))
        .register(Arc::new(ExecTool::new(exec)))
        .register(Arc::new(WebFetchTool::new(fetch)))
        .register(Arc::new(AskUserTool::new()))
        .register(Arc::new(SendFileTool::new(Arc::clone(&ws), adapters)))
        .register(Arc::new(CheckTasksTool::new(store.clone())))
        .register(Arc::new(ReadStoredResultTool::new(config.data_dir.clone())))
        .register(Arc::new(CancelTaskTool::new(Arc::clone(tasks))))
        .register(Arc::new(SkillTool::new(Arc::clone(skills))))
        .register(Arc::new(PreviewSkillTool::new(&config.web_fetch_allow)))
        .register(Arc::new(InstallSkillTool::new(
            Arc::clone(skills),
            &config.web_fetch_allow,
            config.tool_builders,
        )))
        .register(Arc::new(
            ScheduleTool::new(store.clone(), config.timezone.clone())
                .with_user_cap(config.caps.max_schedules),
        ));
    registry.register(Arc::new(PlanTool::new(store.clone())));
    if let Some(search) = &config.search {
        let tool = WebSearchTool::new(search.clone(), &config.web_fetch_allow);
        registry.register(Arc::new(tool));
    }
    for tool in memory_tools(MemoryBook::new(store.clone(), config.memory.clone())) {
        registry.register(tool);
    }
    for tool in looking_back_tools(store.clone(), config.memory.embeddings.clone()) {
        registry.register(tool);
    }
    if config.portfolio_tools {
        for tool in portfolio_tools(store.clone()) {
            registry.register(tool);
        }
    }
    register_operator_tools(&mut registry, config, &ws, max_output_chars, &sandbox);
    let grown = grown_tools(config, store, &registry, ws, sandbox, max_output_chars);
    registry
        .register(Arc::new(HttpToolManager::new(
            Arc::clone(&grown),
            config.tool_builders,
        )))
        .register(Arc::new(ScriptToolManager::new(
            Arc::clone(&grown),
            config.tool_builders,
        )));
    Ok((registry, grown))
}

/// The exec sandbox at the strongest level this machine offers, logged.
pub(super) fn open_sandbox(config: &Config) -> Result<Arc<Sandbox>, RunError> {
    let sandbox = Arc::new(Sandbox::detect(&config.exec_sandbox)?);
    tracing::info!("exec sandbox: {}", sandbox.describe());
    if let Some(warning) = sandbox.warning() {
        tracing::warn!("{warning}");
    }
    Ok(sandbox)
}

/// The operator's script tools (`SCRIPT_TOOLS_DIR`) and HTTP tools
/// (`HTTP_TOOLS_FILE`).
fn register_operator_tools(
    registry: &mut ToolRegistry,
    config: &Config,
    ws: &Arc<crate::tools::Workspace>,
    max_output_chars: usize,
    sandbox: &Arc<Sandbox>,
) {
    for def in &config.script_tools {
        registry.register(Arc::new(ScriptTool::new(
            def.clone(),
            Arc::clone(ws),
            max_output_chars,
            Arc::clone(sandbox),
        )));
    }
    for def in &config.http_tools {
        registry.register(Arc::new(HttpApiTool::new(
            def.clone(),
            &config.web_fetch_allow,
        )));
    }
}

/// The tools added from the chat, in `ws` under `sandbox`; the names in
/// `registry` so far are reserved.
pub(super) fn grown_tools(
    config: &Config,
    store: &Store,
    registry: &ToolRegistry,
    ws: Arc<Workspace>,
    sandbox: Arc<Sandbox>,
    max_output_chars: usize,
) -> Arc<GrownTools> {
    Arc::new(GrownTools::new(
        store.clone(),
        GrownEnv {
            reserved: registry.names(),
            workspace: ws,
            sandbox,
            max_output_chars,
            allow: config.web_fetch_allow.clone(),
            secrets: tool_secrets(config),
        },
    ))
}

/// The `TOOL_SECRET_*` variables, the only secrets tools added from the chat
/// may name.
pub(super) fn tool_secrets(
    config: &Config,
) -> std::collections::BTreeMap<String, switchboard_platform::Secret> {
    config
        .model_keys
        .iter()
        .filter(|(name, _)| name.starts_with(TOOL_SECRET_PREFIX))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// The built-in skills and those of `SKILLS_DIR`; files that cannot be used
/// are logged (and shown by `switchboard doctor`) and skipped.
pub fn load_skills(config: &Config) -> (SkillBook, Vec<SkillProblem>) {
    SkillBook::load(&config.skills_dir, &crate::gateway::COMMANDS)
}
