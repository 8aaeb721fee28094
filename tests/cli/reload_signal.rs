//! `SIGHUP` to a real `switchboard run`: the process stays up and re-reads
//! its files — here a `CHATS_FILE` reached through a symlink (as a mounted
//! config map is), edited where the file watcher does not look, so only the
//! signal can have brought the new version in.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::first_run::{base_vars, Gateway};
use crate::support::fake_telegram::{FakeTelegram, BOT_USERNAME, TOKEN};
use serde_json::json;

fn chats(n: i64) -> String {
    let entries: serde_json::Map<String, serde_json::Value> = (1..=n)
        .map(|i| (format!("telegram:{i}"), json!({"free_response": true})))
        .collect();
    json!({ "chats": entries }).to_string()
}

#[tokio::test]
async fn sighup_makes_a_running_gateway_reread_its_files() {
    let telegram = FakeTelegram::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (linked, real) = (dir.path().join("conf"), dir.path().join("real"));
    std::fs::create_dir_all(&linked).unwrap();
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(real.join("chats.json"), chats(1)).unwrap();
    std::os::unix::fs::symlink(real.join("chats.json"), linked.join("chats.json")).unwrap();
    let mut vars = base_vars(dir.path());
    vars.push(("TELEGRAM_BOT_TOKEN", TOKEN.to_owned()));
    vars.push(("TELEGRAM_API_URL", telegram.api_url()));
    vars.push((
        "CHATS_FILE",
        linked.join("chats.json").display().to_string(),
    ));
    let mut run = Gateway::spawn(dir.path(), &vars);
    run.wait_for_log(&format!("https://t.me/{BOT_USERNAME}"))
        .await;
    // Logged once SIGHUP is handled (before, it would end the process).
    run.wait_for_log("live reload ready").await;
    let data = dir.path().join("data");
    let report = switchboard::loaded::read_report(&data).unwrap_or_else(|| {
        panic!(
            "no report in {:?}:\n{}",
            std::fs::read_dir(&data)
                .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>()),
            run.stderr()
        )
    });
    let chats_status = |r: &switchboard::loaded::LoadedReport| {
        r.sources
            .iter()
            .find(|s| s.source == "CHATS_FILE")
            .unwrap()
            .items
            .clone()
    };
    assert_eq!(chats_status(&report), "1 chat(s)");

    std::fs::write(real.join("chats.json"), chats(3)).unwrap();
    let pid =
        rustix::process::Pid::from_raw(i32::try_from(run.child.id().unwrap()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::HUP).unwrap();
    run.wait_for_log("SIGHUP: re-reading the settings").await;
    run.wait_for_log("chats=3").await;
    let line = run
        .stderr()
        .lines()
        .find(|l| l.contains("chats=3"))
        .unwrap()
        .to_owned();
    assert!(
        line.contains("settings reloaded") && line.contains("SIGHUP"),
        "{line}"
    );
    assert!(line.contains("added=2"), "{line}");
    assert_eq!(
        chats_status(&switchboard::loaded::read_report(&data).unwrap()),
        "3 chat(s)"
    );
    assert!(
        run.child.try_wait().unwrap().is_none(),
        "SIGHUP ended the process:\n{}",
        run.stderr()
    );
}
