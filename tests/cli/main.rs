//! The `switchboard` binary: its commands, the console on pipes and on a terminal, the first run, and the docs kept true to the code.
//!
//! One test binary for the area; each module was a test binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod cli;
mod cli_admin;
mod cli_console_restart;
mod cli_doctor;
mod cli_identity;
mod console;
mod console_chat;
mod console_once;
mod console_tty;
mod console_tty_progress;
mod console_tty_stream;
mod console_voice;
mod docs;
mod env_file_sandbox;
mod first_run;
mod init_wizard;
mod layers;
mod otel_traces;
mod packaging;
mod reload_signal;
