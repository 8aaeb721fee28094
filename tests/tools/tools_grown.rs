//! Tools the agent grows from the chat, through the real core: an HTTP API
//! tool added on a card (allow once or deny only), called with a
//! `TOOL_SECRET_*` key that never reaches the model, exported, removed and
//! imported back; a script in the workspace made a tool after static checks,
//! bound to its hash, refused once changed and re-approved; and only the
//! users `TOOL_BUILDERS` names get any of it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use support::e2e::{tool_result, Harness};
use support::fake_llm::{last_user_text, Reply};

const KEY: &str = "tk-live-41c0-never-in-the-chat";

/// A weather API that wants `KEY` in `X-Api-Key`; records the keys it saw.
async fn fake_api() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let app = Router::new()
        .route(
            "/v1/weather/{city}",
            get(
                |State(seen): State<Arc<Mutex<Vec<Option<String>>>>>,
                 Path(city): Path<String>,
                 headers: HeaderMap| async move {
                    let key = headers
                        .get("x-api-key")
                        .map(|v| v.to_str().unwrap().to_owned());
                    seen.lock().unwrap().push(key.clone());
                    if key.as_deref() != Some(KEY) {
                        return (axum::http::StatusCode::UNAUTHORIZED, Json(json!({})));
                    }
                    (
                        axum::http::StatusCode::OK,
                        Json(json!({"city": city, "temp_c": 21, "echo": KEY})),
                    )
                },
            ),
        )
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

fn weather_tool(base: &str, env: &str) -> Value {
    json!({
        "name": "weather",
        "description": "Current weather for a city",
        "url": format!("{base}/v1/weather/{{city}}"),
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "auth": {"env": env, "header": "X-Api-Key"}
    })
}

async fn builders(extra: &[(&str, &str)]) -> Harness {
    let mut vars = vec![
        ("TOOL_BUILDERS", "all"),
        ("WEB_FETCH_ALLOW", "127.0.0.1"),
        ("TOOL_SECRET_WEATHER", KEY),
    ];
    vars.extend_from_slice(extra);
    Harness::with(&vars).await
}

/// Sends `text`, expects one once-only card, allows it, waits for `answer`.
async fn approve_once(h: &Harness, text: &str, answer: &str) -> String {
    let before = h.channel.log().cards_ever();
    h.channel.dm(1, text).await;
    h.wait_for("a card", |l| l.cards_ever() > before).await;
    let card = h.channel.log().card().unwrap();
    assert_eq!(
        card.actions.len(),
        2,
        "a change to the tools is allowed once or denied, never always or edited: {:?}",
        card.actions
    );
    h.channel.press(1, &card.action('y')).await;
    h.wait_for(answer, |l| l.has_text(answer)).await;
    card.text
}

async fn tools_line(h: &Harness) -> String {
    let n = h.channel.log().sent().len();
    h.channel.dm(1, "/tools").await;
    let log = h.wait_for("the tool list", |l| l.sent().len() > n).await;
    log.texts().last().cloned().unwrap()
}

#[tokio::test]
async fn an_http_tool_is_added_on_a_card_used_exported_removed_and_imported() {
    let (base, seen) = fake_api().await;
    let h = builders(&[]).await;
    let add = json!({"action": "add", "tool": weather_tool(&base, "TOOL_SECRET_WEATHER")});
    h.llm.push(Reply::tool_calls([("c_add", "http_tool", add)]));
    h.llm.push(Reply::text("Added the weather tool."));
    let card = approve_once(
        &h,
        "/tools add the weather API, key in TOOL_SECRET_WEATHER",
        "Added the weather tool.",
    )
    .await;
    assert!(
        card.contains("Add HTTP tool `weather`: GET") && card.contains("X-Api-Key header"),
        "{card}"
    );
    let first = &h.requests(1).await[0];
    let asked = last_user_text(first).unwrap();
    assert!(asked.starts_with("[/tools add]"), "{asked}");
    assert!(
        asked.contains("«the weather API, key in TOOL_SECRET_WEATHER»"),
        "{asked}"
    );
    assert!(tools_line(&h)
        .await
        .contains("Added from the chat: weather"));

    // Used like any tool: the key goes to the API, never to the model.
    h.llm.push(Reply::tool_calls([(
        "c_w",
        "weather",
        json!({"params": {"city": "Oslo"}}),
    )]));
    h.llm.push(Reply::text("It is 21 °C in Oslo."));
    h.channel.dm(1, "weather in Oslo?").await;
    h.wait_for("the weather", |l| l.has_text("It is 21 °C in Oslo."))
        .await;
    assert_eq!(seen.lock().unwrap().as_slice(), [Some(KEY.to_owned())]);
    let requests = h.requests(4).await;
    let result = tool_result(&requests[3], "c_w");
    assert!(
        result.contains("\"temp_c\":21") && !result.contains(KEY),
        "{result}"
    );

    // Exported in HTTP_TOOLS_FILE's format, with the variable's name only.
    let n = h.channel.log().sent().len();
    h.channel.dm(1, "/tools export").await;
    let log = h.wait_for("the export", |l| l.sent().len() > n).await;
    let export = log.texts().last().cloned().unwrap();
    assert!(
        export.contains("TOOL_SECRET_WEATHER") && !export.contains(KEY),
        "{export}"
    );
    let json_text = export
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .unwrap();
    let exported: Value = serde_json::from_str(json_text).unwrap();
    assert_eq!(exported["tools"][0]["name"], "weather");

    h.llm.push(Reply::tool_calls([(
        "c_rm",
        "http_tool",
        json!({"action": "remove", "name": "weather"}),
    )]));
    h.llm.push(Reply::text("Removed."));
    let card = approve_once(&h, "/tools remove weather", "Removed.").await;
    assert!(card.contains("Remove the tool `weather`"), "{card}");
    assert!(!tools_line(&h).await.contains("weather"));

    h.llm.push(Reply::tool_calls([(
        "c_imp",
        "http_tool",
        json!({"action": "import", "tools": exported["tools"]}),
    )]));
    h.llm.push(Reply::text("Imported."));
    approve_once(&h, &format!("/tools import {json_text}"), "Imported.").await;
    assert!(tools_line(&h)
        .await
        .contains("Added from the chat: weather"));

    // Every change is in the audit log, with who made it.
    let events = h.running.store.audit().recent(50).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "tools.grown.saved").count(),
        2
    );
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == "tools.grown.removed")
            .count(),
        1
    );
    assert!(events
        .iter()
        .filter(|e| e.kind.starts_with("tools.grown"))
        .all(|e| e.detail["by"] == "console:1"));
    h.stop().await;
}

#[tokio::test]
async fn a_tool_from_the_chat_cannot_name_the_gateways_secrets_or_reach_private_hosts() {
    let (base, _seen) = fake_api().await;
    let h = builders(&[("LLM_API_KEY", "sk-gateway-own-key")]).await;
    let mut private = weather_tool(&base, "TOOL_SECRET_WEATHER");
    private["allow_private"] = json!(true);
    h.llm.push(Reply::tool_calls([
        (
            "c_key",
            "http_tool",
            json!({"action": "add", "tool": weather_tool(&base, "LLM_API_KEY")}),
        ),
        (
            "c_priv",
            "http_tool",
            json!({"action": "add", "tool": private}),
        ),
    ]));
    h.llm.push(Reply::text("Neither can be added."));
    h.channel.dm(1, "add a weather tool").await;
    h.wait_for("the answer", |l| l.has_text("Neither can be added."))
        .await;
    let requests = h.requests(2).await;
    let key = tool_result(&requests[1], "c_key");
    assert!(
        key.contains("only come from a variable named TOOL_SECRET_"),
        "{key}"
    );
    let private = tool_result(&requests[1], "c_priv");
    assert!(private.contains("allow_private"), "{private}");
    assert_eq!(h.channel.log().cards_ever(), 0, "refused before any card");
    h.stop().await;
}

fn write_script(path: &std::path::Path, body: &str) -> String {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let digest = Sha256::digest(body.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_generated_script_tool_is_bound_to_its_hash_and_reapproved_when_it_changes() {
    let h = builders(&[]).await;
    let script = h.workspace().join("tools/count.sh");
    let v1 = write_script(
        &script,
        "#!/bin/sh\nread -r input\necho \"v1 counted $input\"\n",
    );
    let manifest = json!({
        "action": "add", "name": "count_words", "description": "Counts words",
        "command": "tools/count.sh",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    });
    let mut with_hash = manifest.clone();
    with_hash["sha256"] = json!(v1);
    // Without the hash the model is told it; with it, the card shows it.
    h.llm.push(Reply::tool_calls([(
        "c_1",
        "script_tool",
        manifest.clone(),
    )]));
    h.llm
        .push(Reply::tool_calls([("c_2", "script_tool", with_hash)]));
    h.llm.push(Reply::text("The tool is ready."));
    let card = approve_once(&h, "make count.sh a tool", "The tool is ready.").await;
    assert!(
        card.contains("Add the script tool `count_words`")
            && card.contains(&format!("tools/count.sh sha256 {v1}"))
            && card.contains("echo \"v1 counted"),
        "the card shows the manifest, the hash and the script: {card}"
    );
    let hint = tool_result(&h.requests(2).await[1], "c_1");
    assert!(hint.contains(&format!("now has sha256 {v1}")), "{hint}");

    // Used like an operator's script tool: a card per call.
    let call = |id: &str| Reply::tool_calls([(id, "count_words", json!({"text": "a b"}))]);
    h.llm.push(call("c_run1"));
    h.llm.push(Reply::text("Ran v1."));
    h.channel.dm(1, "count a b").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the run", |l| l.has_text("Ran v1.")).await;
    let result = tool_result(&h.requests(5).await[4], "c_run1");
    assert!(result.contains("v1 counted {\"text\":\"a b\"}"), "{result}");

    // Changed on disk: refused before any card until approved again.
    let v2 = write_script(
        &script,
        "#!/bin/sh\nread -r input\necho \"v2 counted $input\"\n",
    );
    let cards = h.channel.log().cards_ever();
    h.llm.push(call("c_run2"));
    h.llm.push(Reply::text("It changed."));
    h.channel.dm(1, "count a b again").await;
    h.wait_for("the refusal", |l| l.has_text("It changed."))
        .await;
    let result = tool_result(&h.requests(7).await[6], "c_run2");
    assert!(
        result.contains("changed since it was approved")
            && result.contains(&v1[..12])
            && result.contains(&v2[..12]),
        "{result}"
    );
    assert_eq!(h.channel.log().cards_ever(), cards);

    let mut update = manifest.clone();
    update["action"] = json!("update");
    update["sha256"] = json!(v2);
    h.llm
        .push(Reply::tool_calls([("c_up", "script_tool", update)]));
    h.llm.push(Reply::text("Re-approved."));
    let card = approve_once(&h, "approve the new version", "Re-approved.").await;
    assert!(
        card.contains("Approve a new version of the script tool"),
        "{card}"
    );
    h.llm.push(call("c_run3"));
    h.llm.push(Reply::text("Ran v2."));
    h.channel.dm(1, "count once more").await;
    h.wait_for("a card", |l| {
        l.card().is_some_and(|c| c.text.contains("count_words"))
    })
    .await;
    let card = h.channel.log().card().unwrap();
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the run", |l| l.has_text("Ran v2.")).await;
    let result = tool_result(&h.requests(11).await[10], "c_run3");
    assert!(result.contains("v2 counted"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn scripts_that_run_their_input_or_live_outside_the_workspace_are_refused() {
    let h = builders(&[]).await;
    let wrapper = write_script(
        &h.workspace().join("run.sh"),
        "#!/bin/sh\neval \"$(cat)\"\n",
    );
    let outside = tempfile::tempdir().unwrap();
    let elsewhere = outside.path().join("x.sh");
    write_script(&elsewhere, "#!/bin/sh\necho hi\n");
    let add = |id: &str, command: &str, sha: &str| {
        (
            id.to_owned(),
            "script_tool".to_owned(),
            json!({"action": "add", "name": "runner", "description": "d", "command": command, "sha256": sha}),
        )
    };
    h.llm.push(Reply::tool_calls([
        add("c_eval", "run.sh", &wrapper),
        add("c_out", &elsewhere.display().to_string(), ""),
    ]));
    h.llm.push(Reply::text("Refused."));
    h.channel.dm(1, "make those tools").await;
    h.wait_for("the answer", |l| l.has_text("Refused.")).await;
    let requests = h.requests(2).await;
    let eval = tool_result(&requests[1], "c_eval");
    assert!(eval.contains("runs text as code"), "{eval}");
    let out = tool_result(&requests[1], "c_out");
    assert!(out.contains("outside your workspace folder"), "{out}");
    assert_eq!(h.channel.log().cards_ever(), 0);
    h.stop().await;
}

#[tokio::test]
async fn only_the_users_tool_builders_names_may_change_tools() {
    // Default `approvers`; the test user is not one.
    let h = Harness::start().await;
    h.channel.dm(1, "/tools add a weather API").await;
    h.wait_for("the refusal", |l| l.any_contains("Only approvers may add"))
        .await;
    h.llm.push(Reply::text("Hello."));
    h.channel.dm(1, "hi").await;
    h.wait_for("the answer", |l| l.has_text("Hello.")).await;
    let requests = h.requests(1).await;
    assert_eq!(
        requests.len(),
        1,
        "the refused command never reached the model"
    );
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"read_file"));
    assert!(!offered.contains(&"http_tool") && !offered.contains(&"script_tool"));
    h.stop().await;
}

#[tokio::test]
async fn a_tool_added_through_one_process_is_offered_by_another_at_once() {
    let (base, seen) = fake_api().await;
    let dir = tempfile::tempdir().unwrap();
    let url = match std::env::var("TEST_DATABASE_URL") {
        Ok(admin) => support::postgres::fresh_postgres(&admin).await,
        Err(_) => format!("sqlite://{}", dir.path().join("shared.db").display()),
    };
    let a = builders(&[("DATABASE_URL", url.as_str())]).await;
    let b = builders(&[("DATABASE_URL", url.as_str())]).await;
    a.llm.push(Reply::tool_calls([(
        "c_add",
        "http_tool",
        json!({"action": "add", "tool": weather_tool(&base, "TOOL_SECRET_WEATHER")}),
    )]));
    a.llm.push(Reply::text("Added."));
    approve_once(&a, "/tools add weather", "Added.").await;

    assert!(tools_line(&b)
        .await
        .contains("Added from the chat: weather"));
    b.llm.push(Reply::tool_calls([(
        "c_w",
        "weather",
        json!({"city": "Lima"}),
    )]));
    b.llm.push(Reply::text("Warm in Lima."));
    b.channel.dm(2, "weather in Lima?").await;
    b.wait_for("B's answer", |l| l.has_text("Warm in Lima."))
        .await;
    assert_eq!(seen.lock().unwrap().len(), 1, "B called the API");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn scripts_failing_the_dependency_structure_or_complexity_prechecks_are_refused() {
    let h = builders(&[]).await;
    let deep: String = (0..8)
        .map(|d| format!("{}if True:\n", "    ".repeat(d)))
        .collect();
    let scripts = [
        (
            "c_dep",
            "fetch.py",
            "#!/usr/bin/env python3\nimport json, sys\nimport requests\nprint(requests.get(json.load(sys.stdin)['url']).text)\n".to_owned(),
        ),
        (
            "c_shape",
            "shape.py",
            "#!/usr/bin/env python3\nimport sys\nprint(sys.argv[1:])\n".to_owned(),
        ),
        (
            "c_deep",
            "deep.py",
            format!("#!/usr/bin/env python3\nimport json, sys\nargs = json.load(sys.stdin)\n{deep}{}print(args)\n", "    ".repeat(8)),
        ),
    ];
    let calls: Vec<(String, String, Value)> = scripts
        .iter()
        .map(|(id, file, body)| {
            let sha = write_script(&h.workspace().join(file), body);
            let add = json!({
                "action": "add", "name": "t", "description": "d", "command": file, "sha256": sha,
                "parameters": {"type": "object", "properties": {"url": {"type": "string"}}}
            });
            ((*id).to_owned(), "script_tool".to_owned(), add)
        })
        .collect();
    h.llm.push(Reply::tool_calls(calls));
    h.llm.push(Reply::text("All refused."));
    h.channel.dm(1, "make these tools").await;
    h.wait_for("the answer", |l| l.has_text("All refused."))
        .await;
    let requests = h.requests(2).await;
    let dep = tool_result(&requests[1], "c_dep");
    assert!(
        dep.contains("dependencies: line 3 loads `requests`, which is not allowed"),
        "{dep}"
    );
    let shape = tool_result(&requests[1], "c_shape");
    assert!(
        shape.contains("structure: it takes arguments but never reads its standard input"),
        "{shape}"
    );
    let deep = tool_result(&requests[1], "c_deep");
    assert!(deep.contains("complexity: blocks nest 8 deep"), "{deep}");
    assert_eq!(h.channel.log().cards_ever(), 0, "refused before any card");
    h.stop().await;
}

#[tokio::test]
async fn a_script_tool_from_one_users_folder_runs_for_another_in_theirs_seeing_only_the_script() {
    let h = builders(&[]).await;
    let script = h.workspace().join("tools/peek.sh");
    h.write("tools/secret.txt", "TOPSECRET of user 1");
    let hash = write_script(
        &script,
        "#!/bin/sh\nread -r input\npwd\ncat \"$(dirname \"$0\")/secret.txt\" 2>&1\necho end\n",
    );
    let add = json!({
        "action": "add", "name": "peek", "description": "Says where it runs",
        "command": "tools/peek.sh", "sha256": hash,
        "parameters": {"type": "object", "properties": {}}
    });
    h.llm
        .push(Reply::tool_calls([("c_add", "script_tool", add)]));
    h.llm.push(Reply::text("Added."));
    let card = approve_once(&h, "make peek a tool", "Added.").await;
    assert!(
        card.contains("\"command\":\"users/console-1/tools/peek.sh\""),
        "stored relative to the whole workspace: {card}"
    );

    // User 2 runs it: in their own folder, with the script but not its folder.
    h.llm
        .push(Reply::tool_calls([("c_peek", "peek", json!({}))]));
    h.llm.push(Reply::text("Peeked."));
    let before = h.channel.log().cards_ever();
    h.channel.dm(2, "peek please").await;
    h.wait_for("a card", |l| l.cards_ever() > before).await;
    let card = h.channel.log().card().unwrap();
    h.channel.press(2, &card.action('y')).await;
    h.wait_for("the run", |l| l.has_text("Peeked.")).await;
    let requests = h.requests(4).await;
    let result = tool_result(&requests[3], "c_peek");
    assert!(
        result.contains(&format!("{}\n", h.folder(2).display())),
        "runs in user 2's folder: {result}"
    );
    assert!(result.contains("end"), "the script itself ran: {result}");
    assert!(!result.contains("TOPSECRET"), "{result}");
    h.stop().await;
}
