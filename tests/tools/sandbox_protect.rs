//! What the exec sandbox keeps from commands whatever else it lets them do:
//! the gateway's own ports and the database's with the network allowed, Unix
//! sockets, the env file, `DATA_DIR`, the configuration files and systemd's
//! credentials wherever they are; the sockets and `io_uring` its seccomp
//! filter refuses. Each test runs every level, configured the way the gateway
//! configures it (`Config::from_lookup`); a level this machine lacks is
//! replaced by `auto`, and the test says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::sandbox::{failed, is_root, run, tool, unix_connect};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use switchboard::tools::{Level, Sandbox, Workspace};
use switchboard::Config;

/// The configuration `vars` (plus a model) at `EXEC_SANDBOX=mode`.
fn config(mode: &str, vars: &[(&str, String)]) -> Config {
    let mut map: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    map.insert("LLM_BASE_URL".into(), "http://127.0.0.1:9/v1".into());
    map.insert("LLM_MODEL".into(), "m".into());
    map.insert("EXEC_SANDBOX".into(), mode.into());
    Config::from_lookup(|k| map.get(k).cloned()).unwrap()
}

/// The sandbox `config` asks for, or `auto` (said) when this machine lacks it.
fn detect(config: &Config) -> Sandbox {
    let sandbox = Sandbox::detect(&config.exec_sandbox).unwrap_or_else(|e| {
        super::sandbox::lacking(config.exec_sandbox.mode, &e);
        let mut auto = config.exec_sandbox.clone();
        auto.mode = switchboard::tools::SandboxMode::Auto;
        Sandbox::detect(&auto).unwrap()
    });
    assert_ne!(sandbox.level(), &Level::None, "no sandbox level works here");
    sandbox
}

/// The confining levels for `vars`, each with its configuration.
fn levels(vars: &[(&str, String)]) -> Vec<(Sandbox, Config)> {
    ["landlock", "bwrap"]
        .into_iter()
        .map(|mode| {
            let c = config(mode, vars);
            (detect(&c), c)
        })
        .collect()
}

/// What `command` prints run by `sh` outside any sandbox (the control: a
/// socket family or call this kernel lacks proves nothing refused).
fn unconfined(command: &str) -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", command])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn tcp_connect(port: u16) -> String {
    format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected-tcp' 2>&1")
}

/// Whether this machine can keep ports from commands at `sandbox`'s level
/// (Landlock ABI 4); said when not.
fn keeps_ports(sandbox: &Sandbox) -> bool {
    let warned = sandbox
        .warning()
        .is_some_and(|w| w.contains("gateway's own ports"));
    if warned {
        eprintln!(
            "{}: this machine cannot keep ports from commands (the start warns)",
            sandbox.describe()
        );
    }
    !warned
}

#[tokio::test]
async fn with_the_network_allowed_the_gateways_ports_and_the_databases_are_out_of_reach() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(dir.path().join("ws")).unwrap());
    let listen = || std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (web, health, db, other) = (listen(), listen(), listen(), listen());
    let port = |l: &std::net::TcpListener| l.local_addr().unwrap().port();
    // `switchboard mcp`'s port, not listening now: a command must not take it.
    let mcp = port(&listen());
    let vars = [
        ("DATA_DIR", dir.path().join("data").display().to_string()),
        ("WEB_LISTEN", format!("127.0.0.1:{}", port(&web))),
        ("HEALTH_LISTEN", format!("127.0.0.1:{}", port(&health))),
        (
            "DATABASE_URL",
            format!("postgres://sb@127.0.0.1:{}/sb", port(&db)),
        ),
        ("MCP_LISTEN", format!("127.0.0.1:{mcp}")),
        ("MCP_TOKEN", "0123456789abcdef0123".to_owned()),
    ];
    for (sandbox, _) in levels(&vars) {
        let level = sandbox.describe();
        if !keeps_ports(&sandbox) {
            continue;
        }
        let t = tool(&ws, sandbox);
        for kept in [&web, &health, &db] {
            let out = run(&t, &tcp_connect(port(kept))).await;
            assert!(!out.contains("connected-tcp"), "{level}: {out}");
        }
        // Any other port, the same address: allowed.
        let out = run(&t, &tcp_connect(port(&other))).await;
        assert!(out.contains("connected-tcp"), "{level}: {out}");
        // Nor may a command listen on one the gateway is not using now.
        let listen_on = |port: u16| {
            format!("perl -MIO::Socket::INET -e 'IO::Socket::INET->new(LocalAddr => \"127.0.0.1:{port}\", \
                 Listen => 1) or die \"bind: $!\\n\"; print \"listening\\n\"' 2>&1")
        };
        let out = run(&t, &listen_on(mcp)).await;
        assert!(!out.contains("listening"), "{level}: {out}");
        let free = port(&listen());
        let out = run(&t, &listen_on(free)).await;
        assert!(out.contains("listening"), "{level}: {out}");
    }
}

#[tokio::test]
async fn with_the_network_allowed_no_unix_socket_opens() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(dir.path().join("ws")).unwrap());
    // One in the workspace (seen at every level), one outside (PostgreSQL's
    // is like it), one abstract (in the host's network namespace).
    let inside = ws.root().join("service.sock");
    let outside = dir.path().join("db.sock");
    let _a = std::os::unix::net::UnixListener::bind(&inside).unwrap();
    let _b = std::os::unix::net::UnixListener::bind(&outside).unwrap();
    let name = format!("switchboard-test-{}", std::process::id());
    let addr =
        <std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
            &name,
        )
        .unwrap();
    let _c = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    let postgres = Path::new("/run/postgresql/.s.PGSQL.5432");
    let vars = [("DATA_DIR", dir.path().join("data").display().to_string())];
    for (sandbox, _) in levels(&vars) {
        let level = sandbox.describe();
        let t = tool(&ws, sandbox);
        for path in [inside.as_path(), outside.as_path(), postgres] {
            if path.exists() {
                let out = run(&t, &unix_connect(path)).await;
                assert!(
                    !out.contains("connected-unix"),
                    "{level}: {}: {out}",
                    path.display()
                );
            }
        }
        let out = run(
            &t,
            &format!("perl -MSocket -e 'socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die \"unix: $!\\n\"; \
                 connect($s, pack_sockaddr_un(\"\\0{name}\")) or die \"connect: $!\\n\"; print \"connected-abstract\\n\"' 2>&1"),
        )
        .await;
        assert!(!out.contains("connected-abstract"), "{level}: {out}");
        // Pairs of connected sockets, which reach nothing, still work.
        let out = run(&t, "perl -MSocket -e 'socketpair(my $a, my $b, AF_UNIX, SOCK_STREAM, 0) or die \"pair: $!\\n\"; print \"paired\\n\"' 2>&1").await;
        assert!(out.contains("paired"), "{level}: {out}");
    }
}

/// The gateway's files in places a command may otherwise read: an env file
/// and systemd credentials, `DATA_DIR` and the configuration files inside
/// the workspace, and (as root) a directory of `/etc` created before start.
struct Files {
    _dir: tempfile::TempDir,
    ws: Arc<Workspace>,
    vars: Vec<(&'static str, String)>,
    env_file: PathBuf,
    secrets: Vec<PathBuf>,
    etc: Option<PathBuf>,
}

impl Drop for Files {
    fn drop(&mut self) {
        if let Some(etc) = &self.etc {
            let _ = std::fs::remove_dir_all(etc);
        }
    }
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(dir.path().join("ws")).unwrap());
    let root = ws.root().to_owned();
    let put = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    };
    let env_file = put(".env", "LLM_API_KEY=sk-ENV-SECRET\n");
    let db = put("state/switchboard.db", "DATABASE-SECRET");
    let chats = put("conf/chats.json", r#"{"chats": {}, "x": "CHATS-SECRET"}"#);
    let credential = put(
        "credentials/env",
        "TELEGRAM_BOT_TOKEN=1:CREDENTIAL-SECRET\n",
    );
    put("notes.txt", "readable notes\n");
    std::fs::create_dir_all(root.join("project")).unwrap();
    let mut secrets = vec![env_file.clone(), db, chats.clone(), credential];
    let etc = PathBuf::from(format!("/etc/switchboard-test-{}", std::process::id()));
    let etc = if is_root() && std::fs::create_dir(&etc).is_ok() {
        std::fs::write(etc.join("env"), "LLM_API_KEY=sk-ETC-SECRET\n").unwrap();
        secrets.push(etc.join("env"));
        Some(etc)
    } else {
        eprintln!("not root: no env file planted under /etc");
        None
    };
    let vars = vec![
        ("DATA_DIR", root.join("state").display().to_string()),
        ("WORKSPACE_DIR", root.display().to_string()),
        ("CHATS_FILE", chats.display().to_string()),
        (
            "CREDENTIALS_DIRECTORY",
            root.join("credentials").display().to_string(),
        ),
    ];
    Files {
        _dir: dir,
        ws,
        vars,
        env_file,
        secrets,
        etc,
    }
}

#[tokio::test]
async fn the_env_file_data_dir_and_configuration_stay_out_of_reach_wherever_they_are() {
    let f = files();
    for (_, mut config) in levels(&f.vars) {
        // As `--env-file` (or the `.env` found) does.
        config.keep_from_commands(&f.env_file);
        let sandbox = detect(&config);
        let level = sandbox.describe();
        let t = tool(&f.ws, sandbox);
        for secret in &f.secrets {
            for command in [
                format!("cat {}", secret.display()),
                format!("base64 {}", secret.display()),
            ] {
                let out = run(&t, &command).await;
                assert!(failed(&out), "{level}: {command}: {out}");
                assert!(
                    !out.contains("SECRET") && !out.contains("U0VDUkVU"),
                    "{level}: {out}"
                );
            }
        }
        for dir in ["state", "credentials"] {
            let out = run(&t, &format!("ls {dir}")).await;
            assert!(
                !out.contains("switchboard.db") && !out.contains("env"),
                "{level}: {out}"
            );
        }
        let out = run(&t, "echo planted > state/x; echo planted > conf/chats.json").await;
        assert!(failed(&out), "{level}: {out}");
        assert_eq!(
            std::fs::read_to_string(f.ws.root().join("conf/chats.json")).unwrap(),
            r#"{"chats": {}, "x": "CHATS-SECRET"}"#
        );
        // The rest of the workspace works as before.
        let out = run(
            &t,
            "cat notes.txt && echo made > project/new.txt && cat project/new.txt",
        )
        .await;
        assert!(
            !failed(&out) && out.contains("readable notes\nmade"),
            "{level}: {out}"
        );
    }
}

#[tokio::test]
async fn with_the_network_off_netlink_and_vsock_sockets_fail() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(dir.path().join("ws")).unwrap());
    // (family, type, name); tried here first: a family this kernel lacks
    // proves nothing.
    let families = [(16, 3, "netlink"), (40, 1, "vsock")];
    let vars = [
        ("DATA_DIR", dir.path().join("data").display().to_string()),
        ("EXEC_NETWORK", "none".to_owned()),
    ];
    for (sandbox, _) in levels(&vars) {
        let level = sandbox.describe();
        let t = tool(&ws, sandbox);
        for (family, kind, name) in families {
            let command = format!(
                "perl -e 'socket(my $s, {family}, {kind}, 0) or die \"{name}: $!\\n\"; print \"opened-{name}\\n\"' 2>&1"
            );
            if !unconfined(&command).contains(&format!("opened-{name}")) {
                eprintln!("this kernel opens no {name} socket: not tried");
                continue;
            }
            let out = run(&t, &command).await;
            assert!(!out.contains(&format!("opened-{name}")), "{level}: {out}");
        }
    }
}

/// `io_uring_setup(4, params)` with perl's `syscall`.
fn io_uring_setup() -> String {
    format!(
        "perl -e 'my $p = \"\\0\" x 120; my $r = syscall({}, 4, $p); \
         print $r < 0 ? \"refused: $!\\n\" : \"ring-opened\\n\"' 2>&1",
        libc::SYS_io_uring_setup
    )
}

#[tokio::test]
async fn io_uring_is_refused_at_every_level_and_setting() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(dir.path().join("ws")).unwrap());
    if !unconfined(&io_uring_setup()).contains("ring-opened") {
        eprintln!("io_uring is off in this kernel: nothing to refuse");
        return;
    }
    for network in ["allow", "none"] {
        let vars = [
            ("DATA_DIR", dir.path().join("data").display().to_string()),
            ("EXEC_NETWORK", network.to_owned()),
        ];
        for (sandbox, _) in levels(&vars) {
            let level = sandbox.describe();
            let out = run(&tool(&ws, sandbox), &io_uring_setup()).await;
            assert!(out.contains("refused"), "{level}: {out}");
        }
    }
}

/// Answers every connection with a small HTTP response.
fn http_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n");
        }
    });
    port
}

#[tokio::test]
async fn ordinary_commands_still_work_beside_the_protections() {
    let f = files();
    let allowed = http_server();
    let db = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut vars = f.vars.clone();
    vars.push((
        "DATABASE_URL",
        format!(
            "postgres://sb@127.0.0.1:{}/sb",
            db.local_addr().unwrap().port()
        ),
    ));
    let path = "PATH=/usr/local/bin:/usr/bin:/bin";
    let mut commands = vec![
        "ls -l /usr | grep -c bin && id -un && date +%Y && sort < notes.txt | wc -l".to_owned(),
        format!("curl -sS http://127.0.0.1:{allowed}/"),
        "getent hosts localhost".to_owned(),
        "cd project && git init -q && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m first && git log --oneline | wc -l".to_owned(),
        format!("{path} python3 -c 'import json, ssl, subprocess; print(subprocess.run([\"true\"]).returncode, json.dumps([1]))'"),
        "diff <(echo a) <(echo a) && echo same".to_owned(),
    ];
    if Path::new("/usr/bin/node").exists() {
        commands.push("node -e 'console.log(require(\"os\").cpus().length > 0)'".to_owned());
    }
    for (_, config) in levels(&vars) {
        let sandbox = detect(&config);
        let level = sandbox.describe();
        let t = tool(&f.ws, sandbox);
        for command in &commands {
            let out = run(&t, &format!("bash -c '{}'", command.replace('\'', "'\\''"))).await;
            assert!(!failed(&out), "{level}: {command}: {out}");
        }
        let out = run(&t, &format!("curl -sS http://127.0.0.1:{allowed}/")).await;
        assert!(out.contains("hello"), "{level}: {out}");
    }
}

/// Removes what a test planted under `/etc`.
struct Planted(Vec<PathBuf>);

impl Drop for Planted {
    fn drop(&mut self) {
        for path in self.0.iter().rev() {
            let _ = std::fs::remove_file(path).or_else(|_| std::fs::remove_dir(path));
        }
    }
}

#[tokio::test]
async fn the_shipped_units_secrets_are_out_of_reach_of_commands() {
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/switchboard.service"
    ))
    .unwrap();
    let setting = |key: &str| {
        unit.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key}"))
    };
    // systemd copies the root-owned file to the credentials directory; the
    // gateway reads the copy through --env-file.
    let (name, source) = setting("LoadCredential=").split_once(':').unwrap();
    let exec: Vec<&str> = setting("ExecStart=").split_whitespace().collect();
    let env_arg = exec
        .iter()
        .skip_while(|a| **a != "--env-file")
        .nth(1)
        .unwrap();
    assert_eq!(*env_arg, format!("${{CREDENTIALS_DIRECTORY}}/{name}"));
    assert!(source.starts_with("/etc/"), "{source}");
    // The layout, rebuilt: the credentials directory where commands could
    // otherwise read (the workspace; systemd's is under /run), and the
    // source itself when this machine lacks it and the test may create it.
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(dir.path().join("ws")).unwrap());
    let credentials = ws.root().join("credentials");
    std::fs::create_dir(&credentials).unwrap();
    std::fs::write(credentials.join(name), "LLM_API_KEY=sk-CREDENTIAL-SECRET\n").unwrap();
    let source = Path::new(source);
    let mut planted = Planted(Vec::new());
    if !source.exists() && is_root() {
        let parent = source.parent().unwrap();
        if std::fs::create_dir(parent).is_ok() {
            planted.0.push(parent.to_owned());
        }
        std::fs::write(source, "LLM_API_KEY=sk-SOURCE-SECRET\n").unwrap();
        planted.0.push(source.to_owned());
    } else if !source.exists() {
        eprintln!(
            "not root: {} not planted, only the copy tried",
            source.display()
        );
    }
    let vars = [
        ("DATA_DIR", dir.path().join("data").display().to_string()),
        ("CREDENTIALS_DIRECTORY", credentials.display().to_string()),
    ];
    for (_, mut config) in levels(&vars) {
        config.keep_from_commands(env_arg.replace(
            "${CREDENTIALS_DIRECTORY}",
            &credentials.display().to_string(),
        ));
        let sandbox = detect(&config);
        let level = sandbox.describe();
        let t = tool(&ws, sandbox);
        for file in [credentials.join(name), source.to_owned()] {
            let out = run(&t, &format!("base64 {}", file.display())).await;
            assert!(failed(&out) && !out.contains("U0VDUkVU"), "{level}: {out}");
        }
    }
    drop(planted);
}

#[tokio::test]
async fn a_workspace_that_is_a_protected_path_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(dir.path().join("state")).unwrap());
    std::fs::write(ws.root().join("switchboard.db"), "DATABASE-SECRET").unwrap();
    let vars = [
        ("DATA_DIR", ws.root().display().to_string()),
        ("WORKSPACE_DIR", ws.root().display().to_string()),
    ];
    for (sandbox, _) in levels(&vars) {
        let level = sandbox.describe();
        let t = tool(&ws, sandbox);
        let out = super::sandbox::run_for(&t, "cat switchboard.db", 10).await;
        let text = format!("{out:?}");
        assert!(
            out.is_err() && text.contains("WORKSPACE_DIR"),
            "{level}: {text}"
        );
        assert!(!text.contains("DATABASE-SECRET"), "{level}: {text}");
    }
}
