//! Storage outages: a database that is locked past its busy timeout, or a
//! PostgreSQL server that goes away, delays answers but loses no message. The
//! held message's sender is told once; the answer comes when storage is back,
//! or from the next process when this one stops first (the local spool).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use support::e2e::{files_under, messages, tool_results, Harness};
use support::fake_llm::{last_user_text, FakeLlm, Reply};
use support::postgres::fresh_postgres;
use support::tcp_proxy::TcpProxy;
use switchboard_platform::{Activity, Platform, UserId};

const HELD: &str = "My storage is unavailable right now";

fn echo(llm: &FakeLlm) {
    llm.set_responder(|request| {
        Reply::text(&format!(
            "echo: {}",
            last_user_text(request).unwrap_or_default()
        ))
    });
}

/// Every text of the last model request, in order.
fn history(request: &serde_json::Value) -> Vec<String> {
    messages(request)
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

fn assert_in_history(request: &serde_json::Value, said: &[&str]) {
    let history = history(request);
    for said in said {
        assert!(
            history.iter().any(|m| m.contains(said)),
            "{said:?} missing from the history: {history:#?}"
        );
    }
}

#[tokio::test]
async fn a_message_sent_while_sqlite_is_locked_is_held_and_answered_after() {
    let h = Harness::start().await;
    echo(&h.llm);
    h.channel.dm(1, "before the lock").await;
    h.wait_for("the first answer", |l| l.has_text("echo: before the lock"))
        .await;
    h.idle().await;

    // Another process takes the write lock and keeps it — past the gateway's
    // 5 s busy timeout — until the gateway says it holds the message.
    let db = h.data_dir().join("switchboard.db");
    let url = format!("sqlite://{}", db.display());
    let other = lock_sqlite(&url).await;
    h.channel.dm(1, "during the lock").await;
    let log = h
        .wait_for("the notice that the message is held", |l| {
            l.any_contains(HELD)
        })
        .await;
    assert!(!log.any_contains("echo: during the lock"));
    unlock_sqlite(other).await;

    h.wait_for("the held message answered", |l| {
        l.has_text("echo: during the lock")
    })
    .await;
    h.channel.dm(1, "after the lock").await;
    let log = h
        .wait_for("the answer after the lock", |l| {
            l.has_text("echo: after the lock")
        })
        .await;
    assert_eq!(
        log.count_containing(HELD),
        1,
        "told once: {:#?}",
        log.texts()
    );
    // The conversation kept everything: the last request carries it all.
    let requests = h.requests(3).await;
    assert_in_history(
        &requests[2],
        &[
            "before the lock",
            "during the lock",
            "echo: during the lock",
            "after the lock",
        ],
    );
    h.stop().await;
}

/// Another process's connection holding the write lock of the SQLite file at
/// `url` until [`unlock_sqlite`].
async fn lock_sqlite(url: &str) -> sqlx::SqliteConnection {
    let mut other = <sqlx::SqliteConnection as sqlx::Connection>::connect(url)
        .await
        .unwrap();
    sqlx::query("BEGIN EXCLUSIVE")
        .execute(&mut other)
        .await
        .unwrap();
    other
}

async fn unlock_sqlite(mut other: sqlx::SqliteConnection) {
    sqlx::query("COMMIT").execute(&mut other).await.unwrap();
}

/// The messages waiting in the local spools under `data`.
fn spooled(data: &Path) -> Vec<PathBuf> {
    files_under(&data.join("spool"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect()
}

/// Sends a message while storage is down and stops the gateway before
/// storage comes back: the message is kept in the spool under `data`.
async fn held_then_stopped(h: Harness, data: &Path) {
    h.channel.dm(1, "kept across the restart").await;
    h.wait_for("the notice that the message is held", |l| {
        l.any_contains(HELD)
    })
    .await;
    assert_eq!(spooled(data).len(), 1, "kept on disk, not only in memory");
    h.stop().await;
    assert_eq!(spooled(data).len(), 1, "still kept after the stop");
}

/// Restarts on `vars` and checks that the message spooled by the stopped
/// gateway is answered by the new one, in its original chat, and spooled no more.
async fn spooled_message_is_answered_after_restart(vars: &[(&str, &str)], data: &Path) {
    let llm = FakeLlm::start().await;
    echo(&llm);
    let h = Harness::with_llm(vars, llm).await;
    let log = h
        .wait_for("the spooled message answered", |l| {
            l.has_text("echo: kept across the restart")
        })
        .await;
    let answer = log.find("echo: kept across the restart").unwrap();
    assert_eq!(answer.chat, support::test_channel::dm_chat(1));
    h.idle().await;
    assert!(spooled(data).is_empty(), "{:?}", spooled(data));
    assert_eq!(h.llm.requests().await.len(), 1, "answered once");
    h.stop().await;
}

/// A data directory with its SQLite file, for gateways started one after
/// another on it.
struct SqliteDir {
    _dir: tempfile::TempDir,
    data: PathBuf,
    url: String,
}

impl SqliteDir {
    fn new() -> SqliteDir {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let url = format!("sqlite://{}", data.join("switchboard.db").display());
        SqliteDir {
            _dir: dir,
            data,
            url,
        }
    }

    fn vars(&self) -> [(&str, &str); 2] {
        [
            ("DATA_DIR", self.data.to_str().unwrap()),
            ("DATABASE_URL", self.url.as_str()),
        ]
    }
}

#[tokio::test]
async fn a_message_held_while_sqlite_is_locked_survives_a_restart() {
    let disk = SqliteDir::new();
    let (data, url, vars) = (&disk.data, &disk.url, disk.vars());
    let h = Harness::with(&vars).await;
    echo(&h.llm);
    let other = lock_sqlite(url).await;
    held_then_stopped(h, data).await;
    unlock_sqlite(other).await;

    spooled_message_is_answered_after_restart(&vars, data).await;
}

#[tokio::test]
async fn messages_still_in_flight_at_shutdown_are_kept_for_the_next_start() {
    let disk = SqliteDir::new();
    let (data, url, vars) = (&disk.data, &disk.url, disk.vars());
    let h = Harness::with(&vars).await;
    let other = lock_sqlite(url).await;
    // The first message holds the inbound loop (its inbox row waits out the
    // busy timeout); the others wait in the channel from the adapter when the
    // gateway is told to stop.
    let said = ["one", "two", "three", "four", "five"];
    for text in said {
        h.channel.dm(1, text).await;
    }
    h.stop().await;
    assert_eq!(spooled(data).len(), said.len(), "every message kept");
    unlock_sqlite(other).await;

    let llm = FakeLlm::start().await;
    echo(&llm);
    let h = Harness::with_llm(&vars, llm).await;
    let log = h
        .wait_for("every kept message answered", |l| {
            said.iter().all(|t| l.has_text(&format!("echo: {t}")))
        })
        .await;
    let answers: Vec<String> = log
        .texts()
        .into_iter()
        .filter(|t| t.starts_with("echo: "))
        .collect();
    let expected: Vec<String> = said.iter().map(|t| format!("echo: {t}")).collect();
    assert_eq!(answers, expected, "once each, in order");
    h.stop().await;
}

#[tokio::test]
async fn a_message_held_during_a_postgres_outage_survives_a_restart() {
    let Ok(admin) = std::env::var("TEST_DATABASE_URL") else {
        eprintln!("TEST_DATABASE_URL unset: the PostgreSQL restart test is skipped");
        return;
    };
    let (proxy, url) = proxied_postgres(&admin).await;
    let shared = tempfile::tempdir().unwrap();
    let data = shared.path().join("data");
    let vars = [
        ("DATA_DIR", data.to_str().unwrap()),
        ("DATABASE_URL", url.as_str()),
    ];
    let h = Harness::with(&vars).await;
    echo(&h.llm);
    proxy.cut();
    held_then_stopped(h, &data).await;
    proxy.restore();

    spooled_message_is_answered_after_restart(&vars, &data).await;
}

/// A fresh PostgreSQL database reached through a proxy the test can cut.
async fn proxied_postgres(admin: &str) -> (TcpProxy, String) {
    let direct = fresh_postgres(admin).await;
    let server = url::Url::parse(&direct).unwrap();
    let target =
        tokio::net::lookup_host((server.host_str().unwrap(), server.port().unwrap_or(5432)))
            .await
            .unwrap()
            .next()
            .unwrap();
    let proxy = TcpProxy::start(target).await;
    let url = through(&direct, proxy.addr());
    (proxy, url)
}

/// `url` with its host and port replaced by `addr`.
fn through(url: &str, addr: SocketAddr) -> String {
    let mut url = url::Url::parse(url).unwrap();
    url.set_host(Some(&addr.ip().to_string())).unwrap();
    url.set_port(Some(addr.port())).unwrap();
    url.to_string()
}

#[tokio::test]
async fn a_postgres_outage_holds_messages_until_the_server_is_back() {
    let Ok(admin) = std::env::var("TEST_DATABASE_URL") else {
        eprintln!("TEST_DATABASE_URL unset: the PostgreSQL outage test is skipped");
        return;
    };
    let (proxy, url) = proxied_postgres(&admin).await;
    let h = Harness::with(&[("DATABASE_URL", url.as_str()), ("ACCESS_POLICY", "pairing")]).await;
    echo(&h.llm);
    for (user, name) in [(1, "Ann"), (3, "Cy")] {
        h.running
            .store
            .admit(Platform::Console, UserId(user), name, "operator")
            .await
            .unwrap();
    }
    h.channel.dm(1, "before the outage").await;
    h.wait_for("the first answer", |l| {
        l.has_text("echo: before the outage")
    })
    .await;
    h.idle().await;
    // Cy's command waits for approval across the outage.
    h.llm.push(Reply::tool_calls([(
        "call_1",
        "exec_command",
        serde_json::json!({"command": "echo survived-the-outage"}),
    )]));
    h.channel.dm(3, "run the echo").await;
    let card = h.channel.card().await;

    proxy.cut();
    // A press while the decision cannot be recorded is refused with a clear
    // word; the card stays pending (the waiting turn does not expire it).
    h.channel.press(3, &card.action('y')).await;
    h.wait_for("the press refused", |l| {
        l.answers()
            .iter()
            .any(|(_, _, a)| format!("{a:?}").contains("please try again"))
    })
    .await;
    // The paired user is still recognised and told their message is kept; a
    // stranger cannot be paired without the database and is told so.
    h.channel.dm(1, "during the outage").await;
    h.channel.dm(2, "hello, who are you?").await;
    let log = h
        .wait_for("the notice that the message is held", |l| {
            l.any_contains(HELD) && l.any_contains("can't check access right now")
        })
        .await;
    assert!(!log.any_contains("echo: during the outage"));
    assert!(!log.any_contains("pairing code"));

    proxy.restore();
    h.wait_for("the held message answered", |l| {
        l.has_text("echo: during the outage")
    })
    .await;
    h.channel.press(3, &card.action('y')).await;
    h.wait_for("the approved command's answer", |l| {
        l.has_text("echo: run the echo")
    })
    .await;
    let ran = h.llm.requests().await.iter().any(|r| {
        tool_results(r)
            .iter()
            .any(|(id, result)| id == "call_1" && result.contains("survived-the-outage"))
    });
    assert!(
        ran,
        "the command ran after the outage: {:?}",
        h.llm
            .requests()
            .await
            .iter()
            .flat_map(tool_results)
            .collect::<Vec<_>>()
    );
    h.channel.dm(1, "after the outage").await;
    let log = h
        .wait_for("the answer after the outage", |l| {
            l.has_text("echo: after the outage")
        })
        .await;
    assert_eq!(
        log.count_containing(HELD),
        1,
        "told once: {:#?}",
        log.texts()
    );
    assert!(
        !log.any_contains("echo: hello, who are you?"),
        "a stranger stays out"
    );
    let requests = h.llm.requests().await;
    let ann = requests
        .iter()
        .rfind(|r| last_user_text(r).as_deref() == Some("after the outage"))
        .unwrap();
    assert_in_history(
        ann,
        &[
            "before the outage",
            "during the outage",
            "echo: during the outage",
            "after the outage",
        ],
    );
    h.stop().await;
}

/// Sets (`+i`) or clears (`-i`) the immutable attribute of the existing
/// `paths`: the database turns read-only even for root, which ignores
/// permission bits. False when `chattr` is unavailable or refused (a
/// filesystem without the attribute); the caller then skips.
fn chattr(flag: &str, paths: &[PathBuf]) -> bool {
    let existing: Vec<&PathBuf> = paths.iter().filter(|p| p.exists()).collect();
    if existing.is_empty() {
        return true;
    }
    std::process::Command::new("chattr")
        .arg(flag)
        .args(existing)
        .status()
        .is_ok_and(|s| s.success())
}

/// The database file and its write-ahead log under `data`. Not the shared
/// memory file: it is mapped, and an immutable mapped file faults the process.
fn db_files(data: &Path) -> Vec<PathBuf> {
    vec![data.join("switchboard.db"), data.join("switchboard.db-wal")]
}

/// Makes the files read-only until dropped (also when the test fails, so the
/// temporary directory can be removed).
struct ReadOnly(Vec<PathBuf>);

impl ReadOnly {
    /// `None` (the test is skipped) when the attribute cannot be set here;
    /// CI sets `SWITCHBOARD_TEST_REQUIRE_CHATTR` so that a skip fails instead.
    fn set(data: &Path) -> Option<ReadOnly> {
        let files = db_files(data);
        if chattr("+i", &files) {
            return Some(ReadOnly(files));
        }
        crate::support::skip::unavailable(
            "SWITCHBOARD_TEST_REQUIRE_CHATTR",
            "chattr +i is unavailable here (needs root on ext4 or similar): the read-only database test",
        );
        None
    }

    fn clear(self) {}
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        chattr("-i", &self.0);
    }
}

#[tokio::test]
async fn a_gateway_started_on_a_read_only_database_recovers_once_it_is_writable() {
    let disk = SqliteDir::new();
    let vars = disk.vars();
    let h = Harness::with(&vars).await;
    echo(&h.llm);
    h.channel.dm(1, "before").await;
    h.wait_for("the first answer", |l| l.has_text("echo: before"))
        .await;
    h.idle().await;
    h.stop().await;

    let Some(read_only) = ReadOnly::set(&disk.data) else {
        return;
    };
    let h = Harness::with(&vars).await;
    echo(&h.llm);
    h.channel.dm(1, "while read-only").await;
    let log = h
        .wait_for("the notice that the message is held", |l| {
            l.any_contains(HELD)
        })
        .await;
    assert!(!log.any_contains("echo: while read-only"));

    // The operator fixes the permissions; no restart.
    read_only.clear();
    h.wait_for("the held message answered", |l| {
        l.has_text("echo: while read-only")
    })
    .await;
    h.channel.dm(1, "after").await;
    h.wait_for("the next answer", |l| l.has_text("echo: after"))
        .await;
    let requests = h.llm.requests().await;
    assert_in_history(
        requests.last().unwrap(),
        &["before", "echo: before", "while read-only", "after"],
    );
    h.stop().await;
}

/// Whether an answer containing `text` was given and its turn is over (the
/// chat went idle after it: the exchange was saved or held by then).
fn turn_over(log: &support::test_channel::Log, text: &str) -> bool {
    log.any_contains(text)
        && matches!(
            log.ops.last(),
            Some(support::test_channel::Op::Activity {
                activity: Activity::Idle,
                ..
            })
        )
}

/// Answers "echo: …" and, when asked `trigger`, turns the database read-only
/// just before answering: the turn ran, its exchange cannot be saved. The
/// files are made writable again when the returned slot is emptied.
fn read_only_during(
    llm: &FakeLlm,
    data: &Path,
    trigger: &'static str,
) -> std::sync::Arc<std::sync::Mutex<Option<ReadOnly>>> {
    let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
    let (data, held) = (data.to_owned(), std::sync::Arc::clone(&slot));
    llm.set_responder(move |request| {
        let said = last_user_text(request).unwrap_or_default();
        if said == trigger {
            *held.lock().unwrap() = ReadOnly::set(&data);
        }
        Reply::text(&format!("echo: {said}"))
    });
    slot
}

#[tokio::test]
async fn an_answer_given_while_the_database_turns_read_only_is_saved_when_it_is_back() {
    let disk = SqliteDir::new();
    let vars = disk.vars();
    let h = Harness::with(&vars).await;
    let read_only = read_only_during(&h.llm, &disk.data, "during");
    h.channel.dm(1, "before").await;
    h.wait_for("the first answer", |l| l.has_text("echo: before"))
        .await;
    h.idle().await;

    h.channel.dm(1, "during").await;
    let log = h
        .wait_for("the answer given while read-only", |l| {
            turn_over(l, "echo: during")
        })
        .await;
    let Some(files) = read_only.lock().unwrap().take() else {
        h.stop().await;
        return;
    };
    assert!(
        !log.any_contains("couldn't save"),
        "the exchange is held, not given up: {:#?}",
        log.texts()
    );
    files.clear();

    h.channel.dm(1, "after").await;
    h.wait_for("the next answer", |l| l.has_text("echo: after"))
        .await;
    let requests = h.llm.requests().await;
    assert_in_history(
        requests.last().unwrap(),
        &["before", "echo: before", "during", "echo: during", "after"],
    );
    // The late save is in the audit log too (retried until written, before
    // the session's next input).
    let events = h.running.store.audit().recent(50).await.unwrap();
    assert!(
        events.iter().any(|e| e.kind == "error.storage"
            && e.detail["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("saved late"))),
        "{events:#?}"
    );
    h.stop().await;
}

/// The exchanges waiting in the local spools under `data`.
fn spooled_exchanges(data: &Path) -> Vec<PathBuf> {
    files_under(&data.join("spool"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "exchange"))
        .collect()
}

#[tokio::test]
async fn an_answer_still_unsaved_at_shutdown_is_saved_by_the_next_start() {
    let disk = SqliteDir::new();
    let vars = disk.vars();
    let h = Harness::with(&vars).await;
    let read_only = read_only_during(&h.llm, &disk.data, "during");
    h.channel.dm(1, "before").await;
    h.wait_for("the first answer", |l| l.has_text("echo: before"))
        .await;
    h.idle().await;
    h.channel.dm(1, "during").await;
    h.wait_for("the answer given while read-only", |l| {
        turn_over(l, "echo: during")
    })
    .await;
    let Some(files) = read_only.lock().unwrap().take() else {
        h.stop().await;
        return;
    };
    assert_eq!(
        spooled_exchanges(&disk.data).len(),
        1,
        "kept on disk, not only in memory"
    );
    h.stop().await;
    assert_eq!(spooled_exchanges(&disk.data).len(), 1, "still kept");
    files.clear();

    let llm = FakeLlm::start().await;
    echo(&llm);
    let h = Harness::with_llm(&vars, llm).await;
    h.channel.dm(1, "after").await;
    h.wait_for("the answer after the restart", |l| {
        l.has_text("echo: after")
    })
    .await;
    let requests = h.llm.requests().await;
    assert_in_history(
        requests.last().unwrap(),
        &["before", "echo: before", "during", "echo: during", "after"],
    );
    assert!(spooled_exchanges(&disk.data).is_empty());
    h.stop().await;
}
