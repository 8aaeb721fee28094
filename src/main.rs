//! The `switchboard` binary: parse the CLI, load config, init tracing, call the library.

mod cli;
mod cli_memory;
mod cli_model;
mod cli_pair;
mod cli_tasks;

use clap::Parser;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args = cli::Args::parse();
    match cli::dispatch(args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
