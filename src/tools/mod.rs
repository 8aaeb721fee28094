//! Tools: specs, the registry and the built-in tools (one file per family).

mod host;
pub use host::{Asked, NestedResume, Pause, Resolution, TurnCheckpoint};
mod args;
mod ask_user;
mod chat_history;
mod chat_history_rank;
mod check_tasks;
mod declared;
mod diff_summary;
mod exec;
mod exec_output;
mod exec_quota;
mod fs;
mod fs_error;
mod fs_open;
mod grown;
mod history_scan;
mod html_text;
mod http_api;
mod http_api_defs;
#[cfg(test)]
mod http_api_props;
mod http_body;
mod image_sink;
mod looking_back;
mod memory;
mod net_guard;
mod plan;
mod policy;
mod portfolio;
mod process;
mod process_tree;
mod progress;
mod read_back;
mod read_result;
mod registry;
mod sandbox;
mod script;
mod script_defs;
mod send_file;
mod skill;
mod skill_git;
mod skill_install;
mod spec;
mod web_fetch;
mod web_search;

pub use ask_user::AskUserTool;
pub use check_tasks::CheckTasksTool;
pub use exec::{ExecConfig, ExecTool};
pub use policy::ToolPolicy;
/// The names of the built-in tools; operator-declared tools cannot take them.
pub const BUILTIN_TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "exec_command",
    "web_fetch",
    "web_search",
    "ask_user",
    "send_file",
    "check_background_tasks",
    "read_stored_result",
    "cancel_task",
    "execute_skill",
    "schedule",
    "remember",
    "recall",
    "forget",
    "query_my_chat_history",
    "get_my_reflections",
    "get_my_feedback",
    "portfolio",
    "update_portfolio",
    "plan",
    "delegate_to_research",
    "delegate_to_analysis",
    "http_tool",
    "script_tool",
    "preview_skill",
    "install_skill",
];

pub(crate) use crate::dirs::stored_result_path;
pub use crate::workspace::{folder_name, BeneathError, PathError, Workspace, USERS_DIR};
pub use declared::DeclaredSchema;
pub use fs::{ReadFileTool, WriteFileTool};
pub use grown::{
    GrownEnv, GrownTools, HttpToolManager, ScriptToolManager, ToolBuilders, HTTP_TOOL, SCRIPT_TOOL,
    SECRET_PREFIX as TOOL_SECRET_PREFIX,
};
pub use http_api::HttpApiTool;
pub use http_api_defs::{load_http_tools, AuthPlace, HttpToolDef, HttpToolProblem};
pub use image_sink::{AttachError, ImageSink};
pub use looking_back::looking_back_tools;
pub use memory::memory_tools;
pub use plan::PlanTool;
pub use portfolio::portfolio_tools;
pub use progress::{Progress, ProgressSink};
pub use read_result::{ReadStoredResultTool, NAME as READ_STORED_RESULT};
pub use registry::{DynamicTools, ToolRegistry};
pub use sandbox::{
    Level, Limits, Network, Protected, Sandbox, SandboxConfig, SandboxError, SandboxMode,
};
pub use script::ScriptTool;
pub use script_defs::{load_script_tools, ScriptToolDef, ScriptToolProblem, MAX_SCRIPT_TIMEOUT};
pub use send_file::SendFileTool;
pub use skill::SkillTool;
pub use skill_install::{
    source_url as skill_source_url, InstallSkillTool, PreviewSkillTool, INSTALL_SKILL,
    MAX_SKILL_BYTES,
};
pub use spec::{Tool, ToolContext, ToolError, ToolSource, ToolSpec, TurnHost};
pub use web_fetch::{WebFetchConfig, WebFetchTool};
pub use web_search::{
    SearchConfig, SearchProvider, WebSearchTool, DEFAULT_SEARCH_RESULTS, MAX_SEARCH_RESULTS,
};
