//! read_file / write_file (being written).
pub struct ReadFileTool;
pub struct WriteFileTool;
pub struct Workspace;
