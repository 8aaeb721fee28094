//! The 💭 button end to end: at `/verbose full` a reasoning longer than its
//! 280-character quote is read whole, page by page within the platform's
//! message limit, by its asker only and in the chat it was given in.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use support::e2e::Harness;
use support::fake_llm::Reply;
use support::test_channel::{Op, TestChannel};
use switchboard_platform::{
    Capabilities, ChatAddress, ChatId, LengthUnit, MessageId, Platform, PressAnswer,
};

const FULL: &[(&str, &str)] = &[("CHAT_VERBOSITY", "full")];
const LIMIT: usize = 700;

fn small_channel() -> std::sync::Arc<TestChannel> {
    TestChannel::with_capabilities(Capabilities {
        max_message_len: LIMIT,
        length_unit: LengthUnit::Utf16,
        can_edit: true,
        buttons: true,
        threads: false,
        min_edit_interval: Duration::ZERO,
        private_answers: true,
        max_upload_bytes: 50 << 20,
        max_download_bytes: 20 << 20,
        answer_buttons: true,
        local_operator: false,
        forms: false,
        menus: false,
    })
}

fn long_reasoning() -> String {
    (0..60)
        .map(|n| format!("Thought {n}: weigh option_{n} against the budget 😀."))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The action of the reasoning button on the message showing `needle`.
fn reasoning_action(h: &Harness, needle: &str) -> Option<String> {
    let log = h.channel.log();
    let sent = log.find(needle)?;
    sent.actions.iter().find(|a| a.starts_with("rs:")).cloned()
}

fn private_answers(h: &Harness) -> Vec<String> {
    h.channel
        .log()
        .answers()
        .into_iter()
        .filter_map(|(_, _, a)| match a {
            PressAnswer::Private(text) => Some(text),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn clipped_reasoning_is_read_whole_page_by_page_by_its_asker_only() {
    let h = Harness::with_channel(FULL, small_channel()).await;
    let reasoning = long_reasoning();
    h.llm.push(Reply::reasoning(&reasoning, "Option 7 it is."));
    h.channel.dm(1, "which option?").await;
    h.wait_for("the answer", |l| l.any_contains("Option 7 it is."))
        .await;
    h.idle().await;
    let answer = h.channel.log().find("Option 7 it is.").unwrap().clone();
    assert!(
        answer.text.starts_with("> 💭 _Thought 0"),
        "{}",
        answer.text
    );
    assert!(!answer.text.contains("Thought 59"), "the quote is clipped");
    let first = reasoning_action(&h, "Option 7 it is.").expect("a 💭 button");

    // Another user, and the asker in another chat, are refused.
    h.channel.press(2, &first).await;
    let group = ChatAddress::new(Platform::Console, ChatId(-50), None);
    h.channel.press_on(1, &first, group, MessageId(0)).await;
    h.wait_for("two refusals", |l| l.answers().len() == 2).await;
    let refusals = private_answers(&h);
    assert!(
        refusals[0].contains("Only the person who asked"),
        "{refusals:?}"
    );
    assert!(refusals[1].contains("chat it was given in"), "{refusals:?}");
    assert!(!h.channel.log().any_contains("Reasoning, page"));

    // The asker reads every page, each within the limit, following "next".
    let mut action = first;
    let mut pages = Vec::new();
    for n in 1..=20 {
        h.channel.press(1, &action).await;
        let needle = format!("Reasoning, page {n} of ");
        h.wait_for("a page", |l| l.any_contains(&needle)).await;
        let page = h.channel.log().find(&needle).unwrap().clone();
        assert_eq!(page.chat, answer.chat);
        assert!(switchboard_platform::measure(&page.text, LengthUnit::Utf16) <= LIMIT);
        pages.push(page.text.clone());
        match page.actions.iter().find(|a| a.starts_with("rs:")) {
            Some(next) => action = next.clone(),
            None => break,
        }
    }
    assert!(pages.len() > 2, "{pages:?}");
    assert!(
        pages[0].contains(&format!(" of {}_", pages.len())),
        "{}",
        pages[0]
    );
    let read: String = pages
        .iter()
        .map(|p| p.split_once("\n\n").unwrap().1.replace('\\', ""))
        .collect::<Vec<_>>()
        .join("\n");
    for line in reasoning.lines() {
        assert!(read.contains(line), "{line} missing from the pages");
    }
    let acks = h
        .channel
        .log()
        .answers()
        .into_iter()
        .filter(|(_, _, a)| *a == PressAnswer::Ack)
        .count();
    assert_eq!(acks, pages.len(), "each page press is answered once");
    h.stop().await;
}

#[tokio::test]
async fn short_reasoning_and_other_verbosities_get_no_button() {
    let h = Harness::with_channel(FULL, small_channel()).await;
    h.llm.push(Reply::reasoning("A quick thought.", "Short."));
    h.channel.dm(1, "hi").await;
    h.wait_for("the answer", |l| l.any_contains("Short.")).await;
    h.idle().await;
    assert!(h.channel.log().any_contains("💭 _A quick thought._"));
    assert_eq!(reasoning_action(&h, "Short."), None);

    h.channel.dm(1, "/verbose tools").await;
    h.wait_for("tools", |l| l.any_contains("Verbosity: **tools**"))
        .await;
    h.llm
        .push(Reply::reasoning(&long_reasoning(), "Tools only."));
    h.channel.dm(1, "again").await;
    h.wait_for("the answer", |l| l.any_contains("Tools only."))
        .await;
    h.idle().await;
    assert_eq!(reasoning_action(&h, "Tools only."), None);
    let log = h.channel.log();
    assert!(
        !log.ops
            .iter()
            .any(|op| matches!(op, Op::Send { text, .. } if text.contains("Thought 59"))),
        "{log}"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_button_whose_note_is_gone_says_so() {
    let h = Harness::with_channel(FULL, small_channel()).await;
    h.channel.press(1, "rs:0123456789ab:0").await;
    h.wait_for("the answer", |l| l.answers().len() == 1).await;
    assert_eq!(private_answers(&h), ["This reasoning is no longer kept."]);
    h.stop().await;
}

#[tokio::test]
async fn reasoning_notes_are_kept_on_postgres_too() {
    let Ok(admin) = std::env::var("TEST_DATABASE_URL") else {
        eprintln!("TEST_DATABASE_URL not set: skipped");
        return;
    };
    let url = support::postgres::fresh_postgres(&admin).await;
    let store = switchboard::store::Store::open(&url).await.unwrap();
    let note = switchboard::store::ReasoningNote {
        platform: Platform::Telegram,
        chat: ChatId(-1_000_000_000_123),
        user: switchboard_platform::UserId(5_000_000_000),
        content: long_reasoning(),
    };
    let old = chrono::Utc::now() - chrono::Duration::days(31);
    store
        .reasoning()
        .save("0123456789ab", &note, old)
        .await
        .unwrap();
    store
        .reasoning()
        .save("ba9876543210", &note, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(
        store.reasoning().get("ba9876543210").await.unwrap(),
        Some(note)
    );
    assert_eq!(store.reasoning().get("0123456789ab").await.unwrap(), None);
}
