//! `switchboard chat` as a user meets it, through piped stdin: cards answered
//! with words and numbers in any case, anything else re-prompted (never a
//! frozen console), edits that show what to type, `/exit` and `/stop`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::console;
use crate::support;

use console::piped::Env;
use serde_json::{json, Value};
use support::e2e::messages;
use support::fake_llm::{last_user_text, FakeLlm, Reply};

fn last_message(request: &Value) -> Value {
    messages(request).last().cloned().unwrap_or_default()
}

/// A model that asks to run `command`, reports the tool's result, and echoes
/// any other message.
fn exec_model(llm: &FakeLlm, command: &'static str) {
    llm.set_responder(move |request| {
        let last = last_message(request);
        let said = last_user_text(request).unwrap_or_default();
        if last["role"] == "tool" {
            let result = last["content"].as_str().unwrap_or_default();
            Reply::text(&format!("Tool said: {result}"))
        } else if said == "please run it" {
            Reply::tool_calls([("call_1", "exec_command", json!({ "command": command }))])
        } else {
            Reply::text(&format!("You said {said} to me."))
        }
    });
}

async fn user_texts(llm: &FakeLlm) -> Vec<String> {
    llm.requests()
        .await
        .iter()
        .filter(|r| last_message(r)["role"] == "user")
        .filter_map(last_user_text)
        .collect()
}

#[tokio::test]
async fn a_card_takes_words_in_any_case_and_reprompts_on_anything_else() {
    let llm = FakeLlm::start().await;
    exec_model(&llm, "echo hi > proof.txt; echo ran-it");
    let env = Env::new(&llm.base_url());
    // Today "ok" went to the model and froze the console until the card expired.
    let done = env.chat("please run it\nok\nYES\ny\n").await;

    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(
        done.stdout
            .contains("The card is waiting for an answer: y/yes/allow/once/1 (allow once)"),
        "`ok` is re-prompted\n{done}"
    );
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("proof.txt")).unwrap_or_default(),
        "hi\n",
        "`YES` allowed it\n{done}"
    );
    assert!(done.stdout.contains("Tool said:"), "{done}");
    assert!(done.stdout.contains("You said y to me."), "{done}");
    // The decision is one line, printed once; the card itself once.
    assert_eq!(done.stdout.matches("Allowed once").count(), 1, "{done}");
    assert_eq!(done.stdout.matches("requested by").count(), 1, "{done}");
    assert_eq!(
        user_texts(&llm).await,
        ["please run it", "y"],
        "neither `ok` nor `YES` reached the model"
    );
}

#[tokio::test]
async fn printf_run_yes_y_does_not_hang() {
    let llm = FakeLlm::start().await;
    exec_model(&llm, "echo hi");
    let env = Env::new(&llm.base_url());
    let done = env.chat("please run it\nyes\ny\n").await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(done.stdout.contains("Tool said:"), "{done}");
    assert!(done.stdout.contains("You said y to me."), "{done}");
}

#[tokio::test]
async fn a_card_takes_the_number_of_its_button() {
    let llm = FakeLlm::start().await;
    exec_model(&llm, "echo never > never.txt");
    let env = Env::new(&llm.base_url());
    let done = env.chat("please run it\n4\n").await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(done.stdout.contains("Denied"), "{done}");
    assert!(
        !done.stdout.contains("end of input"),
        "`4` denied it\n{done}"
    );
    assert!(!env.workspace().join("never.txt").exists());
}

#[tokio::test]
async fn stop_at_a_card_denies_it_at_once() {
    let llm = FakeLlm::start().await;
    exec_model(&llm, "echo never > never.txt");
    let env = Env::new(&llm.base_url());
    let done = env.chat("please run it\n/stop\nhello\n").await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(done.stdout.contains("Denied"), "{done}");
    assert!(done.stdout.contains("You said hello to me."), "{done}");
    assert!(!env.workspace().join("never.txt").exists());
}

#[tokio::test]
async fn an_edit_shows_what_to_type_and_a_bad_one_reopens_the_card() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let last = last_message(request);
        if last["role"] == "tool" {
            let result = last["content"].as_str().unwrap_or_default();
            Reply::text(&format!("Tool said: {result}"))
        } else {
            Reply::tool_calls([(
                "call_1",
                "write_file",
                json!({"path": "a.txt", "content": "first"}),
            )])
        }
    });
    let env = Env::new(&llm.base_url());
    // Two text fields: plain text cannot say which it replaces. Today the
    // action was denied; now the card opens again for another try.
    let done = env
        .chat("please write it\nEdit\njust text\ne\n{\"path\": \"b.txt\", \"content\": \"edited\"}\nyes\n")
        .await;

    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(
        done.stdout
            .contains(r#"a JSON object like `{"content":"first","path":"a.txt"}`"#),
        "the edit prompt shows the current arguments\n{done}"
    );
    assert!(done.stdout.contains("The card is open again."), "{done}");
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("b.txt")).unwrap_or_default(),
        "edited",
        "{done}"
    );
    assert!(!env.workspace().join("a.txt").exists(), "{done}");
}

#[tokio::test]
async fn an_edit_of_a_command_is_the_new_command_as_text() {
    let llm = FakeLlm::start().await;
    exec_model(&llm, "echo original");
    let env = Env::new(&llm.base_url());
    let done = env.chat("please run it\n3\necho edited\n1\n").await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(
        done.stdout
            .contains("the new command as plain text (now `echo original`)"),
        "{done}"
    );
    assert!(
        done.stdout.contains("Tool said:") && done.stdout.contains("edited"),
        "{done}"
    );
}

#[tokio::test]
async fn exit_quits_at_once_and_later_lines_are_not_sent() {
    let llm = FakeLlm::start().await;
    exec_model(&llm, "echo hi");
    let env = Env::new(&llm.base_url());
    let done = env.chat("hello\n/EXIT\nnever sent\n").await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(done.stdout.contains("You said hello to me."), "{done}");
    assert_eq!(user_texts(&llm).await, ["hello"]);
    let done = env.chat("/quit\nnever sent\n").await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    assert_eq!(user_texts(&llm).await, ["hello"]);
}

#[tokio::test]
async fn stop_with_nothing_running_says_so() {
    let llm = FakeLlm::start().await;
    exec_model(&llm, "echo hi");
    let env = Env::new(&llm.base_url());
    let done = env.chat("/stop\n/help\n").await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(
        done.stdout.contains("Nothing is running to stop."),
        "{done}"
    );
    assert!(
        done.stdout
            .contains("Ctrl-C twice, Ctrl-D, /exit or /quit quits"),
        "/help in the console says how to quit\n{done}"
    );
    assert!(llm.requests().await.is_empty());
}
