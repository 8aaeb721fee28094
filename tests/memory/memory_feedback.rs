//! Feedback: 👍/👎 under final answers, only the asker rates, and 👎 becomes
//! correction rules in that user's system prompt (and nobody else's).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common;
use crate::support;

use memory_common::{backends, db_url, harness, open_store, provider};

use chrono::{Duration, Utc};
use serde_json::Value;
use support::e2e::{messages, Harness};
use support::fake_llm::{FakeLlm, Reply};
use switchboard::memory::distill_rules;
use switchboard::store::{MemoryOwner, SessionKey};
use switchboard_platform::{ChatId, Platform, PressAnswer, UserId};

fn system(request: &Value) -> String {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn is_distill(request: &Value) -> bool {
    system(request).starts_with("A user marked the assistant's answers")
}

fn feedback_actions(h: &Harness, text: &str) -> (String, String) {
    let log = h.channel.log();
    let answer = log
        .find(text)
        .unwrap_or_else(|| panic!("no answer {text:?}\n{log}"));
    let up = answer
        .actions
        .iter()
        .find(|a| a.starts_with("fb:") && a.ends_with(":u"))
        .cloned();
    let down = answer
        .actions
        .iter()
        .find(|a| a.starts_with("fb:") && a.ends_with(":d"))
        .cloned();
    (
        up.unwrap_or_else(|| panic!("no 👍 on {answer:?}")),
        down.unwrap_or_else(|| panic!("no 👎 on {answer:?}")),
    )
}

fn last_private(h: &Harness) -> String {
    match h.channel.log().answers().last() {
        Some((_, _, PressAnswer::Private(text))) => text.clone(),
        other => panic!("no private press answer: {other:?}"),
    }
}

#[tokio::test]
async fn thumbs_down_becomes_a_rule_in_the_askers_system_prompt() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        h.llm.set_responder(|req| {
        if is_distill(req) {
            Reply::text(r#"{"rules": ["Answer in Chinese when the user writes Chinese.", "Keep answers under five sentences."]}"#)
        } else {
            Reply::text("Here is a long answer in English.")
        }
    });
        h.channel.dm(1, "给我讲讲量子计算").await;
        h.wait_for("the answer", |l| l.any_contains("Here is a long answer"))
            .await;
        h.idle().await;
        let (up, down) = feedback_actions(&h, "Here is a long answer");

        // Someone else cannot rate it.
        h.channel.press(2, &down).await;
        h.wait_for("the refusal", |l| l.answers().len() == 1).await;
        assert_eq!(
            last_private(&h),
            "Only the person who asked can rate this answer."
        );

        h.channel.press(1, &down).await;
        h.wait_for("the thanks", |l| l.answers().len() == 2).await;
        assert!(
            last_private(&h).starts_with("Thanks"),
            "{}",
            last_private(&h)
        );
        h.idle().await;
        let distill = h
            .llm
            .requests()
            .await
            .into_iter()
            .find(is_distill)
            .expect("the rules were distilled");
        let input = messages(&distill)[1]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            input.contains("给我讲讲量子计算") && input.contains("Here is a long answer"),
            "{input}"
        );

        h.channel.dm(1, "再说一次").await;
        h.wait_for("the second answer", |l| {
            l.count_containing("Here is a long answer") >= 2
        })
        .await;
        h.channel.dm(2, "hello").await;
        h.wait_for("user 2's answer", |l| {
            l.count_containing("Here is a long answer") >= 3
        })
        .await;
        h.idle().await;
        let turns: Vec<Value> = h
            .llm
            .requests()
            .await
            .into_iter()
            .filter(|r| !is_distill(r))
            .collect();
        let mine = system(&turns[1]);
        assert!(
            mine.contains("[Corrections")
                && mine.contains("- Answer in Chinese when the user writes Chinese."),
            "{mine}"
        );
        assert!(
            !system(&turns[2]).contains("[Corrections"),
            "rules are per user"
        );

        // Changing the 👎 to 👍 takes the rules back: none of the user's
        // answers is rated 👎 any more, so nothing is left to distill.
        let distills = |requests: &[Value]| requests.iter().filter(|r| is_distill(r)).count();
        assert_eq!(distills(&h.llm.requests().await), 1);
        h.channel.press(1, &up).await;
        h.wait_for("the thanks", |l| l.answers().len() == 3).await;
        assert_eq!(last_private(&h), "Thanks for the feedback! 👍");
        h.idle().await;
        h.channel.dm(1, "and now?").await;
        h.wait_for("the answer after the flip", |l| {
            l.count_containing("Here is a long answer") >= 4
        })
        .await;
        h.idle().await;
        let requests = h.llm.requests().await;
        assert_eq!(distills(&requests), 1, "no model call to clear the rules");
        let after = system(requests.last().unwrap());
        assert!(!after.contains("[Corrections"), "{after}");
        h.stop().await;
    }
}

#[tokio::test]
async fn questions_and_command_replies_carry_no_feedback_buttons() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        h.llm.push(Reply::tool_calls([(
            "q",
            "ask_user",
            serde_json::json!({"question": "Which one?"}),
        )]));
        h.channel.dm(1, "pick something").await;
        h.wait_for("the question", |l| l.any_contains("Which one?"))
            .await;
        h.channel.dm(1, "/help").await;
        h.wait_for("the help", |l| l.any_contains("**Commands**"))
            .await;
        h.idle().await;
        let log = h.channel.log();
        assert!(log.sent().iter().all(|m| m.actions.is_empty()), "{log}");
        h.stop().await;
    }
}

#[tokio::test]
async fn feedback_buttons_can_be_turned_off() {
    for db in backends().await {
        let h = harness(&[("FEEDBACK_BUTTONS", "false")], &db).await;
        h.llm.push(Reply::text("Plain answer."));
        h.channel.dm(1, "hi").await;
        h.wait_for("the answer", |l| l.any_contains("Plain answer."))
            .await;
        h.idle().await;
        assert!(h.channel.log().sent().iter().all(|m| m.actions.is_empty()));
        h.stop().await;
    }
}

#[tokio::test]
async fn rules_are_not_injected_once_all_their_feedback_is_a_week_old() {
    for db in backends().await {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&db_url(&db, dir.path())).await;
        let llm = FakeLlm::start().await;
        llm.set_responder(|_| {
            Reply::text(r#"{"rules": ["Keep answers short.", "Use tables for numbers."]}"#)
        });
        let key = SessionKey {
            platform: Platform::Console,
            chat: ChatId(1),
            thread: None,
            user: UserId(1),
        };
        let session = store.sessions().open(&key).await.unwrap();
        let owner = MemoryOwner::of(&key);
        let now = Utc::now();
        // Two 👎: six days and two days before the distillation.
        for (id, age) in [("a1", 6), ("b2", 2)] {
            let at = now - Duration::days(age);
            store
                .memories()
                .create_feedback(
                    &id.parse().unwrap(),
                    &session,
                    owner,
                    "question",
                    "long answer",
                    at,
                )
                .await
                .unwrap();
            store
                .memories()
                .rate_feedback(&id.parse().unwrap(), owner, -1, at)
                .await
                .unwrap()
                .unwrap();
        }
        let rules = distill_rules(&store, provider(&llm).as_ref(), owner, now)
            .await
            .unwrap();
        assert_eq!(rules, ["Keep answers short.", "Use tables for numbers."]);

        // The newest 👎 turns seven days old five days after the distillation.
        let in_force = |at| {
            let store = store.clone();
            async move {
                store
                    .memories()
                    .correction_rules(owner, at, 5)
                    .await
                    .unwrap()
            }
        };
        assert_eq!(in_force(now).await, rules);
        assert_eq!(
            in_force(now + Duration::days(5) - Duration::minutes(1)).await,
            rules
        );
        assert!(
            in_force(now + Duration::days(5) + Duration::minutes(1))
                .await
                .is_empty(),
            "a rule outlived the feedback it came from"
        );
    }
}

/// Issue 23 item 8: button presses bypassed the per-user rate limit (100
/// feedback presses caused 23 model calls). Feedback presses share the message
/// limit (`USER_MESSAGES_PER_MINUTE`, 5 here) and those beyond it get a short
/// "slow down" and start nothing; approval presses have their own allowance, so
/// the card the user's turn waits on can still be decided.
#[tokio::test]
async fn a_flood_of_feedback_presses_is_rate_limited_and_approvals_still_go_through() {
    let h = harness(&[("USER_MESSAGES_PER_MINUTE", "5")], &None).await;
    h.llm.set_responder(|req| {
        let last = messages(req).last().cloned().unwrap_or_default();
        if is_distill(req) {
            Reply::text(r#"{"rules": ["Be brief."]}"#)
        } else if last["role"] == "tool" {
            Reply::text("Wrote it.")
        } else if last["content"] == "write it" {
            Reply::tool_calls([(
                "call_w",
                "write_file",
                serde_json::json!({"path": "out.txt", "content": "done\n"}),
            )])
        } else {
            Reply::text("Here is an answer.")
        }
    });
    h.channel.dm(1, "hello").await;
    h.wait_for("the answer", |l| l.any_contains("Here is an answer."))
        .await;
    h.idle().await;
    let (up, down) = feedback_actions(&h, "Here is an answer.");
    h.channel.dm(1, "write it").await;
    let card = h.channel.card().await;

    // Two messages used 2 of the 5: 3 presses go through, the rest are refused.
    for i in 0..100 {
        h.channel
            .press(1, if i % 2 == 0 { &down } else { &up })
            .await;
    }
    let log = h
        .wait_for("every press answered", |l| l.answers().len() == 100)
        .await;
    let slowed = log
        .answers()
        .iter()
        .filter(|(_, _, a)| matches!(a, PressAnswer::Private(t) if t.starts_with("Slow down")))
        .count();
    assert!(slowed >= 95, "{slowed} of 100 presses were limited");

    // The approval still goes through.
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the approved answer", |l| l.has_text("Wrote it."))
        .await;
    h.idle().await;
    assert_eq!(
        std::fs::read_to_string(h.workspace().join("out.txt")).unwrap(),
        "done\n"
    );
    let distills = h
        .llm
        .requests()
        .await
        .iter()
        .filter(|r| is_distill(r))
        .count();
    assert!(distills <= 5, "{distills} model calls from presses");
    h.stop().await;
}
