//! End to end: approval cards through the test channel (allow, deny, expiry,
//! foreign and double presses, edits, the `/approve` fallback, "always" rules)
//! and a background task whose notification produces a second answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use support::e2e::{messages, tool_result, Harness};
use support::fake_llm::Reply;
use support::test_channel::Card;
use switchboard::clock::ManualClock;
use switchboard::store::{ApprovalStatus, TaskStatus};
use switchboard_platform::{Addressed, ChatId, Platform, PressAnswer, UserId};

/// Scripts an `exec_command` call, asks for it in user 1's DM and returns the card.
async fn exec_card(h: &Harness, command: &str, then: &str) -> Card {
    h.llm.push(Reply::tool_calls([(
        "call_exec",
        "exec_command",
        json!({ "command": command }),
    )]));
    h.llm.push(Reply::text(then));
    h.channel.dm(1, "please run it").await;
    h.channel.card().await
}

fn assert_pending_card(card: &Card, command: &str) {
    assert_eq!(card.actions.len(), 4, "{card:?}");
    let id = card.approval_id();
    assert_eq!(id.as_str().len(), 32, "{card:?}");
    for code in ['y', 'a', 'e', 'n'] {
        assert_eq!(card.action(code), format!("ap:{id}:{code}"));
    }
    assert!(card.text.contains("Approval needed"), "{}", card.text);
    assert!(card.text.contains(command), "{}", card.text);
    assert!(
        card.text.contains(id.short()),
        "the short id is shown: {}",
        card.text
    );
}

#[tokio::test]
async fn allow_once_runs_the_command_and_feeds_its_output_back() {
    let h = Harness::start().await;
    let command = "echo hi | tee proof.txt";
    let card = exec_card(&h, command, "It printed hi.").await;
    assert_pending_card(&card, command);
    assert!(
        !h.workspace().join("proof.txt").exists(),
        "nothing runs before the decision"
    );

    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("It printed hi."))
        .await;
    h.idle().await;

    assert_eq!(
        std::fs::read_to_string(h.workspace().join("proof.txt")).unwrap(),
        "hi\n"
    );
    let requests = h.requests(2).await;
    let result = tool_result(&requests[1], "call_exec");
    assert!(result.starts_with("exit code: 0"), "{result}");
    assert!(result.ends_with("output:\nhi\n"), "{result}");

    // The press is answered on its own task, possibly after the turn ended.
    let log = h
        .wait_for("the press answer", |l| !l.answers().is_empty())
        .await;
    let answers = log.answers();
    assert_eq!(answers.len(), 1, "every press is answered once");
    assert!(
        matches!(&answers[0].2, PressAnswer::Update(m) if m.text.contains("**Allowed once** by user1"))
    );
    let now = &log.messages[&card.id.0];
    assert!(now.actions.is_empty(), "buttons removed: {now:?}");
    assert!(now.text.contains("Allowed once"), "{}", now.text);

    let record = h
        .running
        .store
        .approvals()
        .get(&card.approval_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, ApprovalStatus::Allowed);
    assert_eq!(record.decided_by, Some(UserId(1)));
    h.stop().await;
}

#[tokio::test]
async fn deny_tells_the_model_and_runs_nothing() {
    let h = Harness::start().await;
    let card = exec_card(&h, "touch denied.txt", "Okay, I won't.").await;
    h.channel.press(1, &card.action('n')).await;
    h.wait_for("the answer", |l| l.has_text("Okay, I won't."))
        .await;

    let requests = h.requests(2).await;
    let result = tool_result(&requests[1], "call_exec");
    assert!(result.contains("denied"), "{result}");
    assert!(!h.workspace().join("denied.txt").exists());
    h.wait_for("the card marked denied", |l| {
        l.messages[&card.id.0].text.contains("**Denied** by user1")
    })
    .await;
    h.stop().await;
}

#[tokio::test]
async fn an_unanswered_card_expires_and_the_model_is_told() {
    let h = Harness::with(&[("APPROVAL_TIMEOUT", "1")]).await;
    let card = exec_card(&h, "touch expired.txt", "No answer, so I did nothing.").await;
    let log = h
        .wait_for("the card to expire", |l| {
            l.messages[&card.id.0].text.contains("Expired")
        })
        .await;
    assert!(
        log.messages[&card.id.0].actions.is_empty(),
        "buttons removed"
    );
    h.wait_for("the answer", |l| l.has_text("No answer, so I did nothing."))
        .await;

    let requests = h.requests(2).await;
    let result = tool_result(&requests[1], "call_exec");
    assert!(result.contains("approval expired"), "{result}");
    assert!(!h.workspace().join("expired.txt").exists());
    let record = h
        .running
        .store
        .approvals()
        .get(&card.approval_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, ApprovalStatus::Expired);

    // A press after expiry is refused privately.
    h.channel.press(1, &card.action('y')).await;
    let log = h
        .wait_for("the late press answered", |l| !l.answers().is_empty())
        .await;
    assert!(
        matches!(&log.answers()[0].2, PressAnswer::Private(t) if t.contains("Already decided: expired")),
        "{log}"
    );
    h.stop().await;
}

#[tokio::test]
async fn the_default_ten_minutes_run_on_the_gateway_clock() {
    // The gateway's clock is moved forward instead of waiting ten minutes.
    let clock = Arc::new(ManualClock::default());
    let h = Harness::with_clock(&[("APPROVAL_TIMEOUT", "600")], clock.clone()).await;
    let card = exec_card(&h, "touch late.txt", "Ten minutes passed; nothing ran.").await;
    assert!(h.channel.log().messages[&card.id.0]
        .text
        .contains("Expires in 10 min"));

    clock.advance(Duration::from_secs(9 * 60 + 50));
    // Longer than the waiter's poll: it has looked at the clock since.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let record = h
        .running
        .store
        .approvals()
        .get(&card.approval_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, ApprovalStatus::Pending, "not yet due");

    clock.advance(Duration::from_secs(15));
    h.wait_for("the card to expire", |l| {
        l.messages[&card.id.0].text.contains("Expired")
    })
    .await;
    h.wait_for("the answer", |l| {
        l.has_text("Ten minutes passed; nothing ran.")
    })
    .await;
    let result = tool_result(&h.requests(2).await[1], "call_exec");
    assert!(result.contains("approval expired"), "{result}");
    assert!(!h.workspace().join("late.txt").exists());
    h.stop().await;
}

#[tokio::test]
async fn a_foreign_presser_is_refused_privately_and_the_card_stays() {
    let h = Harness::start().await;
    h.llm.push(Reply::tool_calls([(
        "call_exec",
        "exec_command",
        json!({ "command": "touch foreign.txt" }),
    )]));
    h.llm.push(Reply::text("Not run."));
    h.channel.group(1, -100, Addressed::Mention, "run it").await;
    let card = h.channel.card().await;
    assert_eq!(h.channel.log().messages[&card.id.0].chat.chat, ChatId(-100));

    h.channel.press(2, &card.action('y')).await;
    let log = h.wait_for("the refusal", |l| !l.answers().is_empty()).await;
    let (presser, _, answer) = &log.answers()[0];
    assert_eq!(*presser, UserId(2));
    assert!(
        matches!(answer, PressAnswer::Private(t) if t.contains("Only the person who asked")),
        "{answer:?}"
    );
    let now = &log.messages[&card.id.0];
    assert_eq!(
        (&now.text, &now.actions, now.edits),
        (&card.text, &card.actions, 0)
    );
    assert!(!h.workspace().join("foreign.txt").exists());

    h.channel.press(1, &card.action('n')).await;
    h.wait_for("the answer", |l| l.has_text("Not run.")).await;
    h.stop().await;
}

#[tokio::test]
async fn a_second_press_gets_already_decided() {
    let h = Harness::start().await;
    let card = exec_card(&h, "echo once >> count.txt", "Done once.").await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the first press answered", |l| l.answers().len() == 1)
        .await;
    h.channel.press(1, &card.action('n')).await;
    let log = h
        .wait_for("the second press answered", |l| l.answers().len() == 2)
        .await;
    assert!(
        matches!(&log.answers()[1].2, PressAnswer::Private(t) if t.contains("Already decided")),
        "{log}"
    );
    h.wait_for("the answer", |l| l.has_text("Done once.")).await;
    h.idle().await;
    assert_eq!(
        std::fs::read_to_string(h.workspace().join("count.txt")).unwrap(),
        "once\n"
    );
    h.stop().await;
}

#[tokio::test]
async fn racing_presses_have_exactly_one_winner() {
    let h = Harness::start().await;
    let card = exec_card(&h, "echo raced >> race.txt", "Settled.").await;
    h.channel.press(1, &card.action('y')).await;
    h.channel.press(1, &card.action('n')).await;
    let log = h
        .wait_for("both presses answered", |l| l.answers().len() == 2)
        .await;
    h.wait_for("the answer", |l| l.has_text("Settled.")).await;
    h.idle().await;

    let answers = log.answers();
    let updates: Vec<_> = answers
        .iter()
        .filter(|(_, _, a)| matches!(a, PressAnswer::Update(_)))
        .collect();
    assert_eq!(updates.len(), 1, "{log}");
    assert!(answers
        .iter()
        .any(|(_, _, a)| matches!(a, PressAnswer::Private(t) if t.contains("Already decided"))));
    let allowed = updates[0].1.ends_with(":y");
    let ran = h.workspace().join("race.txt").exists();
    assert_eq!(allowed, ran, "the winning decision is the one applied");
    let result = tool_result(&h.requests(2).await[1], "call_exec");
    assert_eq!(result.contains("denied"), !allowed, "{result}");
    h.stop().await;
}

#[tokio::test]
async fn edit_replaces_the_command_and_asks_again() {
    let h = Harness::start().await;
    let first = exec_card(&h, "echo original", "Ran the edited command.").await;
    h.channel.press(1, &first.action('e')).await;
    let log = h
        .wait_for("the edit prompt", |l| !l.answers().is_empty())
        .await;
    assert!(
        matches!(&log.answers()[0].2, PressAnswer::Update(m) if m.text.contains("send the new arguments")),
        "{log}"
    );
    // Sent as soon as the press is answered, like the console's piped mode does.
    h.channel.dm(1, "echo edited").await;
    let second = h.channel.next_card(first.id).await;
    assert_pending_card(&second, "echo edited");
    assert_ne!(second.approval_id(), first.approval_id());

    h.channel.press(1, &second.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Ran the edited command."))
        .await;
    let requests = h.requests(2).await;
    let result = tool_result(&requests[1], "call_exec");
    assert!(result.ends_with("output:\nedited\n"), "{result}");
    let replayed = messages(&requests[1]);
    assert!(
        !replayed
            .iter()
            .any(|m| m["role"] == "user" && m["content"] == "echo edited"),
        "the edit is not a chat message"
    );
    h.stop().await;
}

#[tokio::test]
async fn the_approve_command_decides_by_short_id() {
    let h = Harness::start().await;
    let card = exec_card(&h, "echo by-text", "Ran it.").await;
    let short = card.approval_id().short().to_owned();
    h.channel.dm(1, &format!("/approve {short} allow")).await;
    h.wait_for("the confirmation", |l| {
        l.any_contains(&format!("Recorded: allowed once for `{short}`"))
    })
    .await;
    let log = h.wait_for("the answer", |l| l.has_text("Ran it.")).await;
    let now = &log.messages[&card.id.0];
    assert!(
        now.text.contains("**Allowed once** by user1") && now.actions.is_empty(),
        "{now:?}"
    );
    let result = tool_result(&h.requests(2).await[1], "call_exec");
    assert!(result.ends_with("output:\nby-text\n"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn always_creates_a_rule_that_skips_the_card_next_time() {
    let h = Harness::start().await;
    let card = exec_card(&h, "echo always", "First run done.").await;
    h.channel.press(1, &card.action('a')).await;
    h.wait_for("the first answer", |l| l.has_text("First run done."))
        .await;
    h.idle().await;
    let rules = h
        .running
        .store
        .approvals()
        .rules(Platform::Console, UserId(1))
        .await
        .unwrap();
    assert_eq!(rules.len(), 1, "{rules:?}");

    h.llm.push(Reply::tool_calls([(
        "call_again",
        "exec_command",
        json!({ "command": "echo always" }),
    )]));
    h.llm.push(Reply::text("Second run done."));
    h.channel.dm(1, "again please").await;
    let log = h
        .wait_for("the second answer", |l| l.has_text("Second run done."))
        .await;
    assert_eq!(log.cards_ever(), 1, "no second card\n{log}");
    let requests = h.requests(4).await;
    let result = tool_result(&requests[3], "call_again");
    assert!(result.ends_with("output:\nalways\n"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn a_background_task_reports_progress_and_its_result_starts_a_second_answer() {
    let h = Harness::start().await;
    let command = "for i in 1 2 3; do echo $((i*33))%; sleep 0.5; done";
    h.llm.push(Reply::tool_calls([(
        "call_bg",
        "exec_command",
        json!({ "command": command, "background": true }),
    )]));
    h.llm.push(Reply::text("Started it in the background."));
    h.llm
        .push(Reply::text("The task finished: it reached 99%."));
    h.channel.dm(1, "run the long job").await;
    let card = h.channel.card().await;
    assert!(card.text.contains("background"), "{}", card.text);
    h.channel.press(1, &card.action('y')).await;

    h.wait_for("the first answer", |l| {
        l.has_text("Started it in the background.")
    })
    .await;
    h.wait_for("the notification answer", |l| {
        l.has_text("The task finished: it reached 99%.")
    })
    .await;
    h.idle().await;

    let requests = h.requests(3).await;
    assert_eq!(requests.len(), 3);
    let started = tool_result(&requests[1], "call_bg");
    assert!(started.starts_with("Started background task "), "{started}");
    let task_id = started
        .trim_start_matches("Started background task ")
        .split('.')
        .next()
        .unwrap()
        .to_owned();
    let notification = messages(&requests[2])
        .last()
        .and_then(|m| m["content"].as_str().map(str::to_owned))
        .unwrap();
    assert!(
        notification.starts_with("[SYSTEM NOTIFICATION - NOT USER INPUT]"),
        "{notification}"
    );
    assert!(
        notification.contains("<task-notification>"),
        "{notification}"
    );
    assert!(
        notification.contains(&format!("task_id: {task_id}")),
        "{notification}"
    );
    assert!(notification.contains("status: succeeded"), "{notification}");
    assert!(notification.contains("99%"), "{notification}");

    let log = h.channel.log();
    let status = log.find("Background task").expect("a status message");
    let shown = log.history_of(status.id);
    assert!(shown[0].contains("starting"), "{shown:?}");
    assert!(
        shown
            .iter()
            .any(|t| ["]` 33%", "]` 66%", "]` 99%"].iter().any(|p| t.contains(p))),
        "progress shown as a bar: {shown:?}"
    );
    assert!(shown.last().unwrap().contains("done in"), "{shown:?}");
    let texts = log.texts_in(1);
    let answer_at = texts
        .iter()
        .position(|t| t == "The task finished: it reached 99%.")
        .unwrap();
    let status_at = texts
        .iter()
        .position(|t| t.contains("Background task"))
        .unwrap();
    assert!(
        answer_at > status_at,
        "the second answer comes after: {texts:?}"
    );

    let task = h
        .running
        .store
        .tasks()
        .get(&task_id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(task.status, TaskStatus::Succeeded);
    h.stop().await;
}

#[tokio::test]
async fn a_denial_by_text_carries_its_reason_to_the_model() {
    let h = Harness::start().await;
    let card = exec_card(&h, "rm -rf build", "Understood, not today.").await;
    let short = card.approval_id().short().to_owned();
    h.channel
        .dm(1, &format!("/approve {short} deny too risky today"))
        .await;
    let recorded = format!("Recorded: denied for `{short}`");
    let log = h
        .wait_for("the confirmation and the answer", |l| {
            l.any_contains(&recorded) && l.has_text("Understood, not today.")
        })
        .await;
    assert!(log.messages[&card.id.0].text.contains("too risky today"));
    let result = tool_result(&h.requests(2).await[1], "call_exec");
    assert!(result.contains("Reason: too risky today"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn edit_by_text_takes_the_next_message_as_the_command() {
    let h = Harness::start().await;
    let first = exec_card(&h, "echo first", "Edited by text.").await;
    let short = first.approval_id().short().to_owned();
    h.channel.dm(1, &format!("/approve {short} edit")).await;
    h.channel.dm(1, "echo via-text").await;
    let second = h.channel.next_card(first.id).await;
    assert_pending_card(&second, "echo via-text");
    h.channel.press(1, &second.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Edited by text."))
        .await;
    let result = tool_result(&h.requests(2).await[1], "call_exec");
    assert!(result.ends_with("output:\nvia-text\n"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn an_approved_write_shows_the_diff_on_the_card_and_writes_the_file() {
    let h = Harness::start().await;
    h.write("notes.txt", "old line\n");
    h.llm.push(Reply::tool_calls([(
        "call_write",
        "write_file",
        json!({"path": "notes.txt", "content": "new line\n"}),
    )]));
    h.llm.push(Reply::text("Updated your notes."));
    h.channel.dm(1, "update my notes").await;
    let card = h.channel.card().await;
    assert!(
        card.text.contains("write_file `notes.txt`"),
        "{}",
        card.text
    );
    assert_eq!(
        std::fs::read_to_string(h.workspace().join("notes.txt")).unwrap(),
        "old line\n",
        "untouched before the decision"
    );
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Updated your notes."))
        .await;
    assert_eq!(
        std::fs::read_to_string(h.workspace().join("notes.txt")).unwrap(),
        "new line\n"
    );
    let result = tool_result(&h.requests(2).await[1], "call_write");
    assert!(!result.starts_with("error"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn always_with_a_prefix_allows_simple_commands_that_start_with_it() {
    let h = Harness::start().await;
    let card = exec_card(&h, "echo one", "First.").await;
    assert!(card.text.contains("always <words>"), "{}", card.text);
    let short = card.approval_id().short().to_owned();

    // A prefix the card's command does not start with is refused, nothing decided.
    h.channel
        .dm(1, &format!("/approve {short} always ls"))
        .await;
    h.wait_for("the refusal", |l| {
        l.any_contains("does not start with `ls`")
    })
    .await;
    h.channel
        .dm(1, &format!("/approve {short} always echo"))
        .await;
    h.wait_for("the confirmation and the answer", |l| {
        l.any_contains("commands starting with `echo`") && l.has_text("First.")
    })
    .await;
    h.idle().await;

    // Another `echo` runs without a card …
    h.llm.push(Reply::tool_calls([(
        "call_two",
        "exec_command",
        json!({ "command": "echo two" }),
    )]));
    h.llm.push(Reply::text("Second."));
    h.channel.dm(1, "and again").await;
    let log = h
        .wait_for("the second answer", |l| l.has_text("Second."))
        .await;
    assert_eq!(log.cards_ever(), 1, "no card for echo two\n{log}");
    let result = tool_result(&h.requests(4).await[3], "call_two");
    assert!(result.ends_with("output:\ntwo\n"), "{result}");
    h.idle().await;

    h.channel.dm(1, "/approvals").await;
    h.wait_for("the listing", |l| {
        l.any_contains("exec_command: commands starting with `echo`")
    })
    .await;

    // … but a chained one asks again, and so does another user's echo.
    h.llm.push(Reply::tool_calls([(
        "call_three",
        "exec_command",
        json!({ "command": "echo three; touch chained.txt" }),
    )]));
    h.channel.dm(1, "chain it").await;
    h.wait_for("a card for the chained command", |l| l.cards_ever() == 2)
        .await;
    h.llm.push(Reply::tool_calls([(
        "call_four",
        "exec_command",
        json!({ "command": "echo four" }),
    )]));
    h.channel.dm(2, "echo for me").await;
    h.wait_for("a card for user 2", |l| l.cards_ever() == 3)
        .await;
    assert!(!h.workspace().join("chained.txt").exists());

    h.stop().await;
}

/// Issue 23 item 1: `always git` used to let `git log --output=… --format=…`
/// (writes a script) and `git config core.fsmonitor sh` (runs it on the next
/// `git status`) through without a card.
#[tokio::test]
async fn a_git_rule_names_the_whole_command_and_never_covers_writes() {
    let h = Harness::start().await;
    let card = exec_card(&h, "git status", "Clean.").await;
    let short = card.approval_id().short().to_owned();

    h.channel
        .dm(1, &format!("/approve {short} always git"))
        .await;
    h.wait_for("the refusal", |l| {
        l.any_contains("must name the whole command: `always git status`")
    })
    .await;
    h.channel
        .dm(1, &format!("/approve {short} always git status"))
        .await;
    h.wait_for("the confirmation and the answer", |l| {
        l.any_contains("exactly the command `git status`") && l.has_text("Clean.")
    })
    .await;
    h.idle().await;

    for (n, attack) in [
        "git log -1 --output=2 --format=echo%x20pwned%x3b%x20id%x20%x3e%x20OUT",
        "git config core.fsmonitor sh",
        "git diff HEAD --output=/tmp/sb-escape",
        "git status --porcelain",
        "git  status -c core.fsmonitor=sh",
    ]
    .into_iter()
    .enumerate()
    {
        h.llm.push(Reply::tool_calls([(
            format!("call_attack_{n}").as_str(),
            "exec_command",
            json!({ "command": attack }),
        )]));
        h.llm.push(Reply::text("Not run."));
        h.channel.dm(1, "again").await;
        let log = h
            .wait_for("a card for the attack", |l| l.cards_ever() == n + 2)
            .await;
        let Some(card) = log.card() else {
            unreachable!()
        };
        if n < 2 {
            // A command that writes config or files gets no rule, not even an exact one.
            h.channel
                .dm(
                    1,
                    &format!("/approve {} always", card.approval_id().short()),
                )
                .await;
            h.wait_for("the refusal", |l| l.any_contains("ask every time"))
                .await;
        }
        h.channel.press(1, &card.action('n')).await;
        h.idle().await;
    }
    assert!(!h.workspace().join("OUT").exists());
    h.stop().await;
}

#[tokio::test]
async fn a_press_carrying_a_cards_data_on_another_message_decides_nothing() {
    let h = Harness::start().await;
    h.llm.push(Reply::text("Hello there."));
    h.channel.dm(1, "hi").await;
    let log = h
        .wait_for("the greeting", |l| l.has_text("Hello there."))
        .await;
    let other = log
        .messages
        .values()
        .find(|m| m.text == "Hello there.")
        .map(|m| (m.chat, m.id, m.edits))
        .unwrap();
    let card = exec_card(&h, "touch forged.txt", "Ran it.").await;

    // Approval C's data, pressed on the greeting: refused, and neither the
    // greeting nor C's real card changes.
    h.channel
        .press_on(1, &card.action('y'), other.0, other.1)
        .await;
    let log = h.wait_for("the refusal", |l| !l.answers().is_empty()).await;
    let (_, _, answer) = &log.answers()[0];
    assert!(
        matches!(answer, PressAnswer::Private(t) if t.contains("does not belong to this message")),
        "{answer:?}"
    );
    assert_eq!(
        (
            &log.messages[&other.1 .0].text,
            log.messages[&other.1 .0].edits
        ),
        (&"Hello there.".to_owned(), other.2),
        "the other message is left alone"
    );
    let now = &log.messages[&card.id.0];
    assert_eq!(
        (&now.text, &now.actions, now.edits),
        (&card.text, &card.actions, 0)
    );
    assert_eq!(
        h.running
            .store
            .approvals()
            .get(&card.approval_id())
            .await
            .unwrap()
            .unwrap()
            .status,
        ApprovalStatus::Pending
    );
    assert!(!h.workspace().join("forged.txt").exists());

    // The card itself still works.
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Ran it.")).await;
    assert!(h.workspace().join("forged.txt").exists());
    h.stop().await;
}

#[tokio::test]
async fn an_edit_nobody_sends_expires_like_a_card() {
    // "Edit" is a waiting state held by the paused turn's row: the expiry
    // sweeper ends it after APPROVAL_TIMEOUT, and the turn resumes with that.
    let clock = Arc::new(ManualClock::default());
    let h = Harness::with_clock(&[("APPROVAL_TIMEOUT", "600")], clock.clone()).await;
    let card = exec_card(&h, "touch never.txt", "The edit never came.").await;
    h.channel.press(1, &card.action('e')).await;
    h.wait_for("the edit prompt", |l| !l.answers().is_empty())
        .await;

    clock.advance(Duration::from_secs(601));
    h.wait_for("the answer", |l| l.has_text("The edit never came."))
        .await;
    let result = tool_result(&h.requests(2).await[1], "call_exec");
    assert!(result.contains("approval expired"), "{result}");
    let record = h
        .running
        .store
        .approvals()
        .get(&card.approval_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, ApprovalStatus::Expired);
    assert!(!h.workspace().join("never.txt").exists());
    // The session is not waiting for an edit any more: this is a message.
    h.llm.push(Reply::text("Just a message."));
    h.channel.dm(1, "echo late").await;
    h.wait_for("a plain answer", |l| l.has_text("Just a message."))
        .await;
    h.stop().await;
}

#[tokio::test]
async fn a_call_edited_more_than_three_times_is_denied() {
    let h = Harness::start().await;
    let mut card = exec_card(&h, "echo 0", "Too many edits; I stopped.").await;
    for edit in 1..=3 {
        h.channel.press(1, &card.action('e')).await;
        h.wait_for("the edit prompt", |l| l.answers().len() >= edit)
            .await;
        h.channel.dm(1, &format!("echo {edit}")).await;
        let next = h.channel.next_card(card.id).await;
        assert_pending_card(&next, &format!("echo {edit}"));
        card = next;
    }
    h.channel.press(1, &card.action('e')).await;
    h.wait_for("the edit prompt", |l| l.answers().len() >= 4)
        .await;
    h.channel.dm(1, "echo 4").await;
    h.wait_for("the answer", |l| l.has_text("Too many edits; I stopped."))
        .await;
    let result = tool_result(&h.requests(2).await[1], "call_exec");
    assert!(result.contains("too many edits"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn stop_at_an_open_card_denies_it_and_the_paused_turn_answers() {
    // No turn runs while a card waits (the turn is a row): `/stop` ends the
    // wait instead, as Deny would, on any platform.
    let h = Harness::start().await;
    let card = exec_card(&h, "touch stopped.txt", "Stopped; nothing ran.").await;
    // The paused turn has ended (a `/stop` racing its last step would stop
    // that turn instead, which has nothing left to do).
    h.idle().await;
    h.channel.dm(1, "/stop").await;
    h.wait_for("the answer", |l| l.has_text("Stopped; nothing ran."))
        .await;
    let log = h.channel.log();
    assert!(
        log.has_text(&format!(
            "Recorded: denied for `{}`.",
            card.approval_id().short()
        )),
        "{log}"
    );
    assert!(log.messages[&card.id.0].text.contains("Denied"), "{log}");
    let result = tool_result(&h.requests(2).await[1], "call_exec");
    assert!(result.contains("stopped with /stop"), "{result}");
    assert!(!h.workspace().join("stopped.txt").exists());
    // Nothing waits any more.
    h.idle().await;
    h.channel.dm(1, "/stop").await;
    h.wait_for("nothing to stop", |l| {
        l.has_text("Nothing is running to stop.")
    })
    .await;
    h.stop().await;
}

/// Approval presses have an allowance of their own
/// (`APPROVAL_PRESSES_PER_MINUTE`): a stranger hammering someone's card is
/// told to slow down once past it — without a decision — and the card's
/// owner, with an allowance of their own, still decides it.
#[tokio::test]
async fn approval_presses_past_the_allowance_are_told_to_slow_down() {
    let h = Harness::with(&[("APPROVAL_PRESSES_PER_MINUTE", "2")]).await;
    let card = exec_card(&h, "touch limited.txt", "Ran it.").await;
    let (chat, id) = {
        let log = h.channel.log();
        let m = &log.messages[&card.id.0];
        (m.chat, m.id)
    };
    for _ in 0..3 {
        h.channel.press_on(2, &card.action('y'), chat, id).await;
    }
    let log = h
        .wait_for("three answers", |l| l.answers().len() == 3)
        .await;
    let texts: Vec<String> = log
        .answers()
        .into_iter()
        .map(|(_, _, a)| match a {
            PressAnswer::Private(t) => t,
            other => panic!("{other:?}"),
        })
        .collect();
    // Presses are handled concurrently: which one is refused may vary.
    let slowed = texts.iter().filter(|t| t.contains("Slow down")).count();
    let refused = texts
        .iter()
        .filter(|t| t.contains("Only the person who asked"))
        .count();
    assert_eq!((slowed, refused), (1, 2), "{texts:?}");
    assert_eq!(
        h.running
            .store
            .approvals()
            .get(&card.approval_id())
            .await
            .unwrap()
            .unwrap()
            .status,
        ApprovalStatus::Pending,
        "no press decided anything"
    );
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the owner's decision ran", |l| l.has_text("Ran it."))
        .await;
    h.stop().await;
}
