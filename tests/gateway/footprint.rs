//! Once a real `switchboard run` has settled, the pages only its start-up
//! needed leave its resident set (src/footprint.rs) — and the released code
//! runs again when the next message comes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::{Duration, Instant};
use support::fake_llm::{FakeLlm, Reply};
use support::fake_telegram::{FakeTelegram, FakeUser, Where, TOKEN};
use support::process::{Gateway, Setup};

const WAIT: Duration = Duration::from_secs(60);

/// Resident KiB of the process's own executable mapped as code (`r-xp`).
fn resident_code_kib(pid: u32) -> u64 {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    let exe = exe.to_string_lossy().into_owned();
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let mut in_code = false;
    let mut total = 0;
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields
            .first()
            .is_some_and(|f| f.contains('-') && !f.ends_with(':'))
        {
            in_code = fields.get(1) == Some(&"r-xp") && line.trim_end().ends_with(exe.as_str());
        } else if in_code && fields.first() == Some(&"Rss:") {
            total += fields[1].parse::<u64>().unwrap();
        }
    }
    total
}

/// The `code_kib` of the "start-up pages released" line, once it is logged.
async fn released_code_kib(gateway: &Gateway) -> u64 {
    let start = Instant::now();
    loop {
        let log = gateway.log();
        if let Some(line) = log.lines().find(|l| l.contains("start-up pages released")) {
            let kib = line.split("code_kib=").nth(1).unwrap_or_default();
            let digits: String = kib.chars().take_while(char::is_ascii_digit).collect();
            return digits.parse().unwrap();
        }
        assert!(start.elapsed() < WAIT, "never released\n{log}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn start_up_pages_leave_the_resident_set_and_the_next_message_is_answered() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Reply::text("Still here."));
    let tg = FakeTelegram::start_lenient().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut setup = Setup::new(home.path(), &llm.base_url(), None);
    setup
        .set("TELEGRAM_BOT_TOKEN", TOKEN)
        .set("TELEGRAM_API_URL", &tg.api_url());
    let mut gateway = Gateway::start(&setup, None, home.path());
    let released = released_code_kib(&gateway).await;
    let pid = gateway.pid().unwrap();
    let resident = resident_code_kib(pid);
    assert!(
        released > 0 && resident < released,
        "code resident before the release {released} KiB, after {resident} KiB"
    );

    let user = FakeUser::new(7_101, "Ann");
    tg.message(Where::Dm, &user, "are you there?");
    let chat = tg.ensure_chat(Where::Dm, &user);
    let answered = tg
        .wait_until(WAIT, |tg| {
            tg.bot_messages(chat)
                .iter()
                .any(|m| m.text == "Still here.")
        })
        .await;
    assert!(answered, "{}", gateway.log());
    gateway.stop().await;
}
