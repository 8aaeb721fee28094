//! exec_command (being written).
pub struct ExecConfig;
pub struct ExecTool;
