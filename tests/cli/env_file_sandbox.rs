//! The file the gateway read its variables from — `--env-file FILE`, or the
//! `.env` it found — is out of reach of the commands it runs, even where the
//! sandbox lets commands read (here, the workspace): the real binary, a
//! command the model proposes, approved on the console.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::console::piped::Env;
use crate::support::fake_llm::{FakeLlm, Reply};
use serde_json::json;

/// Never printed, logged or sent anywhere: only a command reading the file
/// could show it.
const MARKER: &str = "marker-only-in-the-env-file-7f3a";

/// Runs `switchboard <global> chat` in `cwd` (the workspace's parent when
/// `None`) with an env file at `rel` in the workspace; the model asks to `cat`
/// it, the console approves; returns what the command returned to the model.
async fn cat_the_env_file(global: &[&str], rel: &str, in_workspace: bool) -> String {
    let llm = FakeLlm::start().await;
    let env = Env::new(&llm.base_url());
    let ws = env.workspace();
    let path = ws.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, format!("# {MARKER}\nUSER_MESSAGES_PER_MINUTE=20\n")).unwrap();
    // The control: the workspace is where commands read.
    std::fs::write(ws.join("notes.txt"), "readable\n").unwrap();
    llm.push(Reply::tool_calls([(
        "call_1",
        "exec_command",
        json!({ "command": format!("cat notes.txt {}", path.display()) }),
    )]));
    llm.push(Reply::text("Done."));
    let arg = path.display().to_string();
    let global: Vec<&str> = global
        .iter()
        .map(|a| if *a == "FILE" { arg.as_str() } else { a })
        .collect();
    let cwd = if in_workspace {
        ws.clone()
    } else {
        env.dir.path().to_owned()
    };
    let done = env.chat_in(&global, &cwd, "show me the file\ny\n").await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    let requests = llm.requests().await;
    assert_eq!(requests.len(), 2, "{done}");
    let result = requests[1].to_string();
    assert!(result.contains("readable"), "{result}");
    result
}

#[tokio::test]
async fn the_env_file_named_with_env_file_is_out_of_reach_of_commands() {
    let result = cat_the_env_file(&["--env-file", "FILE"], "conf/secrets.env", false).await;
    assert!(!result.contains(MARKER), "{result}");
    assert!(result.contains("exit code: 1"), "{result}");
}

#[tokio::test]
async fn the_dot_env_found_at_start_is_out_of_reach_of_commands() {
    // Started in the workspace, the gateway reads ./.env there.
    let result = cat_the_env_file(&[], ".env", true).await;
    assert!(!result.contains(MARKER), "{result}");
    assert!(result.contains("exit code: 1"), "{result}");
}
