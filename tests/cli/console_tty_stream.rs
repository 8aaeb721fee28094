//! `switchboard chat` on a terminal (a tmux pane): an answer's unfinished
//! line is on screen while the model is still writing it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::console;
use crate::support;

use console::piped::Env;
use console::tty::Pane;
use support::fake_llm::{last_user_text, FakeLlm, Reply};

#[tokio::test(flavor = "multi_thread")]
async fn a_partial_line_shows_before_the_line_completes() {
    if !Pane::available() {
        eprintln!("tmux not installed: skipped");
        return;
    }
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        if last_user_text(request).as_deref() == Some("write slowly") {
            // A few words and no newline, then nothing more until Ctrl-C.
            Reply::text("A paragraph still being written").then_stall()
        } else {
            Reply::text("Done.")
        }
    });
    let env = Env::new(&llm.base_url());
    tokio::task::spawn_blocking(move || {
        let pane = Pane::chat(&env);
        pane.wait_for("Switchboard chat");
        pane.line("write slowly");
        // Before the fix a terminal showed nothing until the line ended.
        pane.wait_for("A paragraph still being written");
        pane.key("C-c");
        pane.wait_for("Cancelled.");
        pane.line("next");
        let screen = pane.wait_for("Done.");
        // The stopped line stays on screen once, not repeated.
        assert_eq!(
            screen.matches("A paragraph still being written").count(),
            1,
            "{screen}"
        );
    })
    .await
    .unwrap();
}
