//! The web console's actions: Approve / Deny take the buttons' own path (the
//! first decision wins, the card is edited, the turn resumes), and rules,
//! pairings, memories, tasks and schedules change, each audited as `web`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::e2e::{tool_result, Harness};
use crate::support::fake_llm::Reply;
use crate::web_client::{WebClient, TOKEN};
use reqwest::StatusCode;
use serde_json::json;
use switchboard::store::{ApprovalStatus, MemoryKind, MemoryOwner, NewMemory};
use switchboard_platform::{Platform, UserId};

async fn console() -> Harness {
    Harness::with(&[("WEB_LISTEN", "127.0.0.1:0"), ("WEB_TOKEN", TOKEN)]).await
}

fn web_events(events: &[switchboard::store::SystemEvent], kind: &str) -> Vec<serde_json::Value> {
    events
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| {
            assert_eq!(e.detail["actor"], "web", "{e:?}");
            e.detail.clone()
        })
        .collect()
}

#[tokio::test]
async fn approve_in_the_console_runs_the_tool_edits_the_card_and_wins_once() {
    let h = console().await;
    h.llm.push(Reply::tool_calls([(
        "call_exec",
        "exec_command",
        json!({ "command": "echo web > web.txt" }),
    )]));
    h.llm.push(Reply::text("Written."));
    h.channel.dm(1, "please write it").await;
    let card = h.channel.card().await;
    let id = card.approval_id();

    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    let page = c.get("/approvals").await.body;
    assert!(page.contains(&format!("approval-{id}")), "{page}");
    assert!(
        page.contains("echo web &gt; web.txt"),
        "the exact arguments: {page}"
    );
    let overview = c.get("/").await.body;
    assert!(overview.contains("exec_command"), "{overview}");

    let r = c
        .post_from(
            "/approvals",
            &format!("/approvals/{id}/decide"),
            &[("choice", "allow")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.location(), "/approvals?flash=decided");
    h.wait_for("the answer", |l| l.has_text("Written.")).await;
    h.wait_for("the card edited", |l| {
        l.messages[&card.id.0].text.contains("Allowed once")
            && l.messages[&card.id.0].text.contains("web operator")
    })
    .await;
    h.idle().await;
    assert_eq!(
        std::fs::read_to_string(h.workspace().join("web.txt")).unwrap(),
        "web\n"
    );
    let requests = h.requests(2).await;
    assert!(tool_result(&requests[1], "call_exec").starts_with("exit code: 0"));
    let record = h.running.store.approvals().get(&id).await.unwrap().unwrap();
    assert_eq!(record.status, ApprovalStatus::Allowed);
    assert_eq!(record.decided_by_name.as_deref(), Some("web operator"));

    // The same rule as a button: a second decision is refused.
    let again = c
        .post_from(
            "/approvals",
            &format!("/approvals/{id}/decide"),
            &[("choice", "deny")],
        )
        .await;
    assert_eq!(again.location(), "/approvals?flash=refused");
    let flash = c.get("/approvals?flash=refused").await.body;
    assert!(flash.contains("already decided"), "{flash}");
    let events = h.running.store.audit().recent(100).await.unwrap();
    let decided = web_events(&events, "web.approval_decide");
    assert_eq!(decided.len(), 2, "{decided:?}");
    assert!(decided
        .iter()
        .any(|d| d["decided"] == true && d["id"] == id.as_str()));
    assert!(decided.iter().any(|d| d["decided"] == false));
    // The conversation page shows the call, its result and the decision.
    let session = h.session(1, 1).await;
    let convo = c
        .get(&format!("/conversations/{}", session.as_str()))
        .await
        .body;
    assert!(
        convo.contains("exec_command") && convo.contains("exit code: 0"),
        "{convo}"
    );
    assert!(convo.contains("allowed"), "{convo}");
    h.stop().await;
}

#[tokio::test]
async fn deny_in_the_console_tells_the_model_and_runs_nothing() {
    let h = console().await;
    h.llm.push(Reply::tool_calls([(
        "call_exec",
        "exec_command",
        json!({ "command": "touch nope.txt" }),
    )]));
    h.llm.push(Reply::text("Fine, not done."));
    h.channel.dm(1, "touch it").await;
    let card = h.channel.card().await;
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    let path = format!("/approvals/{}/decide", card.approval_id());
    let r = c
        .post_from(
            "/approvals",
            &path,
            &[("choice", "deny"), ("reason", "not today")],
        )
        .await;
    assert_eq!(r.location(), "/approvals?flash=decided");
    h.wait_for("the answer", |l| l.has_text("Fine, not done."))
        .await;
    h.wait_for("the card denied", |l| {
        l.messages[&card.id.0].text.contains("Denied")
    })
    .await;
    assert!(!h.workspace().join("nope.txt").exists());
    let bad = c
        .post_from("/approvals", &path, &[("choice", "maybe")])
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    h.stop().await;
}

#[tokio::test]
async fn rules_pairings_memories_tasks_and_schedules_are_changed_and_audited() {
    let h = console().await;
    let store = &h.running.store;
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;

    store
        .approvals()
        .add_rule(
            Platform::Telegram,
            UserId(5),
            "exec_command",
            r#"{"command":"ls"}"#,
        )
        .await
        .unwrap();
    let page = c.get("/approvals").await.body;
    let rule = regex::Regex::new(r#"/rules/([0-9a-f-]+)/revoke"#).unwrap();
    let rule_id = rule.captures(&page).unwrap()[1].to_owned();
    let r = c
        .post_from("/approvals", &format!("/rules/{rule_id}/revoke"), &[])
        .await;
    assert_eq!(r.location(), "/approvals?flash=revoked");
    assert!(store.approvals().all_rules().await.unwrap().is_empty());

    let (code, _) = store
        .pairing_code(
            Platform::Telegram,
            UserId(77),
            "Zoe <b>",
            chrono::Duration::hours(1),
        )
        .await
        .unwrap();
    let users = c.get("/users").await.body;
    assert!(
        users.contains(&code.code) && users.contains("Zoe &lt;b&gt;"),
        "{users}"
    );
    let r = c
        .post_from(
            "/users",
            &format!("/pairings/{}/decide", code.code),
            &[("choice", "approve")],
        )
        .await;
    assert_eq!(r.location(), "/users?flash=approved");
    assert!(store
        .is_admitted(Platform::Telegram, UserId(77))
        .await
        .unwrap());

    let owner = MemoryOwner::new(Platform::Telegram, UserId(77));
    let memory = NewMemory {
        kind: MemoryKind::Fact,
        content: "likes tea".into(),
        source_ref: "test".into(),
        importance: 0.5,
        expires_at: None,
    };
    let mid = store
        .memories()
        .insert(owner, &memory, &["tea".into()], chrono::Utc::now())
        .await
        .unwrap();
    assert!(c.get("/users").await.body.contains("likes tea"));
    let r = c
        .post_from(
            "/users",
            &format!("/memories/telegram/77/{mid}/forget"),
            &[],
        )
        .await;
    assert_eq!(r.location(), "/users?flash=forgotten");
    assert!(!c.get("/users").await.body.contains("likes tea"));

    let r = c
        .post_from("/tasks", "/tasks/0123456789abcdef/cancel", &[])
        .await;
    assert_eq!(r.location(), "/tasks?flash=not-running");

    let events = store.audit().recent(200).await.unwrap();
    assert_eq!(web_events(&events, "web.rule_revoke")[0]["revoked"], true);
    assert_eq!(web_events(&events, "web.pairing_decide")[0]["user"], 77);
    assert_eq!(
        web_events(&events, "web.memory_forget")[0]["forgotten"],
        true
    );
    assert_eq!(
        web_events(&events, "web.task_cancel")[0]["requested"],
        false
    );
    // The audit page filters by family.
    let audit = c.get("/audit?kind=web").await.body;
    assert!(audit.contains("<code>web.memory_forget</code>"), "{audit}");
    assert!(!audit.contains("<code>gateway.start</code>"), "{audit}");
    h.stop().await;
}
