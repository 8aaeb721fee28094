//! `HEALTH_LISTEN`: `/healthz` answers while the database does (503 once it is
//! gone) and `/metrics` counts messages and turns, and times turns, model
//! calls, tools and delivery, in the OpenMetrics text format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use support::e2e::Harness;
use support::fake_llm::Reply;

#[tokio::test]
async fn health_and_metrics_follow_the_gateway() {
    let h = Harness::with(&[("HEALTH_LISTEN", "127.0.0.1:0")]).await;
    let addr = h.running.health_addr.expect("the endpoint is bound");
    let http = reqwest::Client::new();
    let health = http
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let body: serde_json::Value = health.json().await.unwrap();
    assert_eq!(body["status"], "ok");

    h.llm.push(Reply::text("Hi there."));
    h.channel.dm(1, "hello").await;
    h.wait_for("the answer", |l| l.has_text("Hi there.")).await;
    h.write("notes.txt", "remember the milk");
    h.llm.push(Reply::tool_calls([(
        "c_r",
        "read_file",
        serde_json::json!({"path": "notes.txt"}),
    )]));
    h.llm.push(Reply::text("It says: remember the milk."));
    h.channel.dm(1, "what do my notes say?").await;
    h.wait_for("the second answer", |l| {
        l.has_text("It says: remember the milk.")
    })
    .await;
    h.idle().await;
    let metrics = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
    assert!(metrics.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/openmetrics-text; version=1.0.0"));
    let text = metrics.text().await.unwrap();
    for line in [
        "switchboard_inbound_messages_total{platform=\"console\"} 2",
        "switchboard_turns_total{platform=\"console\",stop=\"answered\"} 2",
        "switchboard_turn_duration_seconds_count{platform=\"console\",stop=\"answered\"} 2",
        "switchboard_model_first_token_seconds_count{model=\"fake-model\"} 3",
        "switchboard_model_call_duration_seconds_count{model=\"fake-model\"} 3",
        "switchboard_tool_duration_seconds_count{tool=\"read_file\",outcome=\"ok\"} 1",
        "switchboard_delivery_latency_seconds_count{platform=\"console\"} 2",
        "switchboard_adapter_connected{platform=\"console\"} 1",
        "switchboard_in_flight 0",
        "switchboard_approvals_pending 0",
        "switchboard_tasks_running 0",
        "switchboard_inbox_queued 0",
        "switchboard_database_up 1",
        "switchboard_inbound_unreadable_total{platform=\"console\"} 0",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
    }
    assert!(text.ends_with("# EOF\n"), "{text}");

    // The database goes away: health says so, metrics still answer.
    h.running.store.close().await;
    let health = http
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 503);
    let text = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("switchboard_database_up 0"), "{text}");
    h.stop().await;
}

#[tokio::test]
async fn a_bad_health_address_is_a_clear_config_error() {
    let err = switchboard::Config::from_lookup(|k| match k {
        "LLM_BASE_URL" => Some("http://127.0.0.1:1/v1".into()),
        "LLM_MODEL" => Some("m".into()),
        "HEALTH_LISTEN" => Some("localhost".into()),
        _ => None,
    })
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("HEALTH_LISTEN"), "{err}");
}

#[tokio::test]
async fn a_database_file_deleted_under_the_gateway_turns_health_red() {
    let h = Harness::with(&[("HEALTH_LISTEN", "127.0.0.1:0")]).await;
    let addr = h.running.health_addr.expect("the endpoint is bound");
    h.llm.push(Reply::text("Remember this."));
    h.channel.dm(1, "hello").await;
    h.wait_for("the answer", |l| l.has_text("Remember this."))
        .await;
    h.idle().await;
    let health = || async {
        let r = reqwest::get(format!("http://{addr}/healthz"))
            .await
            .unwrap();
        let status = r.status();
        (status, r.json::<serde_json::Value>().await.unwrap())
    };
    assert_eq!(health().await.0, 200);

    // `rm switchboard.db*` while the gateway runs.
    let data = h.data_dir();
    for name in ["switchboard.db", "switchboard.db-wal", "switchboard.db-shm"] {
        let _ = std::fs::remove_file(data.join(name));
    }
    let (status, body) = health().await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["database"], "deleted", "{body}");

    // The live data was copied next to the deleted file: the conversation
    // survives a restart on the copy.
    let copies: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("switchboard.db.rescued-")
        })
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    let url = format!("sqlite://{}?mode=ro", copies[0].display());
    let mut copy = <sqlx::SqliteConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    let saved: Vec<String> = sqlx::query_scalar("SELECT payload FROM messages ORDER BY id")
        .fetch_all(&mut copy)
        .await
        .unwrap();
    assert!(
        saved.iter().any(|m| m.contains("hello"))
            && saved.iter().any(|m| m.contains("Remember this.")),
        "{saved:?}"
    );
    // Still red on the next check, and the copy is made once.
    assert_eq!(health().await.0, 503);
    let metrics = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.lines().any(|l| l == "switchboard_database_up 0"),
        "{metrics}"
    );
    h.stop().await;
}
