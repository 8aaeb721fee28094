//! Operator-declared HTTP API tools through the real core: the model fills the
//! parameters, the request reaches a fake API on 127.0.0.1 with the operator's
//! credential, the response comes back to the model without it, writes need an
//! approval, and private targets need the operator's say-so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use support::e2e::{tool_result, Harness};
use support::fake_llm::Reply;

const KEY: &str = "wk-live-7f3a9c-do-not-leak";

/// What the fake API received: (method and path, query, key header, body).
type Seen = Arc<Mutex<Vec<(String, HashMap<String, String>, Option<String>, Value)>>>;

async fn fake_api() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route(
            "/v1/weather/{city}",
            get(
                |State(seen): State<Seen>,
                 Path(city): Path<String>,
                 Query(q): Query<HashMap<String, String>>,
                 headers: HeaderMap| async move {
                    let key = headers
                        .get("x-api-key")
                        .map(|v| v.to_str().unwrap().to_owned());
                    seen.lock()
                        .unwrap()
                        .push((format!("GET {city}"), q.clone(), key.clone(), Value::Null));
                    if key.as_deref() != Some(KEY) {
                        return (axum::http::StatusCode::UNAUTHORIZED, Json(json!({"error": "bad key"})));
                    }
                    // Some APIs echo what they were sent, credential included.
                    (
                        axum::http::StatusCode::OK,
                        Json(json!({"city": city, "temp_c": 21, "units": q.get("units"), "echo": KEY})),
                    )
                },
            ),
        )
        .route(
            "/v1/notes",
            post(
                |State(seen): State<Seen>, headers: HeaderMap, Json(body): Json<Value>| async move {
                    let key = headers
                        .get("x-api-key")
                        .map(|v| v.to_str().unwrap().to_owned());
                    seen.lock()
                        .unwrap()
                        .push(("POST notes".into(), HashMap::new(), key, body));
                    Json(json!({"id": 7}))
                },
            ),
        )
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

fn tools_file(dir: &std::path::Path, base: &str, allow_private: bool) -> String {
    let path = dir.join("tools.json");
    let auth = json!({"env": "WEATHER_KEY", "header": "X-Api-Key"});
    let file = json!({"tools": [
        {
            "name": "weather",
            "description": "Current weather for a city",
            "url": format!("{base}/v1/weather/{{city}}"),
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string"}, "units": {"type": "string"}
            }, "required": ["city"]},
            "auth": auth,
            "allow_private": allow_private
        },
        {
            "name": "add_note",
            "description": "Store a note",
            "method": "POST",
            "url": format!("{base}/v1/notes"),
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "auth": auth,
            "allow_private": allow_private
        },
        {"name": "broken", "description": "d", "url": "http://{host}/"}
    ]});
    std::fs::write(&path, file.to_string()).unwrap();
    path.display().to_string()
}

/// The gateway with the tools file and the key in its environment.
async fn api_harness(dir: &std::path::Path, base: &str, allow_private: bool) -> Harness {
    let file = tools_file(dir, base, allow_private);
    Harness::with(&[("HTTP_TOOLS_FILE", file.as_str()), ("WEATHER_KEY", KEY)]).await
}

#[tokio::test]
async fn a_declared_api_is_called_with_the_operators_key_which_never_reaches_the_model() {
    let (base, seen) = fake_api().await;
    let dir = tempfile::tempdir().unwrap();
    let h = api_harness(dir.path(), &base, true).await;
    h.llm.push(Reply::tool_calls([(
        "call_w",
        "weather",
        json!({"city": "São Paulo/../admin", "units": "metric"}),
    )]));
    h.llm.push(Reply::text("It is 21 °C."));
    h.channel.dm(1, "weather in São Paulo?").await;
    h.wait_for("the answer", |l| l.has_text("It is 21 °C."))
        .await;

    let calls = seen.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    let (what, query, key, _) = &calls[0];
    assert_eq!(
        what, "GET São Paulo/../admin",
        "the value stayed one path segment"
    );
    assert_eq!(query.get("units").map(String::as_str), Some("metric"));
    assert_eq!(key.as_deref(), Some(KEY));

    let requests = h.requests(2).await;
    let result = tool_result(&requests[1], "call_w");
    assert!(result.starts_with("HTTP 200 OK"), "{result}");
    assert!(result.contains("\"temp_c\":21"), "{result}");
    let names: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"weather") && names.contains(&"add_note"));
    assert!(
        !names.contains(&"broken"),
        "an invalid declaration is skipped"
    );
    for r in &requests {
        assert!(
            !r.to_string().contains(KEY),
            "the key reached the model: {r}"
        );
    }

    // `..` would walk the API's path tree: refused before anything is sent.
    h.llm.push(Reply::tool_calls([(
        "call_up",
        "weather",
        json!({"city": ".."}),
    )]));
    h.llm.push(Reply::text("Refused."));
    h.channel.dm(1, "weather in ..?").await;
    h.wait_for("the refusal", |l| l.has_text("Refused.")).await;
    let result = tool_result(&h.requests(4).await[3], "call_up");
    assert!(result.contains("`city` cannot be `..`"), "{result}");
    assert_eq!(seen.lock().unwrap().len(), 1);
    h.stop().await;
}

#[tokio::test]
async fn a_write_needs_an_approval_and_a_private_target_the_operators_consent() {
    let (base, seen) = fake_api().await;
    let dir = tempfile::tempdir().unwrap();
    let h = api_harness(dir.path(), &base, true).await;
    h.llm.push(Reply::tool_calls([(
        "call_n",
        "add_note",
        json!({"text": "buy milk"}),
    )]));
    h.llm.push(Reply::text("Saved."));
    h.channel.dm(1, "note: buy milk").await;
    let card = h.channel.card().await;
    assert!(
        seen.lock().unwrap().is_empty(),
        "nothing sent before the decision"
    );
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Saved.")).await;
    let calls = seen.lock().unwrap().clone();
    assert_eq!(calls[0].0, "POST notes");
    assert_eq!(calls[0].3, json!({"text": "buy milk"}));
    h.stop().await;

    // Without allow_private, 127.0.0.1 is refused like web_fetch refuses it.
    let h = api_harness(dir.path(), &base, false).await;
    h.llm.push(Reply::tool_calls([(
        "call_w",
        "weather",
        json!({"city": "Oslo"}),
    )]));
    h.llm.push(Reply::text("Could not reach it."));
    h.channel.dm(1, "weather in Oslo?").await;
    h.wait_for("the answer", |l| l.has_text("Could not reach it."))
        .await;
    let result = tool_result(&h.requests(2).await[1], "call_w");
    assert!(
        result.contains("not allowed") && result.contains("loopback"),
        "{result}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "no request went out");
    h.stop().await;
}

#[tokio::test]
async fn the_builtin_tool_names_are_the_reserved_ones() {
    // Everyone may change tools and a search provider is set: every
    // built-in tool is offered.
    let h = Harness::with(&[
        ("TOOL_BUILDERS", "all"),
        ("SEARCH_PROVIDER", "searxng"),
        ("SEARCH_URL", "http://127.0.0.1:9"),
    ])
    .await;
    h.llm.push(Reply::text("hi"));
    h.channel.dm(1, "hello").await;
    h.wait_for("the answer", |l| l.has_text("hi")).await;
    let request = &h.requests(1).await[0];
    let mut names: Vec<String> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    let mut reserved: Vec<String> = switchboard::tools::BUILTIN_TOOLS
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    reserved.sort();
    assert_eq!(
        names, reserved,
        "BUILTIN_TOOLS must list every built-in tool"
    );
    h.stop().await;
}
