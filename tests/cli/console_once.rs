//! `switchboard chat` on pipes prints each answer once: a tool round's
//! answer used to come twice (the streamed draft, then the final text).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::console;
use crate::support;

use console::piped::Env;
use serde_json::json;
use support::fake_llm::{FakeLlm, Reply};

#[tokio::test]
async fn a_tool_rounds_answer_is_printed_once() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::text_then_tool_calls(
        "Let me look at the notes.",
        [("call_1", "read_file", json!({"path": "notes.txt"}))],
    ));
    llm.push(Reply::text("The notes say: buy milk and walk the dog."));
    llm.push(Reply::text("A plain second answer."));
    let env = Env::new(&llm.base_url());
    std::fs::create_dir_all(env.workspace()).unwrap();
    std::fs::write(
        env.workspace().join("notes.txt"),
        "buy milk\nwalk the dog\n",
    )
    .unwrap();
    let done = env.chat("what do my notes say?\nand then?\n").await;

    assert_eq!(done.status.code(), Some(0), "{done}");
    for line in [
        "Let me look at the notes.",
        "The notes say: buy milk and walk the dog.",
        "A plain second answer.",
    ] {
        assert_eq!(done.stdout.matches(line).count(), 1, "{line:?}\n{done}");
    }
}

#[tokio::test]
async fn an_approved_rounds_answer_is_printed_once() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::text_then_tool_calls(
        "I will run it.",
        [("call_1", "exec_command", json!({"command": "echo ran-it"}))],
    ));
    llm.push(Reply::text("Tool said: ran-it, all good."));
    let env = Env::new(&llm.base_url());
    let done = env.chat("please run it\ny\n").await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    for line in ["I will run it.", "Tool said: ran-it, all good."] {
        assert_eq!(done.stdout.matches(line).count(), 1, "{line:?}\n{done}");
    }
}

/// A sub-agent's step shows under the text while it works; the answer that
/// replaces it was printed whole again, the text before it a second time.
#[tokio::test]
async fn a_sub_agents_round_is_printed_once() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::text_then_tool_calls(
        "Let me ask the researcher.",
        [(
            "call_1",
            "delegate_to_research",
            json!({"task": "read notes.txt"}),
        )],
    ));
    llm.push(Reply::tool_calls([(
        "sub_1",
        "read_file",
        json!({"path": "notes.txt"}),
    )]));
    llm.push(Reply::text("The notes say buy milk."));
    llm.push(Reply::text("The researcher says: buy milk."));
    let env = Env::new(&llm.base_url());
    std::fs::create_dir_all(env.workspace()).unwrap();
    std::fs::write(env.workspace().join("notes.txt"), "buy milk\n").unwrap();
    let done = env.chat("what do my notes say?\n").await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    for line in [
        "Let me ask the researcher.",
        "The researcher says: buy milk.",
    ] {
        assert_eq!(done.stdout.matches(line).count(), 1, "{line:?}\n{done}");
    }
}
