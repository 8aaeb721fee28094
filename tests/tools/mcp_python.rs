//! The MCP client against a server written with the official Python SDK
//! (`tests/mcp/python_server.py`, `mcp` from PyPI): `hints` trusts its
//! read-only annotation only, structured output and exceptions come through,
//! image results are attached for a model that sees them (or refused), a
//! nested model's schema (`$defs`/`$ref`) reaches the strict fake Gemini
//! whole, and through the gateway a read-only tool runs without a card
//! while a destructive one asks (denied: never called), and a sub-agent role
//! gets the read-only tool but never the one that asks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::mcp::{call_log, log_lines, mcp, servers_file, start, tool};
use crate::support;

use serde_json::{json, Value};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use support::e2e::{tool_result, Harness};
use support::fake_gemini::FakeGemini;
use support::fake_llm::Reply;
use switchboard::agent::Images;
use switchboard::llm::{
    ChatRequest, EndpointConfig, GeminiProvider, Message, ModelInfo, ToolDefinition,
};
use switchboard::mcp::Status;
use switchboard::tools::{ImageSink, ToolContext};

/// The server's entry (the SDK installed on first use).
fn python_entry() -> Value {
    json!({
        "command": mcp().python(),
        "args": [mcp().python_script("python_server.py")],
        "env": {"CALL_LOG": "calls.log"},
        "approval": "hints"
    })
}

#[tokio::test]
async fn a_python_sdk_server_annotations_structured_output_errors_and_images() {
    let dir = tempfile::tempdir().unwrap();
    let (clients, shutdown) = start(dir.path(), json!({"py": python_entry()})).await;
    let state = clients.servers()[0].state();
    assert_eq!(state.status, Status::Up, "{:?}", state.last_error);
    let ctx = ToolContext::default();

    let lookup = tool(&clients, "mcp_py_lookup");
    assert!(!lookup.spec().requires_approval, "read-only under hints");
    assert!(
        tool(&clients, "mcp_py_delete").spec().requires_approval,
        "destructive"
    );
    assert!(
        tool(&clients, "mcp_py_add").spec().requires_approval,
        "no annotation"
    );
    assert_eq!(
        lookup.call(json!({"key": "k"}), &ctx).await.unwrap(),
        "k = 42",
        "a plain result wrapped as structured content is shown once"
    );

    let sum = tool(&clients, "mcp_py_add")
        .call(json!({"a": 2, "b": 3}), &ctx)
        .await
        .unwrap();
    let sum: Value = serde_json::from_str(&sum).unwrap();
    assert_eq!(sum, json!({"sum": 5}));

    // Images: a real GIF is filed and attached byte for byte; bytes that
    // only claim to be a PNG are refused with a note.
    let media = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", media.path().join("t.db").display());
    let store = switchboard::store::Store::open(&db).await.unwrap();
    let seeing = ToolContext {
        images: ImageSink::new(
            Images {
                dir: media.path().to_path_buf(),
                store: store.clone(),
                keep_turns: 3,
                enabled: Arc::new(AtomicBool::new(true)),
            },
            "s1".parse().unwrap(),
        ),
        ..ToolContext::default()
    };
    let pixel = tool(&clients, "mcp_py_pixel");
    let note = pixel.call(json!({}), &seeing).await.unwrap();
    assert_eq!(note, "[image result 1: image/gif, 43 bytes — attached]");
    let attached = seeing.images.take();
    assert_eq!(attached.len(), 1);
    assert_eq!(
        (
            attached[0].mime.as_str(),
            attached[0].width,
            attached[0].height
        ),
        ("image/gif", 1, 1)
    );
    let stored = std::fs::read(switchboard::media::files::path_of(
        media.path(),
        &attached[0].hash,
    ))
    .unwrap();
    assert!(stored.starts_with(b"GIF89a") && stored.len() == 43);
    assert!(
        store.media().recorded(&attached[0].hash).await.unwrap(),
        "recorded, so the retention sweep collects it"
    );
    let fake = pixel.call(json!({"fake": true}), &seeing).await.unwrap();
    assert!(
        fake.starts_with("[image result 1: image/png, 16 bytes — not shown: its contents are text"),
        "{fake}"
    );
    assert!(seeing.images.take().is_empty());
    // A model without vision: the note only.
    let blind = pixel.call(json!({}), &ctx).await.unwrap();
    assert_eq!(blind, "[image result 1: image/gif, 43 bytes]");

    let err = tool(&clients, "mcp_py_boom")
        .call(json!({}), &ctx)
        .await
        .unwrap_err();
    assert!(
        err.for_model().contains("failed on purpose"),
        "{}",
        err.for_model()
    );
    shutdown.cancel();
    clients.stopped().await;
}

#[tokio::test]
async fn through_the_gateway_a_read_only_tool_runs_without_a_card_and_a_destructive_one_asks() {
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(dir.path(), json!({"py": python_entry()}));
    let file = file.display().to_string();
    let path = std::env::var("PATH").unwrap();
    let h = Harness::with(&[("MCP_SERVERS_FILE", file.as_str()), ("PATH", path.as_str())]).await;
    let log = call_log(&h.data_dir(), "py");

    h.llm.push(Reply::tool_calls([(
        "call_l",
        "mcp_py_lookup",
        json!({"key": "colour"}),
    )]));
    h.llm.push(Reply::text("It is 42."));
    h.channel.dm(1, "look up colour").await;
    h.wait_for("the answer", |l| l.has_text("It is 42.")).await;
    assert!(
        h.channel.log().card().is_none(),
        "no card for a read-only tool"
    );
    assert_eq!(
        tool_result(&h.requests(2).await[1], "call_l"),
        "colour = 42"
    );

    h.llm.push(Reply::tool_calls([(
        "call_d",
        "mcp_py_delete",
        json!({"key": "colour"}),
    )]));
    h.llm.push(Reply::text("Kept it."));
    h.channel.dm(1, "delete colour").await;
    let card = h.channel.card().await;
    assert!(
        card.text.contains("py") && card.text.contains("delete") && card.text.contains("colour"),
        "{}",
        card.text
    );
    h.channel.press(1, &card.action('n')).await;
    h.wait_for("the answer", |l| l.has_text("Kept it.")).await;
    let calls: Vec<String> = log_lines(&log)
        .into_iter()
        .filter(|l| l.starts_with("call "))
        .collect();
    assert_eq!(
        calls,
        ["call lookup colour"],
        "the denied call never reached the server"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_nested_models_schema_reaches_gemini_inlined_and_the_call_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (clients, shutdown) = start(dir.path(), json!({"py": python_entry()})).await;
    let ship = tool(&clients, "mcp_py_ship");
    let schema = ship.spec().parameters.clone();
    assert_eq!(
        schema["properties"]["order"]["$ref"], "#/$defs/Order",
        "the SDK writes nested models as references: {schema:#}"
    );

    // The strict fake refuses any keyword outside Gemini's subset: the
    // declaration goes through whole, the references inlined.
    let gemini = FakeGemini::start().await;
    gemini.push(support::fake_gemini::Reply::text("Declared."));
    let provider = GeminiProvider::new(EndpointConfig::new(
        gemini.base_url(),
        ModelInfo::new("gemini-2.5-flash", None),
    ))
    .unwrap();
    let request = ChatRequest {
        system: "You are terse.".into(),
        messages: vec![Message::user("ship it")],
        tools: vec![ToolDefinition {
            name: ship.spec().name.clone(),
            description: ship.description(),
            parameters: schema,
        }],
    };
    let (chunks, error) = support::provider::run(&provider, request).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(support::provider::text(&chunks), "Declared.");
    let declared = &gemini.requests()[0]["tools"][0]["functionDeclarations"][0]["parameters"];
    let order = &declared["properties"]["order"];
    assert_eq!(order["required"], json!(["to", "items"]), "{declared:#}");
    assert_eq!(
        order["properties"]["to"]["properties"]["city"]["type"],
        "STRING"
    );
    assert_eq!(order["properties"]["note"]["nullable"], true);
    assert!(!declared.to_string().contains("$ref"), "{declared:#}");

    let out = ship
        .call(
            json!({"order": {"to": {"city": "Oslo"}, "items": ["a", "b"]}}),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(out, "shipping 2 items to Oslo");
    shutdown.cancel();
    clients.stopped().await;
}

#[tokio::test]
async fn a_sub_agent_role_gets_the_read_only_mcp_tool_and_never_the_one_that_asks() {
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(dir.path(), json!({"py": python_entry()}));
    let file = file.display().to_string();
    // An own role that names both MCP tools but does not act.
    let roles = dir.path().join("roles.json");
    std::fs::write(
        &roles,
        json!({"roles": [{"name": "keeper", "description": "Looks keys up.",
            "system_prompt": "You look keys up.",
            "tools": ["mcp_py_lookup", "mcp_py_delete"]}]})
        .to_string(),
    )
    .unwrap();
    let roles = roles.display().to_string();
    let path = std::env::var("PATH").unwrap();
    let h = Harness::with(&[
        ("MCP_SERVERS_FILE", file.as_str()),
        ("SUBAGENTS_FILE", roles.as_str()),
        ("SUBAGENTS", "research,keeper"),
        ("PATH", path.as_str()),
    ])
    .await;
    let log = call_log(&h.data_dir(), "py");

    h.llm.push(Reply::tool_calls([(
        "call_k",
        "delegate_to_keeper",
        json!({"task": "look up colour"}),
    )]));
    h.llm.push(Reply::tool_calls([(
        "call_l",
        "mcp_py_lookup",
        json!({"key": "colour"}),
    )]));
    h.llm.push(Reply::text("colour is 42"));
    h.llm.push(Reply::text("The keeper says colour is 42."));
    h.channel.dm(1, "what is colour?").await;
    h.wait_for("the answer", |l| {
        l.has_text("The keeper says colour is 42.")
    })
    .await;
    let requests = h.requests(4).await;
    let names = |request: &Value| -> Vec<String> {
        request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    let keeper = names(&requests[1]);
    assert_eq!(keeper, ["mcp_py_lookup"], "the keeper's tools");
    let research = names(&requests[0]);
    assert!(research.contains(&"delegate_to_research".to_owned()));
    assert_eq!(tool_result(&requests[2], "call_l"), "colour = 42");
    assert!(
        h.channel.log().card().is_none(),
        "a read-only tool in a role asked for approval"
    );
    let calls: Vec<String> = log_lines(&log)
        .into_iter()
        .filter(|l| l.starts_with("call "))
        .collect();
    assert_eq!(calls, ["call lookup colour"]);
    h.stop().await;
}
