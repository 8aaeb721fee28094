//! Activity lines on the real adapters: a tool round's ✓ line in the draft
//! and the collapsed `🔧 1 tool · …` line above the final answer — in one
//! message edited in place on Discord (Markdown), in a native draft then one
//! message in a Telegram private chat (HTML, rendered as an edit is).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::discord_e2e;
use crate::support;
use crate::telegram_e2e;

use serde_json::json;
use std::time::Duration;
use support::fake_discord::{message_id, UserMessage};
use support::fake_llm::Reply;
use support::fake_telegram::Where;

const ANSWER: &str =
    "The notes say to buy milk, walk the dog and call the plumber before noon today.";

/// A read of `notes.txt`, then the answer streamed slowly enough for the
/// draft to be shown (and edited) within the platform's edit interval.
fn tool_round(llm: &support::fake_llm::FakeLlm, delay: Duration) {
    llm.push(Reply::tool_calls([(
        "call_1",
        "read_file",
        json!({"path": "notes.txt"}),
    )]));
    llm.push(Reply::text(ANSWER).with_chunk_delay(delay));
}

#[tokio::test]
async fn telegram_shows_the_tool_line_then_collapses_it() {
    let mut workspace = None;
    let e = telegram_e2e::E2e::start(|c| {
        c.chat_verbosity = switchboard::gateway::Verbosity::Tools;
        workspace = Some(c.workspace_dir.clone());
    })
    .await;
    // Ann's own workspace folder: her turns see only it.
    let workspace = workspace.unwrap().join("users/telegram-900");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "buy milk\n").unwrap();
    tool_round(&e.llm, Duration::from_millis(60));
    e.tg.message(Where::Dm, &telegram_e2e::ann(), "what do my notes say?");
    e.wait("the collapsed answer", |t| {
        t.bot_messages(900)
            .iter()
            .any(|m| m.text.ends_with(ANSWER) && m.text.starts_with("🔧"))
    })
    .await;
    let msgs = e.answered(900, 1).await;

    assert_eq!(msgs.len(), 1, "one message: {msgs:#?}");
    let text = &msgs[0].text;
    assert!(
        text.starts_with("🔧 1 tool · ") && text.contains(" s\n\n"),
        "{text}"
    );
    assert_eq!(msgs[0].edits, 0, "a private chat streams as native drafts");
    let text_of =
        |c: support::fake_telegram::Call| c.params["text"].as_str().unwrap_or_default().to_owned();
    let drafts: Vec<String> =
        e.tg.calls_to("SendMessageDraft")
            .into_iter()
            .map(text_of)
            .collect();
    assert!(
        drafts
            .iter()
            .any(|t| t.starts_with("✓ Read file · <code>notes.txt</code> · ")),
        "the tool's line, rendered: {drafts:#?}"
    );
    let sent: Vec<String> =
        e.tg.calls_to("SendMessage")
            .into_iter()
            .map(text_of)
            .collect();
    assert_eq!(sent.len(), 1, "no extra message: {sent:#?}");
    assert!(
        sent[0].starts_with("<i>🔧 1 tool · "),
        "the collapsed line in italics: {sent:#?}"
    );
    assert!(e.tg.calls_to("EditMessageText").is_empty());
    assert_eq!(e.tg.rate_limited_responses(), 0);
    e.stop().await;
}

#[tokio::test]
async fn discord_shows_the_tool_line_then_collapses_it() {
    let e = discord_e2e::E2e::with(&[("CHAT_VERBOSITY", "tools")]).await;
    let ws = e
        ._dir
        .path()
        .join(format!("ws/users/discord-{}", discord_e2e::ALICE));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "buy milk\n").unwrap();
    // Past Discord's edit interval (a second) while the answer streams.
    tool_round(&e.llm, Duration::from_millis(120));
    let channel = discord_e2e::CHANNEL;
    e.say(UserMessage::new(channel, discord_e2e::ALICE, "what do my notes say?").mentioning_bot());
    e.wait("the collapsed answer", |d| {
        discord_e2e::texts(d, channel)
            .iter()
            .any(|t| t.ends_with(ANSWER) && t.starts_with("_🔧"))
    })
    .await;
    e.quiet().await;

    let texts = discord_e2e::texts(&e.discord, channel);
    assert_eq!(texts.len(), 1, "one message: {texts:?}");
    assert!(texts[0].starts_with("_🔧 1 tool · "), "{}", texts[0]);
    let id = message_id(&e.discord.bot_messages(channel)[0]);
    let path = format!("/channels/{channel}/messages");
    let bodies: Vec<String> = e
        .discord
        .accepted("POST", &path)
        .into_iter()
        .chain(e.discord.accepted("PATCH", &format!("{path}/{id}")))
        .map(|c| c.body["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        bodies
            .iter()
            .any(|t| t.starts_with("✓ Read file · `notes.txt` · ")),
        "the tool's line in the draft: {bodies:#?}"
    );
    assert_eq!(
        e.discord.accepted("POST", &path).len(),
        1,
        "no extra message"
    );
    assert_eq!(e.discord.rate_limited(), 0);
    e.stop().await;
}
