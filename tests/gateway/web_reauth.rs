//! Issue 38: the web console against a program that can fetch its pages.
//! Approve needs the token re-entered (a session and its CSRF token are not
//! enough), a console without a token cannot approve, signing out revokes
//! the session on the server (a replayed cookie is refused), and failed
//! sign-ins are counted per client (behind a trusted proxy, per forwarded
//! address), not for everyone behind one address.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::e2e::Harness;
use crate::support::fake_llm::Reply;
use crate::web_client::{WebClient, TOKEN};
use reqwest::StatusCode;
use serde_json::json;
use switchboard::domain::ApprovalId;
use switchboard::store::ApprovalStatus;

/// A card waiting for `touch <file>`; its approval id.
async fn pending(h: &Harness, file: &str) -> ApprovalId {
    h.llm.push(Reply::tool_calls([(
        "call_exec",
        "exec_command",
        json!({ "command": format!("touch {file}") }),
    )]));
    h.llm.push(Reply::text("Touched."));
    h.channel.dm(1, "touch it").await;
    h.channel.card().await.approval_id()
}

async fn status(h: &Harness, id: &ApprovalId) -> ApprovalStatus {
    h.running
        .store
        .approvals()
        .get(id)
        .await
        .unwrap()
        .unwrap()
        .status
}

#[tokio::test]
async fn approve_needs_the_token_re_entered_and_a_session_alone_is_refused() {
    // 0: every approval asks for the token (the default lets a fresh
    // sign-in approve for five minutes).
    let h = Harness::with(&[
        ("WEB_LISTEN", "127.0.0.1:0"),
        ("WEB_TOKEN", TOKEN),
        ("WEB_REAUTH_SECS", "0"),
    ])
    .await;
    let id = pending(&h, "approved.txt").await;
    let path = format!("/approvals/{id}/decide");
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    let page = c.get("/approvals").await.body;
    assert!(
        page.contains(r#"type="password" name="token""#),
        "the approve form asks for the token: {page}"
    );

    // What a program holding a session can do: refused, still pending.
    let r = c
        .post_from("/approvals", &path, &[("choice", "allow")])
        .await;
    assert_eq!(r.location(), "/approvals?flash=reauth", "{}", r.body);
    let r = c
        .post_from(
            "/approvals",
            &path,
            &[("choice", "allow"), ("token", "not-the-token-at-all")],
        )
        .await;
    assert_eq!(r.location(), "/approvals?flash=reauth-failed");
    assert_eq!(status(&h, &id).await, ApprovalStatus::Pending);
    let shown = c.get("/approvals?flash=reauth").await.body;
    assert!(shown.contains("needs the console token"), "{shown}");

    // The operator, typing the token: approved, and the command ran.
    let r = c
        .post_from(
            "/approvals",
            &path,
            &[("choice", "allow"), ("token", TOKEN)],
        )
        .await;
    assert_eq!(r.location(), "/approvals?flash=decided", "{}", r.body);
    h.wait_for("the answer", |l| l.has_text("Touched.")).await;
    assert_eq!(status(&h, &id).await, ApprovalStatus::Allowed);
    assert!(h.workspace().join("approved.txt").exists());
    let events = h.running.store.audit().recent(100).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert!(kinds.contains(&"web.reauth_failed"), "{kinds:?}");
    assert!(kinds.contains(&"web.reauth"), "{kinds:?}");
    assert!(!events.iter().any(|e| e.detail.to_string().contains(TOKEN)));

    // Denying needs no token.
    h.idle().await;
    let other = pending(&h, "denied.txt").await;
    let r = c
        .post_from(
            "/approvals",
            &format!("/approvals/{other}/decide"),
            &[("choice", "deny")],
        )
        .await;
    assert_eq!(r.location(), "/approvals?flash=decided");
    assert_eq!(status(&h, &other).await, ApprovalStatus::Denied);
    h.stop().await;
}

#[tokio::test]
async fn a_fresh_sign_in_approves_within_the_window() {
    let h = Harness::with(&[("WEB_LISTEN", "127.0.0.1:0"), ("WEB_TOKEN", TOKEN)]).await;
    let id = pending(&h, "fresh.txt").await;
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    let page = c.get("/approvals").await.body;
    assert!(page.contains("approving without it until"), "{page}");
    let r = c
        .post_from(
            "/approvals",
            &format!("/approvals/{id}/decide"),
            &[("choice", "allow")],
        )
        .await;
    assert_eq!(r.location(), "/approvals?flash=decided");
    h.stop().await;
}

#[tokio::test]
async fn a_console_without_a_token_cannot_approve() {
    let h = Harness::with(&[("WEB_LISTEN", "127.0.0.1:0")]).await;
    let id = pending(&h, "open.txt").await;
    // Any local program gets a session here, CSRF token and all.
    let mut c = WebClient::new(h.running.web_addr.unwrap());
    let page = c.get("/approvals").await.body;
    assert!(page.contains("cannot approve"), "{page}");
    assert!(!page.contains(r#"value="allow""#), "{page}");
    let r = c
        .post_from(
            "/approvals",
            &format!("/approvals/{id}/decide"),
            &[("choice", "allow"), ("token", "anything-at-all-here")],
        )
        .await;
    assert_eq!(r.location(), "/approvals?flash=no-token");
    assert_eq!(status(&h, &id).await, ApprovalStatus::Pending);
    assert!(!h.workspace().join("open.txt").exists());
    h.stop().await;
}

#[tokio::test]
async fn signing_out_revokes_the_session_and_a_replayed_cookie_is_refused() {
    let h = Harness::with(&[("WEB_LISTEN", "127.0.0.1:0"), ("WEB_TOKEN", TOKEN)]).await;
    let addr = h.running.web_addr.unwrap();
    let mut c = WebClient::signed_in(addr).await;
    assert_eq!(c.get("/").await.status, StatusCode::OK);
    let stolen = c.cookie.clone();
    let out = c.post_from("/", "/logout", &[]).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    let mut replay = WebClient::new(addr);
    replay.cookie = stolen;
    let r = replay.get("/").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.location(), "/login");
    let r = replay.post("/tasks/abc/cancel", &[]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // The login page gives the replayed browser a new, signed-out session.
    let login = replay.get("/login").await;
    assert_eq!(login.status, StatusCode::OK, "{}", login.body);
    // Another session is untouched, and signing in again works.
    let mut again = WebClient::signed_in(addr).await;
    assert_eq!(again.get("/").await.status, StatusCode::OK);
    h.stop().await;
}

#[tokio::test]
async fn failed_sign_ins_are_limited_per_client_behind_a_trusted_proxy() {
    let h = Harness::with(&[
        ("WEB_LISTEN", "127.0.0.1:0"),
        ("WEB_TOKEN", TOKEN),
        ("WEB_TRUSTED_PROXY", "127.0.0.1"),
    ])
    .await;
    let addr = h.running.web_addr.unwrap();
    let mut guesser = WebClient::new(addr);
    guesser.forwarded_for = Some("203.0.113.9".into());
    for _ in 0..5 {
        let r = guesser.login("wrong-token-wrong-token").await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(
        guesser.login(TOKEN).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Someone else behind the same proxy is not locked out …
    let mut colleague = WebClient::new(addr);
    colleague.forwarded_for = Some("198.51.100.4".into());
    assert_eq!(colleague.login(TOKEN).await.status, StatusCode::SEE_OTHER);
    // … and the guesser cannot pick a new address: the proxy appends the
    // one it saw, and that is the one counted.
    guesser.forwarded_for = Some("192.0.2.1, 203.0.113.9".into());
    assert_eq!(
        guesser.login(TOKEN).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    let events = h.running.store.audit().recent(50).await.unwrap();
    let failed = events
        .iter()
        .find(|e| e.kind == "web.login_failed")
        .unwrap();
    assert_eq!(failed.detail["ip"], "203.0.113.9");
    assert_eq!(failed.detail["via"], "127.0.0.1");
    h.stop().await;
}

#[tokio::test]
async fn without_a_trusted_proxy_a_forwarded_address_changes_nothing() {
    let h = Harness::with(&[("WEB_LISTEN", "127.0.0.1:0"), ("WEB_TOKEN", TOKEN)]).await;
    let addr = h.running.web_addr.unwrap();
    let mut guesser = WebClient::new(addr);
    for i in 0..5 {
        guesser.forwarded_for = Some(format!("203.0.113.{i}"));
        assert_eq!(
            guesser.login("wrong-token-wrong-token").await.status,
            StatusCode::UNAUTHORIZED
        );
    }
    guesser.forwarded_for = Some("203.0.113.200".into());
    assert_eq!(
        guesser.login(TOKEN).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    h.stop().await;
}
