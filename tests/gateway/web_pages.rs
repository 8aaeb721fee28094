//! The web console's pages: each renders for a signed-in operator, unknown
//! things are 404, pages are bounded, and hostile or secret text in a
//! conversation is shown escaped and masked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::e2e::Harness;
use crate::web_client::{WebClient, TOKEN};
use reqwest::StatusCode;
use switchboard::llm::{Message, ToolCall};
use switchboard::store::SessionKey;
use switchboard_platform::{ChatId, Platform, UserId};

async fn console() -> Harness {
    Harness::with(&[("WEB_LISTEN", "127.0.0.1:0"), ("WEB_TOKEN", TOKEN)]).await
}

fn key(user: i64) -> SessionKey {
    SessionKey {
        platform: Platform::Telegram,
        chat: ChatId(user),
        thread: None,
        user: UserId(user),
    }
}

#[tokio::test]
async fn every_page_renders() {
    let h = console().await;
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    for (path, title) in [
        ("/", "Overview"),
        ("/conversations", "Conversations"),
        ("/approvals", "Approvals"),
        ("/tasks", "Tasks &amp; schedules"),
        ("/users", "Users &amp; access"),
        ("/audit", "Audit log"),
        (
            "/audit?kind=web&since=2020-01-01&until=2099-12-31",
            "Audit log",
        ),
        ("/conversations?platform=telegram", "Conversations"),
    ] {
        let r = c.get(path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
        assert!(
            r.body.contains(&format!("<h1>{title}</h1>")),
            "{path}: {}",
            r.body
        );
        assert!(r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
    }
    // This process is listed among those sharing the database, and the
    // test channel's connection is shown.
    let overview = c.get("/").await.body;
    assert!(overview.contains(env!("CARGO_PKG_VERSION")), "{overview}");
    assert!(overview.contains("connected"), "{overview}");
    h.stop().await;
}

#[tokio::test]
async fn unknown_things_are_not_found() {
    let h = console().await;
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    for path in [
        "/nope",
        "/conversations/no-such-session",
        "/static/other.js",
    ] {
        assert_eq!(c.get(path).await.status, StatusCode::NOT_FOUND, "{path}");
    }
    let r = c
        .post_from("/", "/schedules/no-such-schedule/cancel", &[])
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = c.post_from("/", "/memories/myspace/1/1/forget", &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    h.stop().await;
}

#[tokio::test]
async fn lists_are_paged_and_bounded() {
    let h = console().await;
    let store = &h.running.store;
    for user in 0..53 {
        store.sessions().open(&key(1000 + user)).await.unwrap();
    }
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    let first = c.get("/conversations").await.body;
    assert_eq!(first.matches("href=\"/conversations/").count(), 50);
    assert!(first.contains("rel=\"next\" href=\"?page=2\""), "{first}");
    let second = c.get("/conversations?page=2").await.body;
    assert_eq!(second.matches("href=\"/conversations/").count(), 3);
    assert!(!second.contains("rel=\"next\""), "{second}");
    let one = c
        .get("/conversations?platform=telegram&chat=1003&user=")
        .await
        .body;
    assert_eq!(one.matches("href=\"/conversations/").count(), 1, "{one}");
    let none = c.get("/conversations?user=99").await.body;
    assert_eq!(none.matches("href=\"/conversations/").count(), 0, "{none}");
    assert_eq!(
        c.get("/conversations?chat=abc").await.status,
        StatusCode::BAD_REQUEST
    );
    let past = c.get("/conversations?page=9").await;
    assert_eq!(past.status, StatusCode::OK);
    assert!(past.body.contains("No conversation on this page."));
    for bad in [
        "/conversations?page=0",
        "/conversations?page=10001",
        "/conversations?page=-1",
        "/conversations?page=abc",
        "/audit?page=0",
        "/audit?since=yesterday",
        "/tasks?history=0",
        "/users?memories=99999999",
        "/approvals?rules=0",
    ] {
        assert_eq!(c.get(bad).await.status, StatusCode::BAD_REQUEST, "{bad}");
    }
    // A conversation page holds at most 500 messages.
    let session = store.sessions().open(&key(7)).await.unwrap();
    let msgs: Vec<Message> = (0..120).map(|i| Message::user(format!("n{i}"))).collect();
    store.history().append(&session, &msgs).await.unwrap();
    let page = c
        .get(&format!("/conversations/{}", session.as_str()))
        .await
        .body;
    assert_eq!(page.matches("<li class=\"msg user").count(), 100);
    let rest = c
        .get(&format!("/conversations/{}?page=2", session.as_str()))
        .await
        .body;
    assert_eq!(rest.matches("<li class=\"msg user").count(), 20);
    let bad = c
        .get(&format!("/conversations/{}?per=501", session.as_str()))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    h.stop().await;
}

#[tokio::test]
async fn hostile_and_secret_text_is_escaped_and_masked() {
    let h = console().await;
    let store = &h.running.store;
    let session = store.sessions().open(&key(42)).await.unwrap();
    let mut call = Message::assistant("I'll fetch it. <img src=x onerror=alert(2)>");
    call.tool_calls = vec![ToolCall {
        id: "call_1".into(),
        name: "http_get".into(),
        arguments: r#"{"url":"https://api.example.com/x","headers":{"Authorization":"Bearer sk-live-abcdefghijkl"},"api_key":"k-123456"}"#.into(),
    }];
    let history = [
        Message::user("hello <script>alert('user')</script> [x](javascript:alert(3))"),
        call,
        Message::tool_result(
            "call_1",
            "<script>alert('tool')</script> token=tok_secret_value",
        ),
        Message::assistant("Done **bold**"),
    ];
    store.history().append(&session, &history).await.unwrap();
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    let page = c.get(&format!("/conversations/{}", session.as_str())).await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    assert!(!body.contains("<script>alert"), "{body}");
    assert!(!body.contains("<img src=x"), "{body}");
    assert!(!body.contains("javascript:"), "{body}");
    assert!(
        body.contains("&lt;script&gt;alert('user')")
            || body.contains("&lt;script&gt;alert(&#39;user&#39;)"),
        "{body}"
    );
    assert!(body.contains("&lt;script&gt;alert"), "{body}");
    assert!(body.contains("<strong>bold</strong>"), "{body}");
    for secret in ["sk-live-abcdefghijkl", "k-123456", "tok_secret_value"] {
        assert!(!body.contains(secret), "{secret} shown: {body}");
    }
    assert!(body.contains("https://api.example.com/x"), "{body}");
    assert!(body.contains("http_get"), "{body}");
    h.stop().await;
}

/// The conversation page shows the plan the agent made in the chat: each
/// step with its tool, state and observation (masked, escaped), the phase;
/// on SQLite, and on PostgreSQL when `TEST_DATABASE_URL` is set.
#[tokio::test]
async fn the_conversation_page_shows_the_plan_with_steps_states_and_observations() {
    let mut dbs = vec![None];
    if let Ok(admin) = std::env::var("TEST_DATABASE_URL") {
        dbs.push(Some(crate::support::postgres::fresh_postgres(&admin).await));
    }
    for db in dbs {
        let mut vars = vec![("WEB_LISTEN", "127.0.0.1:0"), ("WEB_TOKEN", TOKEN)];
        if let Some(url) = &db {
            vars.push(("DATABASE_URL", url.as_str()));
        }
        plan_table_on(Harness::with(&vars).await).await;
    }
}

async fn plan_table_on(h: Harness) {
    use crate::support::fake_llm::Reply;
    use serde_json::json;
    h.write("sales.csv", "42 rows <b>ok</b> token=tok_plan_secret_1");
    h.llm.push(Reply::tool_calls([(
        "p1",
        "plan",
        json!({"action": "create", "goal": "Sales digest", "steps": [
            {"text": "read the sales", "tool": "read_file", "expected": "the rows"},
            {"text": "read the costs", "tool": "read_file"},
            {"text": "write the digest"}
        ]}),
    )]));
    h.llm.push(Reply::tool_calls([(
        "r1",
        "read_file",
        json!({"path": "sales.csv"}),
    )]));
    h.llm.push(Reply::tool_calls([(
        "r2",
        "read_file",
        json!({"path": "costs.csv"}),
    )]));
    h.llm.push(Reply::text(
        "The costs are missing: retry, continue or skip?",
    ));
    h.channel.dm(1, "digest my sales").await;
    h.wait_for("the question", |l| {
        l.any_contains("retry, continue or skip")
    })
    .await;
    h.idle().await;
    let session = h.session(1, 1).await;
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    let page = c.get(&format!("/conversations/{}", session.as_str())).await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    let plan = &body[body.find("<section id=\"plan\">").expect("a plan section")..];
    let plan = &plan[..plan.find("</section>").unwrap()];
    assert!(
        plan.contains("<h2>Plan</h2>") && plan.contains("Sales digest"),
        "{plan}"
    );
    assert!(plan.contains("waiting_user"), "{plan}");
    let rows: Vec<&str> = plan.split("<tr").skip(2).collect();
    assert_eq!(rows.len(), 3, "{plan}");
    assert!(
        rows[0].contains("read the sales") && rows[0].contains(">done<"),
        "{}",
        rows[0]
    );
    assert!(
        rows[0].contains("42 rows &lt;b&gt;ok&lt;/b&gt;"),
        "{}",
        rows[0]
    );
    assert!(rows[0].contains("expects: the rows"), "{}", rows[0]);
    assert!(
        rows[1].contains("read the costs") && rows[1].contains(">failed<"),
        "{}",
        rows[1]
    );
    assert!(
        rows[1].contains("costs.csv"),
        "the failure is its observation: {}",
        rows[1]
    );
    assert!(
        rows[2].contains("write the digest") && rows[2].contains(">pending<"),
        "{}",
        rows[2]
    );
    assert!(!body.contains("tok_plan_secret_1"), "{body}");
    h.stop().await;
}
