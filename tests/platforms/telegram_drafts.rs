//! Native streaming on Telegram, end to end (the real gateway and adapter
//! against the fake Bot API): a private chat's answer streams as
//! `sendMessageDraft` updates of one draft and ends as one `sendMessage`;
//! groups keep editing one message in place; a chat that refuses drafts
//! falls back to edits (and stays there); `TELEGRAM_DRAFTS=off` turns them off.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;
use crate::telegram_e2e::{ann, bob, E2e};
use crate::telegram_updates::{captured_logs, logs_text};

use std::time::Duration;
use support::fake_llm::Reply;
use support::fake_telegram::{FakeTelegram, StoredDraft, Where};
use switchboard_platform::{chunk_markdown, LengthUnit};

const ANSWER: &str = "Streaming works: this answer arrives word by word, shown as a draft that \
                      Telegram animates until the final message replaces it.";

/// `answer` streamed a word every 80 ms: well past the (test) update interval.
fn streamed(e: &E2e, answer: &str) {
    e.llm
        .push(Reply::text(answer).with_chunk_delay(Duration::from_millis(80)));
}

fn count(tg: &FakeTelegram, method: &str, chat: i64) -> usize {
    tg.calls_to(method)
        .iter()
        .filter(|c| c.params["chat_id"] == chat)
        .count()
}

/// Each draft shows a longer start of `answer` than the one before.
fn assert_growing_prefixes(drafts: &[StoredDraft], answer: &str) {
    let mut shown = 0;
    for d in drafts {
        assert!(
            answer.starts_with(&d.text),
            "{:?} is not a start of the answer",
            d.text
        );
        assert!(d.text.len() >= shown, "a draft went backwards: {drafts:#?}");
        shown = d.text.len();
    }
}

#[tokio::test]
async fn a_private_answer_streams_as_drafts_then_one_message() {
    let e = E2e::start(|_| {}).await;
    streamed(&e, ANSWER);
    let asked = e.tg.message(Where::Dm, &ann(), "tell me something");
    let msgs = e.answered(900, 1).await;

    assert_eq!(msgs.len(), 1, "one message: {msgs:#?}");
    assert_eq!(msgs[0].text, ANSWER);
    assert_eq!(msgs[0].reply_to, Some(asked.message_id));
    assert_eq!(msgs[0].edits, 0);
    assert!(e.tg.calls_to("EditMessageText").is_empty(), "no edit");
    assert_eq!(count(&e.tg, "SendMessage", 900), 1, "one sendMessage");
    let drafts = e.tg.drafts(900);
    assert!(drafts.len() >= 2, "streamed as drafts: {drafts:#?}");
    assert!(
        drafts
            .iter()
            .all(|d| d.draft_id == drafts[0].draft_id && d.draft_id > 0),
        "one non-zero draft id for the answer: {drafts:#?}"
    );
    assert!(
        drafts
            .iter()
            .all(|d| d.parse_mode.as_deref() == Some("HTML")),
        "rendered as the edits are"
    );
    assert_growing_prefixes(&drafts, ANSWER);
    let last_draft = drafts.last().unwrap().at;
    let final_sent = e.tg.calls_to("SendMessage").last().unwrap().at;
    assert!(last_draft <= final_sent, "the final message comes last");
    assert!(e.tg.calls_to("SendMessageDraft").iter().all(|c| c.ok));

    // The next answer is a draft of its own.
    streamed(&e, "A second answer, streamed as a new draft word by word.");
    e.tg.message(Where::Dm, &ann(), "and another");
    e.answered(900, 2).await;
    let second: Vec<StoredDraft> = e.tg.drafts(900).into_iter().skip(drafts.len()).collect();
    assert!(!second.is_empty());
    assert!(second.iter().all(|d| d.draft_id != drafts[0].draft_id));
    assert_eq!(e.tg.rate_limited_responses(), 0);
    e.stop().await;
}

#[tokio::test]
async fn a_group_answer_is_still_edited_in_place() {
    let e = E2e::start(|_| {}).await;
    streamed(&e, ANSWER);
    let group = Where::Group(-4001);
    e.tg.message(
        group,
        &ann(),
        &format!("@{} tell me", e.adapter.bot_username()),
    );
    let msgs = e.answered(-4001, 1).await;
    assert_eq!(msgs.len(), 1, "one message: {msgs:#?}");
    assert_eq!(msgs[0].text, ANSWER);
    assert!(msgs[0].edits >= 1, "edited in place while streaming");
    assert!(
        e.tg.calls_to("SendMessageDraft").is_empty(),
        "no draft in a group"
    );
    e.stop().await;
}

#[tokio::test]
async fn a_refused_draft_falls_back_to_edits_for_that_chat() {
    captured_logs();
    let e = E2e::start(|_| {}).await;
    e.tg.ensure_chat(Where::Dm, &bob());
    e.tg.refuse_drafts(901);
    streamed(&e, ANSWER);
    e.tg.message(Where::Dm, &bob(), "tell me something");
    let msgs = e.answered(901, 1).await;
    assert_eq!(msgs.len(), 1, "one message, no error shown: {msgs:#?}");
    assert_eq!(msgs[0].text, ANSWER);
    assert!(msgs[0].edits >= 1, "the rest streamed by edits");
    let tried = e.tg.calls_to("SendMessageDraft");
    assert_eq!(tried.len(), 1, "one refused draft, then edits");
    assert_eq!(tried[0].error_code, Some(400));

    // Remembered: the next answer in that chat edits from the start, while
    // another private chat still gets drafts.
    streamed(
        &e,
        "Another answer, edited in place from its first update on.",
    );
    e.tg.message(Where::Dm, &bob(), "once more");
    e.answered(901, 2).await;
    assert_eq!(e.tg.calls_to("SendMessageDraft").len(), 1);
    streamed(&e, ANSWER);
    e.tg.message(Where::Dm, &ann(), "and for me?");
    e.answered(900, 1).await;
    assert!(
        !e.tg.drafts(900).is_empty(),
        "Ann's chat still streams drafts"
    );
    let lines = logs_text()
        .lines()
        .filter(|l| l.contains("Telegram refused a draft") && l.contains("chat=901"))
        .count();
    assert_eq!(lines, 1, "one log line for the refusal");
    e.stop().await;
}

/// An answer longer than one message: the drafts show its start (never more
/// than a message holds), then every chunk is sent, the first as the reply.
#[tokio::test]
async fn a_long_answer_streams_its_start_then_every_chunk_is_sent() {
    let e = E2e::start(|_| {}).await;
    let long: String = (0..1_400).map(|i| format!("w{i} ")).collect::<String>() + "end.";
    let long = long.trim().to_owned();
    let expected = chunk_markdown(&long, 4096, LengthUnit::Utf16);
    assert!(expected.len() >= 2);
    e.llm
        .push(Reply::text(&long).with_chunk_delay(Duration::from_millis(2)));
    let asked = e.tg.message(Where::Dm, &ann(), "the long one");
    let msgs = e.answered(900, expected.len()).await;

    let texts: Vec<&str> = msgs.iter().map(|m| m.text.as_str()).collect();
    let expected: Vec<&str> = expected.iter().map(|c| c.trim()).collect();
    assert_eq!(texts, expected, "each chunk once, in order");
    assert_eq!(msgs[0].reply_to, Some(asked.message_id));
    assert!(msgs.iter().all(|m| m.edits == 0));
    assert!(e.tg.calls_to("EditMessageText").is_empty());
    let drafts = e.tg.drafts(900);
    assert!(!drafts.is_empty(), "streamed as drafts");
    assert!(drafts.iter().all(|d| d.text.encode_utf16().count() <= 4096));
    assert_growing_prefixes(&drafts, &long);
    e.stop().await;
}

#[tokio::test]
async fn drafts_off_streams_by_edits_in_private_chats_too() {
    let e = E2e::with_env(&[("TELEGRAM_DRAFTS", "off")], |_| {}).await;
    streamed(&e, ANSWER);
    e.tg.message(Where::Dm, &ann(), "tell me something");
    let msgs = e.answered(900, 1).await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].text, ANSWER);
    assert!(msgs[0].edits >= 1, "edited in place");
    assert!(e.tg.calls_to("SendMessageDraft").is_empty());
    e.stop().await;
}
