//! End to end: who gets through the gateway — pairing, an empty allowlist and
//! the per-user rate limit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use support::e2e::Harness;
use support::fake_llm::{last_user_text, Reply};
use switchboard_platform::{Addressed, Platform, UserId};

/// The code between `**` in the pairing reply.
fn pairing_code(text: &str) -> String {
    text.split("**").nth(1).unwrap_or_default().to_owned()
}

#[tokio::test]
async fn pairing_admits_a_user_once_the_operator_approves_the_code() {
    let h = Harness::with(&[("ACCESS_POLICY", "pairing")]).await;
    h.channel.dm(5, "hello").await;
    let log = h
        .wait_for("a pairing code", |l| l.any_contains("pairing code is"))
        .await;
    let reply = log.find("pairing code is").unwrap();
    let code = pairing_code(&reply.text);
    assert_eq!(code.len(), 8, "{}", reply.text);
    assert!(reply
        .text
        .contains(&format!("switchboard pair approve {code}")));
    let pending = h.running.store.pending_pairings().await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].platform, pending[0].user),
        (Platform::Console, UserId(5))
    );

    // Asking again before approval repeats the same code; the model is never called.
    h.channel.dm(5, "hello?").await;
    let log = h
        .wait_for("the code again", |l| {
            l.count_containing("pairing code is") == 2
        })
        .await;
    assert!(log
        .texts()
        .iter()
        .all(|t| !t.contains("pairing code is") || t.contains(&code)));
    assert!(h.llm.requests().await.is_empty());

    assert!(h
        .running
        .store
        .decide_pairing(&code, true)
        .await
        .unwrap()
        .is_some());
    h.llm.push(Reply::text("Welcome!"));
    h.channel.dm(5, "hello again").await;
    h.wait_for("an answer", |l| l.has_text("Welcome!")).await;
    let asked: Vec<String> = h
        .llm
        .requests()
        .await
        .iter()
        .filter_map(last_user_text)
        .collect();
    assert_eq!(
        asked,
        ["hello again"],
        "earlier messages were not let through"
    );

    // Strangers in a group are ignored silently (no code is handed out there).
    h.channel
        .group(6, -200, Addressed::Mention, "hey bot")
        .await;
    h.channel
        .group(5, -200, Addressed::Mention, "/whoami")
        .await;
    let log = h
        .wait_for("the admitted user's command", |l| {
            l.any_contains("You are user5")
        })
        .await;
    assert_eq!(
        log.texts_in(-200).len(),
        1,
        "only user 5 was answered\n{log}"
    );
    let pending = h.running.store.pending_pairings().await.unwrap();
    assert!(pending.iter().all(|p| p.user != UserId(6)), "{pending:?}");
    assert_eq!(h.llm.requests().await.len(), 1);

    // `switchboard pair revoke`: the next message is a stranger's again, at
    // once, though this process saw the user admitted a moment ago.
    assert!(h
        .running
        .store
        .revoke_admission(Platform::Console, UserId(5))
        .await
        .unwrap());
    h.channel.dm(5, "still there?").await;
    h.wait_for("a new pairing code", |l| {
        l.count_containing("pairing code is") == 3
    })
    .await;
    assert_eq!(h.llm.requests().await.len(), 1, "the model was not called");
    h.stop().await;
}

#[tokio::test]
async fn an_empty_allowlist_admits_nobody() {
    let h = Harness::with(&[("ACCESS_POLICY", "allowlist")]).await;
    h.channel.group(8, -300, Addressed::Mention, "hi all").await;
    h.channel.dm(7, "hello").await;
    let log = h
        .wait_for("a refusal", |l| l.any_contains("allowlist"))
        .await;
    let refusal = log.find("allowlist").unwrap();
    assert_eq!(refusal.chat.chat.0, 7);
    assert!(
        refusal.text.contains("Your user id is 7"),
        "{}",
        refusal.text
    );
    assert!(
        log.texts_in(-300).is_empty(),
        "group strangers are ignored\n{log}"
    );
    h.channel.dm(7, "/help").await;
    h.wait_for("a second refusal", |l| l.count_containing("allowlist") == 2)
        .await;
    assert!(h.llm.requests().await.is_empty());
    h.stop().await;
}

#[tokio::test]
async fn the_rate_limit_sends_one_notice_then_stays_silent() {
    let h = Harness::with(&[("USER_MESSAGES_PER_MINUTE", "2")]).await;
    h.llm.set_responder(|request| {
        Reply::text(&format!(
            "echo: {}",
            last_user_text(request).unwrap_or_default()
        ))
    });
    for text in ["one", "two", "three", "four"] {
        h.channel.dm(1, text).await;
    }
    // Another user is not affected; their answer also shows user 1's four
    // messages were all handled.
    h.channel.dm(2, "/whoami").await;
    h.wait_for("user 2's reply", |l| l.any_contains("You are user2"))
        .await;
    h.wait_for("two answers", |l| l.has_text("echo: two")).await;
    h.idle().await;

    let log = h.channel.log();
    assert_eq!(
        log.count_containing("faster than I can take them"),
        1,
        "{log}"
    );
    let notice = log.find("faster than I can take them").unwrap();
    assert!(
        notice.text.contains("limit 2 per minute"),
        "{}",
        notice.text
    );
    assert!(!log.any_contains("echo: three") && !log.any_contains("echo: four"));
    let asked: Vec<String> = h
        .llm
        .requests()
        .await
        .iter()
        .filter_map(last_user_text)
        .collect();
    assert_eq!(asked, ["one", "two"]);
    h.stop().await;
}
