//! A rule-based stand-in for a model, for trying `switchboard chat` without one:
//! `cargo run --example demo_llm` serves an OpenAI-compatible endpoint on
//! 127.0.0.1:11435 (or the port given as the first argument).
//!
//! It understands: `read PATH`, `write PATH TEXT`, `run COMMAND`, `bg COMMAND`
//! (a background command), `ask QUESTION`; anything else is echoed back.

#[path = "../tests/support"]
#[allow(dead_code)]
mod support {
    pub mod fake_llm;
    pub mod images;
    pub mod serve;
}

use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;
use support::fake_llm::{FakeLlm, Reply};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(11435);
    let llm = FakeLlm::try_start_on(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    llm.set_responder(respond);
    println!(
        "demo model listening: LLM_BASE_URL={} LLM_MODEL=demo",
        llm.base_url()
    );
    tokio::signal::ctrl_c().await?;
    Ok(())
}

fn respond(request: &Value) -> Reply {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let Some(last) = messages.last() else {
        return Reply::text("Hello!");
    };
    let content = last["content"].as_str().unwrap_or_default();
    let slow = |text: &str| Reply::text(text).with_chunk_delay(Duration::from_millis(30));
    if last["role"] == "tool" {
        let preview: String = content.chars().take(600).collect();
        return slow(&format!("The tool returned:\n```\n{preview}\n```"));
    }
    if content.contains("[SYSTEM NOTIFICATION - NOT USER INPUT]") {
        let status = content
            .lines()
            .find(|l| l.starts_with("status:"))
            .unwrap_or("status: unknown");
        return slow(&format!("Your background task finished ({status})."));
    }
    let call = |name: &str, args: Value| {
        Reply::tool_calls(vec![(
            format!("call_{}", messages.len()),
            name.to_owned(),
            args,
        )])
    };
    let (verb, rest) = content.split_once(' ').unwrap_or((content, ""));
    match verb {
        "read" => call("read_file", json!({ "path": rest })),
        "write" => {
            let (path, text) = rest.split_once(' ').unwrap_or((rest, ""));
            call("write_file", json!({ "path": path, "content": text }))
        }
        "run" => call("exec_command", json!({ "command": rest })),
        "bg" => call(
            "exec_command",
            json!({ "command": rest, "background": true }),
        ),
        "ask" => call("ask_user", json!({ "question": rest })),
        _ => slow(&format!("You said: {content}")),
    }
}
