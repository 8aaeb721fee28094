//! Operator-declared script tools through the real core: a manifest names an
//! executable; each call needs an approval and runs it in the workspace with
//! the arguments as JSON on stdin and no secrets in its environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use support::e2e::{tool_result, Harness};
use support::fake_llm::Reply;

fn install(dir: &std::path::Path) {
    let script = dir.join("greet.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nread -r input\necho \"args=$* stdin=$input cwd=$(basename \"$PWD\") key=${LLM_API_KEY:-none}\"\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let manifest = json!({
        "name": "greet",
        "description": "Greets someone",
        "command": "greet.sh",
        "args": ["--loud"],
        "parameters": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]},
        "timeout_secs": 20
    });
    std::fs::write(dir.join("greet.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("broken.json"), "{").unwrap();
}

#[tokio::test]
async fn a_script_tool_runs_after_approval_with_json_on_stdin_and_no_secrets() {
    let scripts = tempfile::tempdir().unwrap();
    install(scripts.path());
    let dir = scripts.path().display().to_string();
    let h = Harness::with(&[
        ("SCRIPT_TOOLS_DIR", dir.as_str()),
        ("LLM_API_KEY", "sk-parent-secret-value"),
    ])
    .await;
    h.llm.push(Reply::tool_calls([(
        "call_g",
        "greet",
        json!({"who": "Ann \"the\" Admin"}),
    )]));
    h.llm.push(Reply::text("Greeted."));
    h.channel.dm(1, "greet Ann").await;
    let card = h.channel.card().await;
    assert!(
        card.text.contains("greet.sh --loud") && card.text.contains("stdin: {\"who\""),
        "the card shows what will run: {}",
        card.text
    );
    assert!(
        card.text.contains("sandbox: "),
        "the card says what confines it: {}",
        card.text
    );
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Greeted.")).await;

    let result = tool_result(&h.requests(2).await[1], "call_g");
    assert!(
        result.starts_with("exit code: 3 (the script failed)"),
        "{result}"
    );
    // It runs in the caller's own workspace folder.
    assert!(
        result.contains(r#"args=--loud stdin={"who":"Ann \"the\" Admin"} cwd=console-1 key=none"#),
        "{result}"
    );

    // A call that does not match the declaration is refused before any card.
    h.llm.push(Reply::tool_calls([(
        "call_bad",
        "greet",
        json!({"whom": "x"}),
    )]));
    h.llm.push(Reply::text("Fixed."));
    h.channel.dm(1, "again").await;
    h.wait_for("the second answer", |l| l.has_text("Fixed."))
        .await;
    let result = tool_result(&h.requests(4).await[3], "call_bad");
    assert!(result.contains("unknown parameter `whom`"), "{result}");
    assert_eq!(
        h.channel.log().cards_ever(),
        1,
        "no card for an invalid call"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_script_reads_its_own_directory_and_nothing_else_outside_the_workspace() {
    let scripts = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let secret = elsewhere.path().join("secret.txt");
    std::fs::write(&secret, "ELSEWHERE-SECRET").unwrap();
    std::fs::write(scripts.path().join("note.txt"), "BESIDE-THE-SCRIPT").unwrap();
    let script = scripts.path().join("peek.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat \"$(dirname \"$0\")/note.txt\"\ncat \"$1\" || echo refused\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let manifest = json!({
        "name": "peek",
        "description": "Reads a note",
        "command": "peek.sh",
        "args": [secret.display().to_string()],
        "parameters": {"type": "object", "properties": {}},
        "timeout_secs": 20
    });
    std::fs::write(scripts.path().join("peek.json"), manifest.to_string()).unwrap();
    let dir = scripts.path().display().to_string();
    let h = Harness::with(&[("SCRIPT_TOOLS_DIR", dir.as_str())]).await;
    h.llm
        .push(Reply::tool_calls([("call_p", "peek", json!({}))]));
    h.llm.push(Reply::text("Peeked."));
    h.channel.dm(1, "peek").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Peeked.")).await;
    let result = tool_result(&h.requests(2).await[1], "call_p");
    assert!(result.contains("BESIDE-THE-SCRIPT"), "{result}");
    assert!(
        result.contains("refused") && !result.contains("ELSEWHERE-SECRET"),
        "{result}"
    );
    h.stop().await;
}
