//! The built-in machine-touching tools against real files, processes and a local HTTP server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use switchboard::tools::{
    ExecConfig, ExecTool, Progress, ProgressSink, ReadFileTool, Tool, ToolContext, ToolError,
    WebFetchConfig, WebFetchTool, Workspace, WriteFileTool,
};
use tokio::sync::watch;

fn workspace() -> (tempfile::TempDir, Arc<Workspace>) {
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(dir.path().join("ws")).unwrap());
    (dir, ws)
}

async fn call(tool: &dyn Tool, args: Value) -> Result<String, ToolError> {
    tool.call(args, &ToolContext::default()).await
}

// ---------------------------------------------------------------- files

#[tokio::test]
async fn file_tools_refuse_escapes() {
    let (dir, ws) = workspace();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret").unwrap();
    std::os::unix::fs::symlink(&outside, ws.root().join("escape")).unwrap();

    let read = ReadFileTool::new(ws.clone());
    let write = WriteFileTool::new(ws.clone());
    for path in [
        "../outside/secret.txt",
        "/etc/passwd",
        "escape/secret.txt",
        "a/../../x",
    ] {
        let err = call(&read, json!({ "path": path })).await.unwrap_err();
        assert!(matches!(err, ToolError::Forbidden(_)), "read {path}: {err}");
        assert!(
            err.for_model().contains("outside the workspace"),
            "{}",
            err.for_model()
        );
        let err = call(&write, json!({ "path": path, "content": "x" }))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ToolError::Forbidden(_)),
            "write {path}: {err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "top secret"
    );
    let summary = write
        .approval_summary(&json!({ "path": "escape/new.txt", "content": "x" }))
        .await;
    assert!(summary.contains("will be refused"), "{summary}");
    assert!(!outside.join("new.txt").exists());
}

#[tokio::test]
async fn file_tools_refuse_hard_links_to_files_outside_the_workspace() {
    let (dir, ws) = workspace();
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "top secret").unwrap();
    std::fs::hard_link(&outside, ws.root().join("link.txt")).unwrap();

    let read = ReadFileTool::new(ws.clone());
    let write = WriteFileTool::new(ws.clone());
    let err = call(&read, json!({ "path": "link.txt" }))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Forbidden(_)), "{err}");
    assert!(err.for_model().contains("hard link"), "{}", err.for_model());
    for append in [false, true] {
        let err = call(
            &write,
            json!({ "path": "link.txt", "content": "pwned", "append": append }),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, ToolError::Forbidden(_)), "{err}");
    }
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "top secret",
        "a refused write neither truncates nor appends"
    );

    // Links whose every name is inside the workspace are ordinary files.
    std::fs::create_dir(ws.root().join("sub")).unwrap();
    std::fs::write(ws.root().join("a.txt"), "shared").unwrap();
    std::fs::hard_link(ws.root().join("a.txt"), ws.root().join("sub/b.txt")).unwrap();
    let text = call(&read, json!({ "path": "sub/b.txt" })).await.unwrap();
    assert!(text.contains("shared"), "{text}");
    call(&write, json!({ "path": "a.txt", "content": "changed" }))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.root().join("sub/b.txt")).unwrap(),
        "changed"
    );
}

#[tokio::test]
async fn file_tools_refuse_a_fifo_at_once_instead_of_hanging() {
    let (_dir, ws) = workspace();
    let fifo = ws.root().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());

    let read = ReadFileTool::new(ws.clone());
    let write = WriteFileTool::new(ws.clone());
    // A guard, not a timing assertion: before the fix these never returned.
    let guard = Duration::from_secs(60);
    let err = tokio::time::timeout(guard, call(&read, json!({ "path": "pipe" })))
        .await
        .expect("read_file on a FIFO must not block")
        .unwrap_err();
    assert!(
        err.for_model().contains("not a regular file"),
        "{}",
        err.for_model()
    );
    let summary = tokio::time::timeout(
        guard,
        write.approval_summary(&json!({ "path": "pipe", "content": "x" })),
    )
    .await
    .expect("a write card for a FIFO must not block");
    assert!(summary.contains("pipe"), "{summary}");
    let err = tokio::time::timeout(
        guard,
        call(&write, json!({ "path": "pipe", "content": "x" })),
    )
    .await
    .expect("write_file on a FIFO must not block")
    .unwrap_err();
    assert!(
        err.for_model().contains("not a regular file"),
        "{}",
        err.for_model()
    );
}

#[tokio::test]
async fn write_then_read_round_trip() {
    let (_dir, ws) = workspace();
    let write = WriteFileTool::new(ws.clone());
    let read = ReadFileTool::new(ws.clone());

    let out = call(
        &write,
        json!({ "path": "notes/deep/todo.txt", "content": "one\ntwo\n" }),
    )
    .await
    .unwrap();
    assert_eq!(out, "wrote 8 bytes to `notes/deep/todo.txt` (new file)");
    let out = call(
        &write,
        json!({ "path": "notes/deep/todo.txt", "content": "three\n", "append": true }),
    )
    .await
    .unwrap();
    assert!(
        out.contains("appended 6 bytes") && out.contains("now 14 bytes"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.root().join("notes/deep/todo.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );

    let text = call(&read, json!({ "path": "notes/deep/todo.txt" }))
        .await
        .unwrap();
    assert_eq!(text, "     1\tone\n     2\ttwo\n     3\tthree\n");
    let page = call(
        &read,
        json!({ "path": "notes/deep/todo.txt", "offset_line": 2, "max_lines": 1 }),
    )
    .await
    .unwrap();
    assert!(
        page.starts_with("     2\ttwo\n") && page.contains("offset_line=3"),
        "{page}"
    );
}

#[tokio::test]
async fn write_approval_summary_shows_path_and_diff() {
    let (_dir, ws) = workspace();
    let write = WriteFileTool::new(ws.clone());
    let new = write
        .approval_summary(&json!({ "path": "a.txt", "content": "hello\nworld\n" }))
        .await;
    assert!(
        new.starts_with("write_file `a.txt`\nnew file: 2 lines, 12 bytes"),
        "{new}"
    );
    assert!(new.contains("+ hello\n+ world"), "{new}");

    std::fs::write(ws.root().join("a.txt"), "hello\nworld\nbye\n").unwrap();
    let diff = write
        .approval_summary(&json!({ "path": "a.txt", "content": "hello\nthere\nbye\nnow\n" }))
        .await;
    assert!(diff.contains("changes: +2 −1 lines"), "{diff}");
    assert!(diff.contains("@@ line 2\n- world\n+ there\n"), "{diff}");
    assert!(diff.contains("@@ line 4\n+ now\n"), "{diff}");
    // The summary does not write.
    assert_eq!(
        std::fs::read_to_string(ws.root().join("a.txt")).unwrap(),
        "hello\nworld\nbye\n"
    );
}

#[tokio::test]
async fn read_refuses_binary_large_and_bad_args() {
    let (_dir, ws) = workspace();
    let read = ReadFileTool::new(ws.clone());
    std::fs::write(ws.root().join("bin"), b"\x7fELF\0\0\x01").unwrap();
    std::fs::write(ws.root().join("big.txt"), vec![b'a'; 3 * 1024 * 1024]).unwrap();

    let err = call(&read, json!({ "path": "bin" }))
        .await
        .unwrap_err()
        .for_model();
    assert!(err.contains("binary"), "{err}");
    let err = call(&read, json!({ "path": "big.txt" }))
        .await
        .unwrap_err()
        .for_model();
    assert!(
        err.contains("limit") && err.contains("exec_command"),
        "{err}"
    );
    let err = call(&read, json!({ "path": "missing.txt" }))
        .await
        .unwrap_err()
        .for_model();
    assert!(err.contains("does not exist"), "{err}");
    let err = call(&read, json!({})).await.unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArguments(m) if m.contains("missing field `path`")),
        "{err}"
    );
    let err = call(&read, json!({ "path": "x", "lines": 3 }))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArguments(m) if m.contains("unknown field `lines`")),
        "{err}"
    );
}

#[test]
fn specs_have_strict_schemas() {
    let (_dir, ws) = workspace();
    let tools: Vec<Box<dyn Tool>> = vec![
        Box::new(ReadFileTool::new(ws.clone())),
        Box::new(WriteFileTool::new(ws.clone())),
        Box::new(ExecTool::new(ExecConfig::new(ws))),
        Box::new(WebFetchTool::new(WebFetchConfig::default())),
    ];
    for t in &tools {
        let s = t.spec();
        assert_eq!(s.parameters["type"], "object", "{}", s.name);
        assert_eq!(s.parameters["additionalProperties"], false, "{}", s.name);
        assert!(
            !s.parameters["required"].as_array().unwrap().is_empty(),
            "{}",
            s.name
        );
        assert!(s.description.len() > 80, "{}", s.name);
    }
    let flags: Vec<_> = tools
        .iter()
        .map(|t| {
            (
                t.spec().name.as_str(),
                t.spec().requires_approval,
                t.spec().concurrency_safe,
            )
        })
        .collect();
    assert_eq!(
        flags,
        [
            ("read_file", false, true),
            ("write_file", true, false),
            ("exec_command", true, false),
            ("web_fetch", false, true)
        ]
    );
}

// ---------------------------------------------------------------- exec

fn exec(ws: Arc<Workspace>) -> ExecTool {
    ExecTool::new(ExecConfig::new(ws))
}

/// Waits (bounded) until the process is gone or a zombie.
async fn wait_dead(pid: &str) -> bool {
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat)
                if stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|s| s.trim_start().starts_with('Z')) =>
            {
                return true
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    false
}

fn read_pid(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

#[tokio::test]
async fn exec_reports_exit_code_output_and_cwd() {
    let (_dir, ws) = workspace();
    let t = exec(ws.clone());
    let out = call(&t, json!({ "command": "pwd; echo oops >&2; exit 3" }))
        .await
        .unwrap();
    assert!(
        out.starts_with("exit code: 3 (the command failed)\n"),
        "{out}"
    );
    assert!(out.contains(&ws.root().display().to_string()), "{out}");
    assert!(out.contains("oops"), "{out}");
    let ok = call(&t, json!({ "command": "true" })).await.unwrap();
    assert!(
        ok.starts_with("exit code: 0\n") && ok.ends_with("(no output)"),
        "{ok}"
    );
    let summary = t
        .approval_summary(&json!({ "command": "make -j2", "timeout_secs": 5 }))
        .await;
    assert!(summary.starts_with("$ make -j2\n(cwd: "), "{summary}");
    assert!(summary.contains("timeout: 5s"), "{summary}");
    let err = call(&t, json!({ "command": 42 })).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
}

#[tokio::test]
async fn exec_timeout_kills_the_process_tree() {
    let (_dir, ws) = workspace();
    let t = exec(ws.clone());
    let err = call(
        &t,
        json!({ "command": "echo started; sleep 30 & echo $! > bg.pid; sleep 30", "timeout_secs": 1 }),
    )
    .await
    .unwrap_err();
    let msg = err.for_model();
    assert!(
        msg.contains("timed out after 1s") && msg.contains("started"),
        "{msg}"
    );
    let pid = read_pid(&ws.root().join("bg.pid"));
    assert!(
        wait_dead(&pid).await,
        "background child {pid} survived the timeout"
    );
}

#[tokio::test]
async fn exec_cancellation_kills_and_reports_cancelled() {
    let (_dir, ws) = workspace();
    let t = exec(ws.clone());
    let (tx, mut rx) = watch::channel(Progress::default());
    let ctx = ToolContext {
        progress: ProgressSink::new(tx),
        ..ToolContext::default()
    };
    let cancel = ctx.cancel.clone();
    let pid_file = ws.root().join("child.pid");
    let watcher = {
        let pid_file = pid_file.clone();
        tokio::spawn(async move {
            // Cancel once the command has written its pid file and said so.
            while rx.changed().await.is_ok() {
                if rx.borrow().detail == "ready" && pid_file.exists() {
                    break;
                }
            }
            cancel.cancel();
        })
    };
    let err = t
        .call(
            json!({ "command": "sleep 30 & echo $! > child.pid; echo ready; wait" }),
            &ctx,
        )
        .await
        .unwrap_err();
    watcher.await.unwrap();
    assert!(matches!(err, ToolError::Cancelled), "{err}");
    assert!(
        wait_dead(&read_pid(&pid_file)).await,
        "child survived cancellation"
    );
}

#[tokio::test]
async fn exec_caps_ten_megabytes_of_output() {
    let (_dir, ws) = workspace();
    let t = exec(ws);
    let out = call(&t, json!({ "command": "yes | head -c 10000000" }))
        .await
        .unwrap();
    assert!(out.starts_with("exit code: 0\n"), "{}", &out[..200]);
    assert!(out.contains("bytes omitted …]"), "no omission marker");
    assert!(
        out.chars().count() < 30_000 + 200,
        "{} chars",
        out.chars().count()
    );
    assert!(out.trim_end().ends_with('y'));
}

#[tokio::test]
async fn exec_environment_is_cleared() {
    std::env::set_var("FAKE_SECRET_FOR_TEST", "hunter2");
    let (_dir, ws) = workspace();
    let t = exec(ws);
    let out = call(
        &t,
        json!({ "command": "echo \"[$FAKE_SECRET_FOR_TEST]\"; env" }),
    )
    .await
    .unwrap();
    assert!(out.contains("[]"), "{out}");
    assert!(!out.contains("hunter2"), "{out}");
    assert!(out.contains("PATH="), "{out}");
}

#[tokio::test]
async fn exec_reports_progress_from_output() {
    let (_dir, ws) = workspace();
    let t = exec(ws);
    let (tx, rx) = watch::channel(Progress::default());
    let ctx = ToolContext {
        progress: ProgressSink::new(tx),
        ..ToolContext::default()
    };
    let args = json!({ "command": "echo 10%; echo 50%; echo done", "background": true });
    assert!(t.runs_in_background(&args));
    let out = t.call(args, &ctx).await.unwrap();
    assert!(out.contains("10%\n50%\ndone"), "{out}");
    let last = rx.borrow().clone();
    assert_eq!(
        last,
        Progress {
            stage: "running".into(),
            detail: "done".into(),
            percent: Some(50)
        }
    );
}

#[tokio::test]
async fn exec_kills_leftover_children_holding_output() {
    let (_dir, ws) = workspace();
    let t = exec(ws.clone());
    let out = call(
        &t,
        json!({ "command": "sleep 30 & echo $! > left.pid; echo parent done" }),
    )
    .await
    .unwrap();
    assert!(
        out.starts_with("exit code: 0\n") && out.contains("parent done"),
        "{out}"
    );
    assert!(out.contains("kept its output open"), "{out}");
    assert!(wait_dead(&read_pid(&ws.root().join("left.pid"))).await);
}

// ---------------------------------------------------------------- web_fetch

async fn serve() -> u16 {
    use axum::http::{header, StatusCode};
    use axum::response::IntoResponse;
    use axum::routing::get;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new()
        .route("/", get(|| async { "hello world" }))
        .route(
            "/page",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html")],
                    "<html><head><script>evil()</script></head><body><h1>Title</h1><p>Body &amp; soul</p></body></html>",
                )
            }),
        )
        .route("/big", get(|| async { "a".repeat(100_000) }))
        .route(
            "/bin",
            get(|| async { ([(header::CONTENT_TYPE, "image/png")], vec![0x89u8, b'P', 0, 0]) }),
        )
        .route(
            "/to-loopback",
            get(move || async move {
                (StatusCode::FOUND, [(header::LOCATION, format!("http://127.0.0.1:{port}/"))])
                    .into_response()
            }),
        )
        .route(
            "/relative",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/")]).into_response() }),
        )
        .route(
            "/loop",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/loop")]).into_response() }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

fn fetcher(allow: &[&str], max_bytes: usize) -> WebFetchTool {
    WebFetchTool::new(WebFetchConfig {
        timeout: Duration::from_secs(5),
        max_bytes,
        allow: allow.iter().map(|s| s.to_string()).collect(),
    })
}

#[tokio::test]
async fn web_fetch_refuses_loopback_by_default() {
    let port = serve().await;
    let t = fetcher(&[], 2_000_000);
    // The other spellings of 127.0.0.1 that browsers and curl accept:
    // decimal, hex, octal and shortened forms are the same address.
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://0x7f.0.0.1:{port}/"),
        format!("http://0177.0.0.1:{port}/"),
        format!("http://127.1:{port}/"),
        format!("http://0x7f000001:{port}/"),
    ] {
        let err = call(&t, json!({ "url": url })).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::Forbidden(m) if m.contains("loopback")),
            "{url}: {err}"
        );
    }
    // A name is checked after DNS resolution.
    let err = call(&t, json!({ "url": format!("http://localhost:{port}/") }))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Forbidden(m) if m.contains("resolves to 127.0.0.1")),
        "{err}"
    );
}

#[tokio::test]
async fn web_fetch_allowlisted_host_works_and_converts_html() {
    let port = serve().await;
    let t = fetcher(&["127.0.0.1"], 2_000_000);
    let out = call(&t, json!({ "url": format!("http://127.0.0.1:{port}/") }))
        .await
        .unwrap();
    assert!(
        out.contains("Status: 200 OK") && out.ends_with("\nhello world"),
        "{out}"
    );
    let page = call(
        &t,
        json!({ "url": format!("http://127.0.0.1:{port}/page") }),
    )
    .await
    .unwrap();
    assert!(page.ends_with("\nTitle\n\nBody & soul"), "{page}");
    assert!(!page.contains("evil"), "{page}");
    let err = call(&t, json!({ "url": format!("http://127.0.0.1:{port}/bin") }))
        .await
        .unwrap_err();
    assert!(err.for_model().contains("binary"), "{err}");
}

#[tokio::test]
async fn web_fetch_caps_body_and_output() {
    let port = serve().await;
    let small = fetcher(&["127.0.0.1"], 1000);
    let out = call(
        &small,
        json!({ "url": format!("http://127.0.0.1:{port}/big") }),
    )
    .await
    .unwrap();
    assert!(
        out.contains("[body cut: only the first 1000 bytes"),
        "{out}"
    );
    let body = out.rsplit("\n\n").next().unwrap();
    assert_eq!(body, "a".repeat(1000));

    let t = fetcher(&["127.0.0.1"], 2_000_000);
    let out = call(
        &t,
        json!({ "url": format!("http://127.0.0.1:{port}/big"), "max_chars": 50 }),
    )
    .await
    .unwrap();
    assert!(
        out.contains("showing the first 50 of 100000 chars"),
        "{out}"
    );
    assert!(out.ends_with(&format!("\n\n{}", "a".repeat(50))), "{out}");
}

#[tokio::test]
async fn web_fetch_rechecks_every_redirect() {
    let port = serve().await;
    let t = fetcher(&["localhost"], 2_000_000);
    let ok = call(
        &t,
        json!({ "url": format!("http://localhost:{port}/relative") }),
    )
    .await
    .unwrap();
    assert!(
        ok.contains("hello world") && ok.contains("(redirected from"),
        "{ok}"
    );

    let err = call(
        &t,
        json!({ "url": format!("http://localhost:{port}/to-loopback") }),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, ToolError::Forbidden(m) if m.contains("127.0.0.1")),
        "{err}"
    );

    let err = call(
        &t,
        json!({ "url": format!("http://localhost:{port}/loop") }),
    )
    .await
    .unwrap_err();
    assert!(err.for_model().contains("too many redirects"), "{err}");
}

#[tokio::test]
async fn web_fetch_rejects_bad_urls() {
    let t = fetcher(&[], 2_000_000);
    for url in ["file:///etc/passwd", "ftp://example.com/x", "gopher://x"] {
        let err = call(&t, json!({ "url": url })).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::Forbidden(m) if m.contains("http")),
            "{url}: {err}"
        );
    }
    let err = call(&t, json!({ "url": "not a url" })).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
    let err = call(&t, json!({ "href": "https://example.com" }))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArguments(m) if m.contains("unknown field `href`")),
        "{err}"
    );
}
