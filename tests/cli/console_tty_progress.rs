//! `switchboard chat` on a terminal (a tmux pane): a background task's
//! progress is one status line updated in place, never printed after the
//! prompt, and the prompt comes back after the task's notification.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::console;
use crate::support;

use console::piped::Env;
use console::tty::Pane;
use serde_json::json;
use support::e2e::messages;
use support::fake_llm::{last_user_text, FakeLlm, Reply};

#[tokio::test(flavor = "multi_thread")]
async fn twenty_progress_updates_are_one_line_not_sixty() {
    if !Pane::available() {
        eprintln!("tmux not installed: skipped");
        return;
    }
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let last = messages(request).last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            Reply::text("Started it.")
        } else if last_user_text(request).as_deref() == Some("count in the background") {
            Reply::tool_calls([(
                "call_1",
                "exec_command",
                json!({
                    "command": "for i in $(seq 1 20); do echo \"step $i $((i*5))%\"; sleep 1.1; done",
                    "background": true,
                }),
            )])
        } else {
            Reply::text("Noted.")
        }
    });
    let env = Env::new(&llm.base_url());
    tokio::task::spawn_blocking(move || {
        let pane = Pane::chat(&env);
        pane.wait_for("Switchboard chat");
        pane.line("count in the background");
        pane.wait_for("[n]");
        pane.line("y");
        pane.wait_for("Started it.");
        pane.wait_for("step 15");
        pane.wait_for("✅");
        // Give a late update the chance to show after the notification.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let screen = pane.screen().trim_end().to_owned();
        let rows = screen.lines().filter(|l| l.contains("step ")).count();
        assert!(rows <= 2, "{rows} progress rows:\n{screen}");
        assert!(!screen.contains("> ⏳"), "{screen}");
        // The prompt is back, on its own line, after the notification.
        assert_eq!(
            screen.lines().last().map(str::trim_end),
            Some(">"),
            "{screen}"
        );
    })
    .await
    .unwrap();
}
