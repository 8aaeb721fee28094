//! `switchboard chat`: the console channel on the full core. Ctrl-C goes to
//! the console (it stops an answer; twice at the prompt it quits); SIGTERM
//! shuts down.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use switchboard::config::Config;
use switchboard_console::ConsoleAdapter;
use switchboard_platform::PlatformAdapter;
use tokio_util::sync::CancellationToken;

pub(crate) async fn run(config: Config) -> anyhow::Result<ExitCode> {
    let interactive = std::io::stdin().is_terminal();
    let shutdown = CancellationToken::new();
    let console = ConsoleAdapter::stdio(!interactive);
    forward_signals(Arc::clone(&console), shutdown.clone());
    if interactive {
        println!(
            "Switchboard chat · model {} · /help for commands · Ctrl-C stops an answer · /exit or Ctrl-D quits",
            config.llm.model
        );
    }
    let quit = console.quit_requested();
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![console];
    let running = switchboard::start(&config, adapters, shutdown.clone()).await?;
    let store = running.store.clone();
    // At end of piped input, queued work and background tasks finish first
    // (their notifications are part of the conversation); a user who quits
    // leaves at once.
    tokio::select! {
        () = async {
            running.adapters_done().await;
            if !quit.is_cancelled() {
                running.idle().await;
            }
        } => {}
        () = quit.cancelled() => {}
        () = shutdown.cancelled() => {}
    }
    shutdown.cancel();
    running.wait().await;
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C (SIGINT) to the console, each time; SIGTERM shuts down.
fn forward_signals(console: Arc<ConsoleAdapter>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        #[cfg(unix)]
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        loop {
            #[cfg(unix)]
            let terminated = async {
                match term.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            #[cfg(not(unix))]
            let terminated = std::future::pending::<()>();
            tokio::select! {
                r = tokio::signal::ctrl_c() => match r {
                    Ok(()) => console.interrupt(),
                    // No Ctrl-C handler: the default action (exit) stays.
                    Err(_) => std::future::pending::<()>().await,
                },
                () = terminated => {
                    shutdown.cancel();
                    return;
                }
                () = shutdown.cancelled() => return,
            }
        }
    });
}
