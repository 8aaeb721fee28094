//! Tools: specs, the registry and the built-in tools (one file per family).

mod args;
mod ask_user;
mod check_tasks;
mod diff_summary;
mod exec;
mod exec_output;
mod fs;
mod html_text;
mod memory;
mod net_guard;
mod read_result;
mod registry;
mod schedule;
mod skill;
mod spec;
mod web_fetch;

pub use ask_user::AskUserTool;
pub use check_tasks::CheckTasksTool;
pub use exec::{ExecConfig, ExecTool};
pub use fs::{ReadFileTool, Workspace, WriteFileTool};
pub use memory::memory_tools;
pub(crate) use read_result::stored_result_path;
pub use read_result::{ReadStoredResultTool, NAME as READ_STORED_RESULT};
pub use registry::ToolRegistry;
pub use schedule::{CancelTaskTool, ScheduleTool};
pub use skill::SkillTool;
pub use spec::{Progress, ProgressSink, Tool, ToolContext, ToolError, ToolSpec};
pub use web_fetch::{WebFetchConfig, WebFetchTool};
