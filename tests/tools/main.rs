//! The tools: the built-in ones, HTTP and scripts.
//!
//! One test binary for the area; each module was a test binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod tools_builtin;
mod tools_http;
mod tools_script;
