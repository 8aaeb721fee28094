//! `switchboard chat` on a terminal (a tmux pane): Ctrl-C stops an answer,
//! at the prompt Ctrl-C twice or Ctrl-D quits and the shell's prompt comes
//! back on its own line; a card on a terminal takes words and Ctrl-C.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::console;
use crate::support;

use console::piped::Env;
use console::tty::{Pane, SHELL_PROMPT};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use support::e2e::messages;
use support::fake_llm::{last_user_text, FakeLlm, Reply};

/// The shell's line after `chat` exited: its own line, status 0.
fn assert_shell_prompt_on_its_own_line(screen: &str) {
    let line = screen
        .lines()
        .find(|l| l.contains(SHELL_PROMPT))
        .unwrap_or_default();
    assert_eq!(line.trim_end(), format!("{SHELL_PROMPT}0"), "{screen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_stops_the_answer_and_twice_at_the_prompt_quits() {
    if !Pane::available() {
        eprintln!("tmux not installed: skipped");
        return;
    }
    let llm = FakeLlm::start().await;
    let asked = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&asked);
    llm.set_responder(move |request| {
        let said = last_user_text(request).unwrap_or_default();
        if said == "think hard" {
            seen.store(true, Ordering::SeqCst);
            // Streams a few words, then nothing more: only Ctrl-C ends it.
            Reply::text("Thinking about it").then_stall()
        } else {
            Reply::text(&format!("You said {said} to me."))
        }
    });
    let env = Env::new(&llm.base_url());
    let pane = tokio::task::spawn_blocking(move || {
        let pane = Pane::chat(&env);
        pane.wait_for("Switchboard chat");
        pane.line("think hard");
        // The model is answering (on a terminal a partial line may not show yet).
        let start = std::time::Instant::now();
        while !asked.load(Ordering::SeqCst) {
            assert!(
                start.elapsed() < console::piped::HANG,
                "the model was never asked"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        pane.key("C-c");
        pane.wait_for("Cancelled.");
        // The process lives on and takes the next line.
        pane.line("again");
        pane.wait_for_prompt_after("You said again to me.");
        pane.key("C-c");
        pane.wait_for("Ctrl-C again, Ctrl-D, /exit or /quit to quit");
        pane.key("C-c");
        let screen = pane.wait_for(SHELL_PROMPT);
        assert_shell_prompt_on_its_own_line(&screen);
        (pane, env)
    })
    .await
    .unwrap();
    drop(pane);
    let said: Vec<String> = llm
        .requests()
        .await
        .iter()
        .filter_map(last_user_text)
        .collect();
    assert!(said.contains(&"again".to_owned()), "{said:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_d_at_the_prompt_quits_at_once_on_a_line_of_its_own() {
    if !Pane::available() {
        eprintln!("tmux not installed: skipped");
        return;
    }
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Reply::text("Hello!"));
    let env = Env::new(&llm.base_url());
    tokio::task::spawn_blocking(move || {
        let pane = Pane::chat(&env);
        pane.wait_for("Switchboard chat");
        pane.line("hi");
        pane.wait_for_prompt_after("Hello!");
        pane.key("C-d");
        let screen = pane.wait_for(SHELL_PROMPT);
        assert_shell_prompt_on_its_own_line(&screen);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_on_a_terminal_reprompts_and_ctrl_c_denies_it() {
    if !Pane::available() {
        eprintln!("tmux not installed: skipped");
        return;
    }
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let last = messages(request).last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            Reply::text("Not run, as you wish.")
        } else {
            Reply::tool_calls([(
                "call_1",
                "exec_command",
                json!({"command": "echo never > never.txt"}),
            )])
        }
    });
    let env = Env::new(&llm.base_url());
    let env = tokio::task::spawn_blocking(move || {
        let pane = Pane::chat(&env);
        pane.wait_for("Switchboard chat");
        pane.line("please run it");
        pane.wait_for("[n]");
        pane.line("ok");
        pane.wait_for("The card is waiting for an answer");
        pane.key("C-c");
        let screen = pane.wait_for("Not run, as you wish.");
        assert!(screen.contains("Denied"), "{screen}");
        env
    })
    .await
    .unwrap();
    assert!(!env.workspace().join("never.txt").exists());
}
