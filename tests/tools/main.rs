//! The tools: the built-in ones, HTTP, scripts and MCP servers (Node and Python).
//!
//! One test binary for the area; each module was a test binary of its own.
//!
//! `tools_builtin::exec_environment_is_cleared` sets `FAKE_SECRET_FOR_TEST` in
//! this process's environment; no test here may rely on that variable's absence.

#[path = "../support/mod.rs"]
mod support;

mod mcp;
mod mcp_confined;
mod mcp_own_tools;
mod mcp_python;
mod mcp_reload;
mod mcp_serve;
mod mcp_serve_http;
mod sandbox;
mod sandbox_protect;
mod skills_git;
mod skills_install;
mod tools_builtin;
mod tools_grown;
mod tools_http;
mod tools_script;
mod workspace_users;
