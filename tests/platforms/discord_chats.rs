//! Per-chat settings (`CHATS_FILE`) on Discord, where a thread is a chat of
//! its own: a thread bound by `discord:<channel>/<thread>` gets its model,
//! tools and instructions (an approval pressed there resumes on its model),
//! and a thread without an entry takes its channel's — a tool the channel
//! denies is neither offered nor run, and free response holds in the thread.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::discord_e2e::{allow_button, tool_result, E2e, ALICE, CHANNEL, THREAD};
use crate::support;

use serde_json::{json, Value};
use support::fake_discord::{custom_ids, message_id, Press, UserMessage};
use support::fake_llm::{FakeLlm, Reply};

/// A thread of [`CHANNEL`] with no entry of its own.
const OPEN_THREAD: u64 = 1_200_000_000_000_000_015;

fn offered(request: &Value) -> Vec<String> {
    let mut names: Vec<String> = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_thread_gets_its_own_entry_and_an_unbound_thread_its_channels() {
    let coder = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("chats.json");
    std::fs::write(
        &chats,
        json!({"chats": {
            format!("discord:{CHANNEL}"): {"tools": {"deny": ["exec_command"]}, "free_response": true},
            format!("discord:{CHANNEL}/{THREAD}"): {"model": "coder",
                "system_prompt": "You are the coding thread's assistant.",
                "tools": {"allow": ["read_file", "exec_command"]}},
        }})
        .to_string(),
    )
    .unwrap();
    let chats = chats.display().to_string();
    let coder_url = coder.base_url();
    // The fallback entry puts "coder" in the model catalogue.
    let e = E2e::with(&[
        ("CHATS_FILE", chats.as_str()),
        ("LLM_FALLBACK_1_BASE_URL", coder_url.as_str()),
        ("LLM_FALLBACK_1_MODEL", "coder"),
    ])
    .await;
    e.discord.add_thread(OPEN_THREAD, CHANNEL);

    // The bound thread: the coding model, only its two tools, its
    // instructions; its approval card pressed in the thread resumes there.
    coder.push(Reply::tool_calls([(
        "call_1",
        "exec_command",
        json!({"command": "echo thread-run"}),
    )]));
    coder.push(Reply::text("Coder here: it printed thread-run."));
    e.say(UserMessage::new(THREAD, ALICE, "run the echo").mentioning_bot());
    let card = e.wait_card(THREAD).await;
    e.discord
        .press(Press::new(message_id(&card), allow_button(&card), ALICE))
        .unwrap();
    e.wait_text(THREAD, "Coder here: it printed thread-run.")
        .await;
    let sent = coder.wait_for_requests(2).await;
    assert_eq!(offered(&sent[0]), ["exec_command", "read_file"]);
    assert!(
        sent[0]
            .to_string()
            .contains("You are the coding thread's assistant."),
        "the thread's instructions are not in the system prompt"
    );
    assert!(tool_result(&sent[1], "call_1").contains("thread-run"));
    assert!(
        e.llm.requests().await.is_empty(),
        "the bound thread went to the default model"
    );

    // A thread with no entry: the channel's settings — free response (no
    // mention needed) and no exec_command, neither offered nor run.
    e.llm.push(Reply::tool_calls([(
        "call_x",
        "exec_command",
        json!({"command": "id"}),
    )]));
    e.llm.push(Reply::text("I cannot run commands here."));
    e.say(UserMessage::new(OPEN_THREAD, ALICE, "run id please"));
    e.wait_text(OPEN_THREAD, "I cannot run commands here.")
        .await;
    let requests = e.llm.wait_for_requests(2).await;
    let tools = offered(&requests[0]);
    assert!(!tools.contains(&"exec_command".to_owned()), "{tools:?}");
    assert!(tools.contains(&"read_file".to_owned()), "{tools:?}");
    assert!(
        !requests[0]
            .to_string()
            .contains("You are the coding thread's assistant."),
        "another thread's instructions leaked"
    );
    let refused = tool_result(&requests[1], "call_x");
    assert!(refused.contains("unknown tool `exec_command`"), "{refused}");
    let approval_buttons = e
        .discord
        .bot_messages(OPEN_THREAD)
        .iter()
        .flat_map(custom_ids)
        .filter(|id| id.starts_with("ap:"))
        .count();
    assert_eq!(approval_buttons, 0, "a denied tool asked for approval");
    e.stop().await;
}
