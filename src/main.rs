//! The `switchboard` binary: parse the CLI, load config, seal the secrets away,
//! init tracing, call the library.

mod cli;
mod cli_chat;
mod cli_memory;
mod cli_model;
mod cli_pair;
mod cli_tasks;

use clap::Parser;
use std::process::ExitCode;
use switchboard::config::Config;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Before the runtime starts any thread: the environment is changed here.
    let sealed = switchboard::secrets::seal_process(&config);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async move {
        match cli::dispatch(args, config, sealed).await {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        }
    });
    // Everything has finished; a read of a terminal's stdin (the console's,
    // after `/exit` or Ctrl-C) never ends by itself and must not hold the exit.
    runtime.shutdown_background();
    code
}
