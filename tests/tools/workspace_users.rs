//! Users' workspace folders at the tools: at every sandbox level a command
//! run for one user sees only that user's folder (not another's, not the
//! shared top of the workspace); a user's file tools stay in their folder
//! while the operator (no chat caller) sees all; a write over the folder's
//! quota is refused before anything is written.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use std::sync::Arc;
use switchboard::domain::Conversation;
use switchboard::tools::{
    ExecConfig, ExecTool, Level, Limits, Network, ReadFileTool, Sandbox, SandboxConfig,
    SandboxMode, Tool, ToolContext, ToolError, Workspace, WriteFileTool,
};
use switchboard_platform::{ChatAddress, ChatId, ChatKind, Platform, User, UserId};

/// The DM turn of Telegram user `id`.
fn turn_of(id: i64) -> ToolContext {
    let user = User {
        is_approver: false,
        id: UserId(id),
        display_name: format!("user{id}"),
        is_bot: false,
    };
    let chat = ChatAddress::new(Platform::Telegram, ChatId(id), None);
    ToolContext {
        origin: Some(Conversation::new(chat, ChatKind::Dm, user, None)),
        ..ToolContext::default()
    }
}

/// A workspace where user 43 has a payslip and the shared top a note.
fn site(quota: u64) -> (tempfile::TempDir, Arc<Workspace>) {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path().join("ws"))
        .unwrap()
        .with_quota(quota);
    let theirs = ws.base().join("users/telegram-43/inbox/telegram-43");
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::write(theirs.join("payslip.txt"), "salary 5000 EUR").unwrap();
    std::fs::write(ws.base().join("shared.txt"), "old shared note").unwrap();
    (dir, Arc::new(ws))
}

fn exec(ws: &Arc<Workspace>, mode: SandboxMode) -> (ExecTool, String) {
    let config = SandboxConfig {
        mode,
        network: Network::Allow,
        limits: Limits::default(),
        protect: Default::default(),
    };
    let sandbox = Sandbox::detect(&config).unwrap_or_else(|e| {
        super::sandbox::lacking(mode, &e);
        Sandbox::detect(&SandboxConfig {
            mode: SandboxMode::Auto,
            ..config.clone()
        })
        .unwrap()
    });
    assert_ne!(sandbox.level(), &Level::None, "no sandbox level works here");
    let level = sandbox.describe();
    let mut c = ExecConfig::new(Arc::clone(ws));
    c.sandbox = Arc::new(sandbox);
    (ExecTool::new(c), level)
}

#[tokio::test]
async fn a_command_run_for_one_user_sees_only_their_folder_at_every_level() {
    let (_dir, ws) = site(1 << 30);
    let base = ws.base().display().to_string();
    for mode in [SandboxMode::Landlock, SandboxMode::Bwrap] {
        let (tool, level) = exec(&ws, mode);
        let command = format!(
            "pwd; cat {base}/users/telegram-43/inbox/telegram-43/payslip.txt \
             ../telegram-43/inbox/telegram-43/payslip.txt {base}/shared.txt ../../shared.txt; \
             echo x > {base}/users/telegram-43/planted; echo mine > mine.txt; true"
        );
        let out = tool
            .call(json!({ "command": command }), &turn_of(42))
            .await
            .unwrap();
        assert!(
            out.contains(&format!("{base}/users/telegram-42\n")),
            "{level}: runs in 42's folder: {out}"
        );
        assert!(
            !out.contains("5000") && !out.contains("old shared note"),
            "{level}: read outside 42's folder: {out}"
        );
        assert!(
            !ws.base().join("users/telegram-43/planted").exists(),
            "{level}: wrote into 43's folder"
        );
        assert!(ws.base().join("users/telegram-42/mine.txt").exists());
        // No chat caller (the operator): the whole workspace.
        let out = tool
            .call(
                json!({ "command": "cat shared.txt users/telegram-43/inbox/telegram-43/payslip.txt" }),
                &ToolContext::default(),
            )
            .await
            .unwrap();
        assert!(
            out.contains("old shared note") && out.contains("5000"),
            "{level}: {out}"
        );
    }
}

#[tokio::test]
async fn file_tools_stay_in_the_callers_folder_and_writes_respect_its_quota() {
    let (_dir, ws) = site(1000);
    let read = ReadFileTool::new(Arc::clone(&ws));
    let write = WriteFileTool::new(Arc::clone(&ws));
    for path in [
        "../telegram-43/inbox/telegram-43/payslip.txt",
        "../../shared.txt",
    ] {
        let err = read
            .call(json!({ "path": path }), &turn_of(42))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Forbidden(_)), "{path}: {err}");
        assert!(err.for_model().contains("other users' files"), "{err}");
    }
    let op = read
        .call(json!({ "path": "shared.txt" }), &ToolContext::default())
        .await
        .unwrap();
    assert!(op.contains("old shared note"), "{op}");

    let ok = write
        .call(
            json!({ "path": "notes/a.txt", "content": "x".repeat(600) }),
            &turn_of(42),
        )
        .await
        .unwrap();
    assert!(ok.contains("new file"), "{ok}");
    let err = write
        .call(
            json!({ "path": "notes/b.txt", "content": "y".repeat(600) }),
            &turn_of(42),
        )
        .await
        .unwrap_err();
    assert!(
        err.for_model().contains("over its quota"),
        "{}",
        err.for_model()
    );
    assert!(!ws.base().join("users/telegram-42/notes/b.txt").exists());
    // Replacing a file with a smaller one frees what it held.
    write
        .call(
            json!({ "path": "notes/a.txt", "content": "z".repeat(300) }),
            &turn_of(42),
        )
        .await
        .unwrap();
    // Another user has their own allowance.
    write
        .call(
            json!({ "path": "b.txt", "content": "y".repeat(600) }),
            &turn_of(44),
        )
        .await
        .unwrap();
}
