//! Several gateway processes on one database serve the same console: a
//! session signed in on one is accepted by the other (same `WEB_TOKEN`),
//! each lists both processes, and a card waiting in one is on the other's
//! page. On PostgreSQL when `TEST_DATABASE_URL` is set, else one SQLite file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::e2e::Harness;
use crate::support::fake_llm::Reply;
use crate::support::postgres::fresh_postgres;
use crate::web_client::{WebClient, TOKEN};
use reqwest::StatusCode;
use serde_json::json;
use switchboard::store::{MemoryKind, MemoryOwner, NewMemory};
use switchboard_platform::{Platform, UserId};

#[tokio::test]
async fn two_processes_serve_one_console() {
    let dir = tempfile::tempdir().unwrap();
    let url = match std::env::var("TEST_DATABASE_URL") {
        Ok(admin) => fresh_postgres(&admin).await,
        Err(_) => format!("sqlite://{}", dir.path().join("shared.db").display()),
    };
    let vars = [
        ("WEB_LISTEN", "127.0.0.1:0"),
        ("WEB_TOKEN", TOKEN),
        ("DATABASE_URL", url.as_str()),
    ];
    let a = Harness::with(&vars).await;
    let b = Harness::with(&vars).await;
    let (addr_a, addr_b) = (a.running.web_addr.unwrap(), b.running.web_addr.unwrap());

    let mut on_a = WebClient::signed_in(addr_a).await;
    let mut on_b = WebClient::new(addr_b);
    on_b.cookie = on_a.cookie.clone();
    let mut overview = on_b.get("/").await;
    assert_eq!(overview.status, StatusCode::OK, "A's session is valid on B");
    // Each process lists itself with its first heartbeat, written as it starts.
    for _ in 0..100 {
        if [addr_a, addr_b]
            .iter()
            .all(|addr| overview.body.contains(&addr.to_string()))
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        overview = on_b.get("/").await;
    }
    for addr in [addr_a, addr_b] {
        assert!(
            overview.body.contains(&addr.to_string()),
            "{addr} listed: {}",
            overview.body
        );
    }
    // A form from A's page posts to B.
    let csrf = on_a.get("/").await.csrf();
    let r = on_b
        .post("/tasks/0123456789abcdef/cancel", &[("_csrf", &csrf)])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);

    a.llm.push(Reply::tool_calls([(
        "call_exec",
        "exec_command",
        json!({ "command": "echo shared" }),
    )]));
    a.channel.dm(1, "run it").await;
    let card = a.channel.card().await;
    let page = on_b.get("/approvals").await.body;
    assert!(
        page.contains(&format!("approval-{}", card.approval_id())),
        "{page}"
    );

    // Every page's queries run on this backend, with something on them.
    let session = a.session(1, 1).await;
    let store = &a.running.store;
    let usage = switchboard::llm::Usage {
        input_tokens: 1_000_000,
        output_tokens: 10_000,
        ..Default::default()
    };
    store
        .usage()
        .add(Platform::Telegram, UserId(5), &usage, 1)
        .await
        .unwrap();
    store
        .admit(Platform::Telegram, UserId(5), "Ann", "operator")
        .await
        .unwrap();
    let memory = NewMemory {
        kind: MemoryKind::Preference,
        content: "prefers short answers".into(),
        source_ref: "test".into(),
        importance: 0.7,
        expires_at: None,
    };
    let owner = MemoryOwner::new(Platform::Telegram, UserId(5));
    store
        .memories()
        .insert(owner, &memory, &["short".into()], chrono::Utc::now())
        .await
        .unwrap();
    a.running
        .store
        .audit()
        .record("error.storage", json!({ "what": "test" }))
        .await;
    for path in [
        "/".to_owned(),
        "/conversations?platform=console&chat=1&user=1".to_owned(),
        format!("/conversations/{}", session.as_str()),
        "/tasks".to_owned(),
        "/users".to_owned(),
        "/audit?kind=error&since=2020-01-01".to_owned(),
    ] {
        let r = on_b.get(&path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
    }
    let users = on_b.get("/users?user=telegram:5").await.body;
    assert!(
        users.contains("prefers short answers") && users.contains("Ann"),
        "{users}"
    );
    assert!(
        users.contains("1000000") && users.contains("<svg"),
        "{users}"
    );
    let audit = on_b.get("/audit?kind=error").await.body;
    assert!(audit.contains("<code>error.storage</code>"), "{audit}");
    let convo = on_b
        .get(&format!("/conversations/{}", session.as_str()))
        .await
        .body;
    // The turn is paused on the card: its approval is on the page.
    assert!(
        convo.contains("echo shared") && convo.contains("pending"),
        "{convo}"
    );

    // A process that stops leaves the list.
    a.stop().await;
    let overview = on_b.get("/").await.body;
    assert!(!overview.contains(&addr_a.to_string()), "{overview}");
    b.stop().await;
}
