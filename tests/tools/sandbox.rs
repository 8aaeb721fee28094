//! The exec sandbox, attacked through the real path (`exec_command` →
//! `run_process` → the confined child): reads outside the workspace, writes
//! outside it, secrets under `/etc`, the gateway's own environment, TCP when
//! the network is off, inherited descriptors, memory and process hogs, and
//! processes that try to outlive their command. Every level is tried; one the
//! machine lacks is replaced by `auto`, and the test says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use switchboard::tools::{
    ExecConfig, ExecTool, Level, Limits, Network, ReadFileTool, Sandbox, SandboxConfig,
    SandboxMode, Tool, ToolContext, ToolError, Workspace,
};

/// A workspace, and beside it what a command must not reach: a fake
/// DATA_DIR with a database, a fake home with a key, a directory to write to.
struct Site {
    _root: tempfile::TempDir,
    ws: Arc<Workspace>,
    data_dir: PathBuf,
    home: PathBuf,
    outside: PathBuf,
}

fn site() -> Site {
    let root = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(root.path().join("ws")).unwrap());
    let data_dir = root.path().join("data");
    let home = root.path().join("home");
    let outside = root.path().join("outside");
    for d in [&data_dir, &home.join(".ssh"), &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(data_dir.join("switchboard.db"), "DATABASE-SECRET").unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "HOME-SECRET").unwrap();
    Site {
        _root: root,
        ws,
        data_dir,
        home,
        outside,
    }
}

/// The sandbox for `mode`, or `auto` (stated on stderr) when this machine
/// cannot provide it.
fn sandbox(mode: SandboxMode, network: Network, limits: Limits) -> Sandbox {
    let config = SandboxConfig {
        mode,
        network,
        limits,
        protect: Default::default(),
    };
    match Sandbox::detect(&config) {
        Ok(s) => s,
        Err(e) => {
            lacking(mode, &e);
            Sandbox::detect(&SandboxConfig {
                mode: SandboxMode::Auto,
                ..config.clone()
            })
            .unwrap()
        }
    }
}

/// Says that this machine lacks `mode` (its tests run at `auto` instead, or
/// at the levels it has);
/// a failure for bwrap when CI asks for it (`SWITCHBOARD_TEST_REQUIRE_BWRAP`).
pub(crate) fn lacking(mode: SandboxMode, why: &dyn std::fmt::Display) {
    let text = format!("the {mode:?} level is not tested here ({why})");
    if matches!(mode, SandboxMode::Bwrap) {
        crate::support::skip::unavailable("SWITCHBOARD_TEST_REQUIRE_BWRAP", &text);
    } else {
        eprintln!("skipped: {text}");
    }
}

/// The confining levels under test.
fn levels(network: Network, limits: Limits) -> Vec<Sandbox> {
    let out: Vec<Sandbox> = [SandboxMode::Landlock, SandboxMode::Bwrap]
        .into_iter()
        .map(|m| sandbox(m, network, limits))
        .collect();
    for s in &out {
        assert_ne!(
            s.level(),
            &Level::None,
            "no sandbox level works on this machine: commands would run unconfined"
        );
    }
    out
}

pub(crate) fn tool(ws: &Arc<Workspace>, sandbox: Sandbox) -> ExecTool {
    let mut config = ExecConfig::new(Arc::clone(ws));
    config.sandbox = Arc::new(sandbox);
    ExecTool::new(config)
}

pub(crate) async fn run(t: &ExecTool, command: &str) -> String {
    run_for(t, command, 60).await.unwrap()
}

pub(crate) async fn run_for(t: &ExecTool, command: &str, secs: u64) -> Result<String, ToolError> {
    t.call(
        json!({ "command": command, "timeout_secs": secs }),
        &ToolContext::default(),
    )
    .await
}

pub(crate) fn failed(out: &str) -> bool {
    !out.starts_with("exit code: 0")
}

#[tokio::test]
async fn commands_reach_only_the_workspace_and_their_temp_dir() {
    let s = site();
    for sandbox in levels(Network::Allow, Limits::default()) {
        let level = sandbox.describe();
        let t = tool(&s.ws, sandbox);
        for target in [
            s.data_dir.join("switchboard.db"),
            s.home.join(".ssh/id_ed25519"),
            PathBuf::from("/etc/shadow"),
            PathBuf::from("/etc/gshadow"),
        ] {
            let out = run(&t, &format!("cat {}", target.display())).await;
            assert!(failed(&out), "{level}: read {}: {out}", target.display());
            assert!(
                !out.contains("SECRET") && !out.contains("root:"),
                "{level}: {out}"
            );
        }
        let out = run(&t, &format!("ls {}", s.data_dir.display())).await;
        assert!(
            failed(&out) && !out.contains("switchboard.db"),
            "{level}: {out}"
        );
        let escape = s.outside.join("planted");
        for command in [
            format!("echo x > {}", escape.display()),
            format!("cd / && echo x > {}", escape.display()),
            format!(
                "ln -s {} link && echo x > link/planted",
                s.outside.display()
            ),
        ] {
            let out = run(&t, &command).await;
            assert!(failed(&out), "{level}: {command}: {out}");
            assert!(!escape.exists(), "{level}: {command} wrote outside");
        }
        // What they may do still works.
        let out = run(
            &t,
            "echo inside > made.txt && cat made.txt && echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" \
             && [ \"$HOME\" = \"$TMPDIR\" ] && echo cache > \"$HOME/.cache-file\" \
             && grep -c root /etc/passwd && ls /usr/bin | grep -c sh",
        )
        .await;
        assert!(!failed(&out), "{level}: {out}");
        assert!(out.contains("inside\ntmp\n"), "{level}: {out}");
        assert_eq!(
            std::fs::read_to_string(s.ws.root().join("made.txt")).unwrap(),
            "inside\n"
        );
    }
}

#[tokio::test]
async fn the_gateway_process_is_out_of_reach() {
    let s = site();
    let me = std::process::id();
    for sandbox in levels(Network::Allow, Limits::default()) {
        let level = sandbox.describe();
        let t = tool(&s.ws, sandbox);
        // What the gateway was started with (`--env-file PATH` in a
        // deployment): this test binary's path.
        let argv0 = std::env::args().next().unwrap();
        for file in ["environ", "cmdline", "maps", "fd/0", "status"] {
            let out = run(&t, &format!("cat /proc/{me}/{file} | tr '\\0' '\\n'")).await;
            assert!(!out.contains("PATH="), "{level}: /proc/{me}/{file}: {out}");
            assert!(!out.contains(&argv0), "{level}: /proc/{me}/{file}: {out}");
        }
        let out = run(&t, &format!("ls /proc/{me}/")).await;
        assert!(failed(&out) && !out.contains("cmdline"), "{level}: {out}");
        let out = run(&t, &format!("kill -0 {me} && echo signalled")).await;
        assert!(!out.contains("signalled"), "{level}: {out}");
    }
}

/// A perl one-liner (perl-base is on every Debian) that opens a Unix socket
/// to `path` and prints `connected-unix`.
pub(crate) fn unix_connect(path: &std::path::Path) -> String {
    format!(
        "perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => $ARGV[0]) or die \"unix: $!\\n\"; \
         print \"connected-unix\\n\"' {} 2>&1",
        path.display()
    )
}

/// Sends `datagram` over UDP to 127.0.0.1:`port` with perl.
fn udp_send(port: u16, datagram: &str) -> String {
    format!(
        "perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(PeerAddr => \"127.0.0.1:$ARGV[0]\", \
         Proto => \"udp\") or die \"udp: $!\\n\"; $s->send(\"{datagram}\") or die \"send: $!\\n\"' {port} 2>&1"
    )
}

#[tokio::test]
async fn network_none_blocks_tcp_udp_and_unix_sockets_and_allow_permits_tcp() {
    let s = site();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    // A Unix socket outside the workspace, like PostgreSQL's or an SSH agent's.
    let unix_path = s.outside.join("service.sock");
    let _unix = std::os::unix::net::UnixListener::bind(&unix_path).unwrap();
    let postgres = std::path::Path::new("/run/postgresql/.s.PGSQL.5432");
    let tcp = |port: u16| {
        format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected-tcp' 2>&1")
    };
    for sandbox in levels(Network::None, Limits::default()) {
        let level = sandbox.describe();
        assert_eq!(sandbox.network(), Network::None);
        let t = tool(&s.ws, sandbox);
        let out = run(&t, &tcp(port)).await;
        assert!(!out.contains("connected-tcp"), "{level}: {out}");
        let out = run(
            &t,
            "bash -c 'exec 3<>/dev/tcp/1.1.1.1/80 && echo connected-tcp' 2>&1",
        )
        .await;
        assert!(!out.contains("connected-tcp"), "{level}: {out}");
        let out = run(&t, &unix_connect(&unix_path)).await;
        assert!(!out.contains("connected-unix"), "{level}: {out}");
        if postgres.exists() {
            let out = run(&t, &unix_connect(postgres)).await;
            assert!(
                !out.contains("connected-unix"),
                "{level}: PostgreSQL: {out}"
            );
        } else {
            eprintln!(
                "no PostgreSQL socket at {}: only the test's own Unix socket tried",
                postgres.display()
            );
        }
        let out = run(&t, &udp_send(udp_port, "from-the-sandbox")).await;
        let mut buf = [0u8; 64];
        assert!(
            udp.recv(&mut buf).is_err(),
            "{level}: a datagram arrived: {out}"
        );
    }
    for sandbox in levels(Network::Allow, Limits::default()) {
        let level = sandbox.describe();
        let t = tool(&s.ws, sandbox);
        let out = run(&t, &tcp(port)).await;
        assert!(out.contains("connected-tcp"), "{level}: {out}");
        // The positive control for the UDP check above.
        let out = run(&t, &udp_send(udp_port, "allowed")).await;
        assert!(!failed(&out), "{level}: {out}");
        let mut buf = [0u8; 64];
        let mut got = None;
        for _ in 0..50 {
            if let Ok(n) = udp.recv(&mut buf) {
                got = Some(String::from_utf8_lossy(&buf[..n]).into_owned());
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(got.as_deref(), Some("allowed"), "{level}: {out}");
    }
}

/// Prints the descriptors open in the command, without `/proc/self/fd`
/// (out of reach at the Landlock level): each one `dup` accepts.
pub(crate) const OPEN_FDS: &str = "perl -MPOSIX -e 'for (0..4095) { my $d = POSIX::dup($_); \
     if (defined $d) { print \"$_ \"; POSIX::close($d) } }'";

#[tokio::test]
async fn children_inherit_no_descriptors_but_stdio() {
    let s = site();
    // What a gateway holds open: a listener, a database file, a log; and one
    // descriptor deliberately left inheritable (as C code might).
    let _listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let _db = std::fs::File::create(s.data_dir.join("open.db")).unwrap();
    let leaky = std::fs::File::create(s.data_dir.join("leaky.log")).unwrap();
    rustix::io::fcntl_setfd(&leaky, rustix::io::FdFlags::empty()).unwrap();
    let mut sandboxes = levels(Network::Allow, Limits::default());
    sandboxes.push(sandbox(
        SandboxMode::None,
        Network::Allow,
        Limits::default(),
    ));
    for sandbox in sandboxes {
        let level = sandbox.describe();
        let out = run(&tool(&s.ws, sandbox), OPEN_FDS).await;
        let fds: Vec<u32> = out
            .split("output:\n")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .map(|f| f.parse().unwrap())
            .collect();
        assert_eq!(fds, [0, 1, 2], "{level}: {out}");
    }
}

pub(crate) fn is_root() -> bool {
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

#[tokio::test]
async fn limits_stop_memory_hogs_cpu_burners_and_huge_files() {
    let s = site();
    let limits = Limits {
        address_space: 256 << 20,
        cpu_secs: 1,
        file_size: 1 << 20,
        ..Limits::default()
    };
    // Doubles a string to 512 MiB (1 GiB and more while copying).
    let hog = "awk 'BEGIN { s = \"a\"; for (i = 0; i < 29; i++) s = s s; print length(s) }'";
    for sandbox in levels(Network::Allow, limits) {
        let level = sandbox.describe();
        let t = tool(&s.ws, sandbox);
        let out = run(&t, hog).await;
        assert!(failed(&out) && !out.contains("536870912"), "{level}: {out}");
        // Nor can the command lift the limit, even when the gateway is root.
        let out = run(&t, "ulimit -v unlimited && echo lifted").await;
        assert!(!out.contains("lifted"), "{level}: {out}");
        // A busy loop is killed after a second of CPU (SIGXCPU, SIGKILL; bwrap
        // reports it as exit code 128 + signal), long before its timeout (an
        // `Err`).
        let out = run_for(&t, "while :; do :; done", 60).await.unwrap();
        assert!(
            ["killed by signal", "exit code: 137", "exit code: 152"]
                .iter()
                .any(|p| out.starts_with(p)),
            "{level}: {out}"
        );
        // A 2 MiB file stops at the 1 MiB file size limit.
        let out = run(&t, "head -c 2097152 /dev/zero > big; wc -c < big").await;
        assert!(out.contains("1048576"), "{level}: {out}");
        assert_eq!(
            std::fs::metadata(s.ws.root().join("big")).unwrap().len(),
            1 << 20,
            "{level}"
        );
    }
}

/// Processes whose command line contains `marker`.
fn alive(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(entry.path().display().to_string());
        }
    }
    found
}

/// Waits (bounded) for every process carrying `marker` to be gone.
async fn gone(marker: &str) -> bool {
    for _ in 0..100 {
        if alive(marker).is_empty() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn fork_bombs_stop_at_the_process_limit_or_die_with_the_command() {
    let s = site();
    let limits = Limits {
        processes: 64,
        ..Limits::default()
    };
    for (i, sandbox) in levels(Network::Allow, limits).into_iter().enumerate() {
        let level = sandbox.describe();
        let marker = format!("1000.{}{i}", std::process::id());
        let bomb = format!(
            "n=0; for i in $(seq 300); do sleep {marker} > /dev/null 2>&1 & n=$((n+1)); done; \
             echo started $n; wait"
        );
        let out = run_for(&tool(&s.ws, sandbox), &bomb, 3).await;
        let text = match &out {
            Ok(o) => o.clone(),
            Err(e) => e.for_model(),
        };
        if is_root() {
            eprintln!(
                "{level}: running as root, and RLIMIT_NPROC does not bind uid 0: \
                 checking that the timeout killed every process instead"
            );
            assert!(text.contains("timed out"), "{level}: {text}");
        } else {
            assert!(
                text.contains("fork") || text.contains("Resource temporarily unavailable"),
                "{level}: {text}"
            );
        }
        assert!(gone(&marker).await, "{level}: {:?} survive", alive(&marker));
    }
}

#[tokio::test]
async fn background_children_die_with_their_command() {
    let s = site();
    for (i, sandbox) in levels(Network::Allow, Limits::default())
        .into_iter()
        .enumerate()
    {
        let level = sandbox.describe();
        let t = tool(&s.ws, sandbox.clone());
        // Left running with the output open: killed after the command's timeout.
        let marker = format!("1000.{}{i}1", std::process::id());
        let out = run_for(&t, &format!("sleep {marker} & echo started; wait"), 2).await;
        assert!(out.is_err(), "{level}: {out:?}");
        assert!(gone(&marker).await, "{level}: {:?} survive", alive(&marker));
        // Daemons: a new session (setsid leaves the process group) and a
        // double fork (the daemon's parent exits at once); the command then
        // outstays its timeout.
        let (daemon, orphan) = (
            format!("1000.{}{i}2", std::process::id()),
            format!("1000.{}{i}3", std::process::id()),
        );
        let out = run_for(
            &t,
            &format!(
                "setsid sleep {daemon} > /dev/null 2>&1 & \
                 (setsid sleep {orphan} > /dev/null 2>&1 &); echo started; sleep 100"
            ),
            2,
        )
        .await;
        assert!(
            matches!(&out, Err(e) if e.for_model().contains("timed out")),
            "{level}: {out:?}"
        );
        for marker in [&daemon, &orphan] {
            assert!(gone(marker).await, "{level}: {:?} survive", alive(marker));
        }
    }
}

#[tokio::test]
async fn the_card_says_what_confines_the_command() {
    let s = site();
    let t = tool(
        &s.ws,
        sandbox(SandboxMode::Landlock, Network::None, Limits::default()),
    );
    let card = t.approval_summary(&json!({ "command": "ls" })).await;
    assert!(card.contains("sandbox: "), "{card}");
    assert!(card.contains("no network"), "{card}");
    let t = tool(
        &s.ws,
        sandbox(SandboxMode::None, Network::Allow, Limits::default()),
    );
    let card = t.approval_summary(&json!({ "command": "ls" })).await;
    assert!(card.contains("sandbox: NONE"), "{card}");
}

#[tokio::test]
async fn a_planted_symlink_leads_neither_the_next_command_nor_read_file_out() {
    let s = site();
    let read = ReadFileTool::new(Arc::clone(&s.ws));
    for sandbox in levels(Network::Allow, Limits::default()) {
        let level = sandbox.describe();
        let t = tool(&s.ws, sandbox);
        let db = s.data_dir.join("switchboard.db");
        let out = run(
            &t,
            &format!(
                "ln -sf {} db-link && ln -sf /etc/shadow shadow-link",
                db.display()
            ),
        )
        .await;
        assert!(!failed(&out), "{level}: {out}");
        for link in ["db-link", "shadow-link"] {
            let out = run(&t, &format!("cat {link}")).await;
            assert!(failed(&out) && !out.contains("SECRET"), "{level}: {out}");
            let got = read
                .call(json!({ "path": link }), &ToolContext::default())
                .await;
            assert!(
                got.as_ref().is_err() && !format!("{got:?}").contains("SECRET"),
                "{level}: read_file {link}: {got:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_command_approved_in_a_running_gateway_sees_only_stdio() {
    use crate::support::e2e::{tool_result, Harness};
    use crate::support::fake_llm::Reply;
    // The real gateway: its database, the fake model's connections, its
    // tasks; the command is proposed by the model and approved on a card.
    let h = Harness::with(&[("EXEC_NETWORK", "none")]).await;
    h.llm.push(Reply::tool_calls([(
        "call_fd",
        "exec_command",
        json!({ "command": OPEN_FDS }),
    )]));
    h.llm.push(Reply::text("Listed."));
    h.channel.dm(1, "list your descriptors").await;
    let card = h.channel.card().await;
    assert!(card.text.contains("no network"), "{}", card.text);
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Listed.")).await;
    let result = tool_result(&h.requests(2).await[1], "call_fd");
    let fds: Vec<&str> = result
        .split("output:\n")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(fds, ["0", "1", "2"], "{result}");
    h.stop().await;
}
