//! The `switchboard` binary: parse the CLI, load config, seal the secrets away,
//! init tracing, call the library.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = cli::global::parse();
    // The wizard writes the configuration: it must not need one.
    if let Some(init) = args.take_init() {
        return init_wizard(init);
    }
    // The document reader reads one file for the gateway, with no configuration.
    if let Some(extract) = args.take_extract() {
        return cli::extract::run(&extract);
    }
    // The reference describes the configuration: it must not need one either.
    if args.is_config_reference() {
        return cli::config::run(cli::config::ConfigAction::Reference);
    }
    let mut config = match args.global.load_config(args.needs_model()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Documents are read by this binary again, as `extract-document`.
    if config.media.reader.program.is_none() {
        config.media.reader.program = switchboard::media::own_binary();
    }
    let data_dir_hint = cli::doctor::data_dir_hint(&config);
    // Before the runtime starts any thread: the environment is changed here.
    let sealed = switchboard::secrets::seal_process(config.secret_values());
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
                if let Some(hint) = data_dir_hint(&e) {
                    eprintln!("{hint}");
                }
                ExitCode::FAILURE
            }
        }
    });
    // Everything has finished; a read of a terminal's stdin (the console's,
    // after `/exit` or Ctrl-C) never ends by itself and must not hold the exit.
    runtime.shutdown_background();
    code
}

/// `switchboard init`, on a runtime of its own.
fn init_wizard(init: cli::init::InitArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::init::run(init)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
