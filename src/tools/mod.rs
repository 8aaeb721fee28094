//! Tools: specs, the registry and the built-in tools (one file per family).

mod exec;
mod fs;
mod net_guard;
mod spec;
mod web_fetch;

pub use exec::{ExecConfig, ExecTool};
pub use fs::{ReadFileTool, Workspace, WriteFileTool};
pub use spec::{Progress, ProgressSink, Tool, ToolContext, ToolError, ToolSpec};
pub use web_fetch::{WebFetchConfig, WebFetchTool};
