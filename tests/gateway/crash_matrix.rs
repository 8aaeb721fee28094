//! Nothing lost, nothing twice: a real `switchboard run` kills itself
//! (`SIGKILL`) at each failure point of a message's path (`src/failpoint.rs`)
//! while one user's three orders are in flight, and a second process on the
//! same data takes over. Every order must end answered once — or, where its
//! tool had started or its answer had begun, with one notice and no second
//! run — and the tool's effect (a POST the fake counts) must never happen
//! twice. Telegram long polling and webhook, Discord; SQLite, and PostgreSQL
//! when `TEST_DATABASE_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use std::path::Path;
use std::time::Duration;
use support::effects::{order_responder, Effects};
use support::fake_discord::{FakeDiscord, UserMessage, TOKEN as DISCORD_TOKEN};
use support::fake_llm::FakeLlm;
use support::fake_telegram::{post_webhook, FakeTelegram, FakeUser, Where, TOKEN};
use support::process::{free_port, Gateway, Setup};

/// The points, in path order.
const POINTS: &[&str] = &[
    "received",
    "kept",
    "confirmed",
    "queued",
    "turn_started",
    "model_answered",
    "tool_started",
    "tool_finished",
    "answer_sent",
    "answer_recorded",
];
const ORDERS: [&str; 3] = ["1", "2", "3"];
/// Generous: a debug build, several processes on two cores.
const PATIENCE: Duration = Duration::from_secs(90);
const DM: u64 = 7_007;
const DISCORD_USER: u64 = 4_004;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intake {
    Polling,
    Webhook,
    Discord,
}

/// What one order's chat shows.
#[derive(Debug, Default)]
struct Seen {
    /// Answers "done N".
    answers: usize,
}

/// The chat and the platform, as one case sees them.
enum Fake {
    Telegram(FakeTelegram, FakeUser),
    Discord(FakeDiscord),
}

impl Fake {
    async fn start(intake: Intake) -> Fake {
        match intake {
            Intake::Discord => {
                let discord = FakeDiscord::start().await;
                discord.add_dm(DM);
                Fake::Discord(discord)
            }
            _ => Fake::Telegram(
                FakeTelegram::start_lenient().await.unwrap(),
                FakeUser::new(7_001, "Ann"),
            ),
        }
    }

    /// The bot's messages in the user's chat, as text.
    fn bot_texts(&self) -> Vec<String> {
        match self {
            Fake::Telegram(tg, user) => {
                let chat = tg.ensure_chat(Where::Dm, user);
                tg.bot_messages(chat).into_iter().map(|m| m.text).collect()
            }
            Fake::Discord(discord) => discord
                .bot_messages(DM)
                .into_iter()
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect(),
        }
    }

    fn seen(&self, order: &str) -> Seen {
        let done = format!("done {order}");
        Seen {
            answers: self
                .bot_texts()
                .iter()
                .filter(|t| t.trim_end().lines().last() == Some(done.as_str()))
                .count(),
        }
    }

    fn notices(&self) -> usize {
        self.bot_texts()
            .iter()
            .filter(|t| t.starts_with("⚠️"))
            .count()
    }
}

/// One case: the fakes, the data directory and the process environment.
struct Case {
    point: &'static str,
    intake: Intake,
    fake: Fake,
    effects: Effects,
    _llm: FakeLlm,
    home: tempfile::TempDir,
    setup: Setup,
    /// The webhook ports deliveries go to (webhook mode), in turn.
    hooks: Vec<u16>,
}

impl Case {
    async fn new(point: &'static str, intake: Intake, database_url: Option<String>) -> Case {
        let llm = FakeLlm::start().await;
        llm.set_responder(order_responder);
        let effects = Effects::start().await;
        let fake = Fake::start(intake).await;
        let home = tempfile::tempdir().unwrap();
        let mut setup = Setup::new(home.path(), &llm.base_url(), database_url.as_deref());
        setup
            .set(
                "HTTP_TOOLS_FILE",
                &effects.tools_file(home.path()).display().to_string(),
            )
            .set("WEB_FETCH_ALLOW", "127.0.0.1");
        let mut hooks = Vec::new();
        match &fake {
            Fake::Telegram(tg, _) => {
                setup
                    .set("TELEGRAM_BOT_TOKEN", TOKEN)
                    .set("TELEGRAM_API_URL", &tg.api_url());
                if intake == Intake::Webhook {
                    let port = free_port();
                    setup
                        .set("TELEGRAM_WEBHOOK_URL", "https://bot.example.test/hook")
                        .set("TELEGRAM_WEBHOOK_LISTEN", &format!("127.0.0.1:{port}"))
                        .set("TELEGRAM_WEBHOOK_SECRET", "crash-secret");
                    hooks.push(port);
                }
            }
            Fake::Discord(discord) => {
                setup
                    .set("DISCORD_BOT_TOKEN", DISCORD_TOKEN)
                    .set("DISCORD_API_URL", &discord.api_url);
            }
        }
        Case {
            point,
            intake,
            fake,
            effects,
            _llm: llm,
            home,
            setup,
            hooks,
        }
    }

    fn start(&self, failpoint: Option<&str>) -> Gateway {
        Gateway::start(&self.setup, failpoint, self.home.path())
    }

    /// The user sends the three orders (as the platform delivers them:
    /// Telegram holds polled updates, the webhook is retried until it
    /// answers 200, Discord dispatches to the connected shard).
    async fn send_orders(&self) {
        match &self.fake {
            Fake::Telegram(tg, user) if self.intake == Intake::Polling => {
                for n in ORDERS {
                    tg.message(Where::Dm, user, &format!("order {n}"));
                }
            }
            Fake::Telegram(tg, user) => {
                let urls: Vec<String> = self
                    .hooks
                    .iter()
                    .map(|port| format!("http://127.0.0.1:{port}/hook"))
                    .collect();
                for (i, n) in ORDERS.iter().enumerate() {
                    let mut update = tg.message_update(Where::Dm, user, &format!("order {n}"));
                    update["update_id"] = json!(5_000 + i);
                    deliver_until_ok(&urls, update.to_string()).await;
                }
            }
            Fake::Discord(discord) => {
                assert!(discord.wait_ready(1).await, "the shard never became ready");
                for n in ORDERS {
                    let sent = discord.send_message(UserMessage::new(
                        DM,
                        DISCORD_USER,
                        format!("order {n}"),
                    ));
                    assert!(sent.is_some(), "no session to dispatch to");
                }
            }
        }
    }

    /// What order 1 must end with at this point: (answers, effects, notices).
    fn expected_first(&self) -> (usize, usize, usize) {
        match self.point {
            // Its tool was recorded as started, then the process died before
            // (or after) running it: not run again, the chat told.
            "tool_started" => (0, 0, 1),
            "tool_finished" => (0, 1, 1),
            // The answer was out: not sent again; the chat is told a restart
            // cut in (it may look complete).
            "answer_sent" => (1, 1, 1),
            // Nothing had been shown or done: answered once.
            _ => (1, 1, 0),
        }
    }

    fn first(&self) -> (usize, usize, usize) {
        (
            self.fake.seen("1").answers,
            self.effects.count("1"),
            self.fake.notices(),
        )
    }

    /// Waits until every order has its outcome in the chat: orders 2 and 3
    /// answered, order 1 as its point says (or past it: `check` tells).
    async fn wait_for_outcomes(&self, gateway: &Gateway) {
        let (answers, effects, notices) = self.expected_first();
        let settled = || {
            let (a, e, n) = self.first();
            ORDERS[1..].iter().all(|n| self.fake.seen(n).answers > 0)
                && a >= answers
                && e >= effects
                && n >= notices
        };
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !settled() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "[{:?} {}] not every order got its outcome: {:?}\nlog:\n{}",
                self.intake,
                self.point,
                self.fake.bot_texts(),
                gateway.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The invariants, and what each point promises on top.
    fn check(&self) {
        let ctx = format!(
            "[{:?} {}] chat: {:?}",
            self.intake,
            self.point,
            self.fake.bot_texts()
        );
        for n in ORDERS {
            let seen = self.fake.seen(n);
            let effects = self.effects.count(n);
            assert!(seen.answers <= 1, "{ctx}: order {n} answered twice");
            assert!(
                effects <= 1,
                "{ctx}: order {n}'s effect ran {effects} times"
            );
            if seen.answers == 1 {
                assert_eq!(effects, 1, "{ctx}: order {n} answered without its effect");
            }
        }
        // The later orders are answered normally whatever happened to the first.
        for n in &ORDERS[1..] {
            assert_eq!(self.fake.seen(n).answers, 1, "{ctx}: order {n}");
        }
        assert_eq!(
            self.first(),
            self.expected_first(),
            "{ctx}: (answers, effects, notices) of order 1"
        );
    }
}

/// POSTs a webhook delivery until a gateway answers 200 (as Telegram
/// retries, through a load balancer to any of `urls`), across the crash and
/// the restart.
async fn deliver_until_ok(urls: &[String], body: String) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    for url in urls.iter().cycle() {
        if let Ok(200) = post_webhook(url, Some("crash-secret"), body.clone()).await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the webhook never took a delivery"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One point: the first process dies there, the second takes over.
async fn run_case(point: &'static str, intake: Intake, database_url: Option<String>) {
    let case = Case::new(point, intake, database_url).await;
    let mut first = case.start(Some(point));
    // Webhook deliveries go on (retried) while the first process dies.
    let sending = case.send_orders();
    let died = async {
        let signal = first.ended(PATIENCE).await;
        assert_eq!(
            signal,
            Some(9),
            "[{intake:?} {point}] the process did not die at its failure point; log:\n{}",
            first.log()
        );
    };
    if intake == Intake::Webhook {
        // The second process starts once the first is dead; the sender keeps
        // retrying meanwhile.
        let restart = async {
            died.await;
            case.start(None)
        };
        let (_, second) = tokio::join!(sending, restart);
        finish(&case, second).await;
    } else {
        sending.await;
        died.await;
        let second = case.start(None);
        finish(&case, second).await;
    }
}

async fn finish(case: &Case, mut second: Gateway) {
    case.wait_for_outcomes(&second).await;
    // Anything sent twice would come now, right behind.
    tokio::time::sleep(Duration::from_millis(700)).await;
    second.stop().await;
    case.check();
}

/// Every point for one intake and database, three cases at a time
/// (Discord has no `confirmed`: its marks are written every few seconds).
async fn matrix(intake: Intake, database: Database) {
    use futures::StreamExt;
    let Some(admin) = database.admin() else {
        return;
    };
    let points = POINTS
        .iter()
        .filter(|p| intake != Intake::Discord || **p != "confirmed");
    futures::stream::iter(points.map(|point| {
        let admin = admin.clone();
        async move {
            let url = match admin {
                Some(admin) => Some(support::postgres::fresh_postgres(&admin).await),
                None => None,
            };
            run_case(point, intake, url).await;
        }
    }))
    .buffer_unordered(3)
    .collect::<Vec<()>>()
    .await;
}

#[derive(Clone, Copy)]
enum Database {
    Sqlite,
    Postgres,
}

impl Database {
    /// `Some(None)`: SQLite; `Some(Some(url))`: PostgreSQL at `url`; `None`:
    /// PostgreSQL asked for but `TEST_DATABASE_URL` unset (skipped).
    fn admin(self) -> Option<Option<String>> {
        match self {
            Database::Sqlite => Some(None),
            Database::Postgres => std::env::var("TEST_DATABASE_URL").ok().map(Some),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_polling_on_sqlite_loses_nothing_at_any_crash() {
    matrix(Intake::Polling, Database::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_polling_on_postgres_loses_nothing_at_any_crash() {
    matrix(Intake::Polling, Database::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_webhook_on_sqlite_loses_nothing_at_any_crash() {
    matrix(Intake::Webhook, Database::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_webhook_on_postgres_loses_nothing_at_any_crash() {
    matrix(Intake::Webhook, Database::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discord_loses_nothing_at_any_crash() {
    matrix(Intake::Discord, Database::Sqlite).await;
}

/// A message whose turn takes the process down twice is set aside with a
/// notice the third time, instead of taking the gateway down for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_stops_the_gateway_twice_is_set_aside() {
    let case = Case::new("turn_started", Intake::Polling, None).await;
    let Fake::Telegram(tg, user) = &case.fake else {
        unreachable!()
    };
    tg.message(Where::Dm, user, "order 9");
    for attempt in 1..=2 {
        let mut doomed = case.start(Some("turn_started"));
        let signal = doomed.ended(PATIENCE).await;
        assert_eq!(signal, Some(9), "attempt {attempt}; log:\n{}", doomed.log());
    }
    let mut third = case.start(None);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while case.fake.notices() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no notice; log:\n{}",
            third.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A later message is answered as usual.
    tg.message(Where::Dm, user, "order 10");
    while case.fake.seen("10").answers == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no answer; log:\n{}",
            third.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    third.stop().await;
    let texts = case.fake.bot_texts();
    assert!(
        texts.iter().any(|t| t.contains("set it aside")),
        "the set-aside notice: {texts:?}"
    );
    assert_eq!(case.fake.seen("9").answers, 0);
    assert_eq!(case.effects.count("9"), 0);
    let audit = third_audit(case.home.path()).await;
    assert!(audit.contains("inbox.poisoned"), "{audit}");
}

async fn third_audit(home: &Path) -> String {
    let url = format!("sqlite://{}", home.join("data/switchboard.db").display());
    let store = switchboard::store::Store::open(&url).await.unwrap();
    let events = store
        .events_page(&switchboard::store::EventFilter::default(), 100, 0)
        .await
        .unwrap();
    events
        .items
        .iter()
        .map(|e| e.kind.clone())
        .collect::<Vec<_>>()
        .join(",")
}

/// Two processes on one PostgreSQL database behind a webhook each: the one
/// holding the queued messages is killed and never restarted; the other
/// takes them over at its next liveness check (seconds, not a lease).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_takes_over_a_dead_processs_queue_without_a_restart() {
    let Ok(admin) = std::env::var("TEST_DATABASE_URL") else {
        return;
    };
    let url = support::postgres::fresh_postgres(&admin).await;
    let mut case = Case::new("queued", Intake::Webhook, Some(url)).await;
    let mut peer_setup = case.setup.clone();
    let peer_port = free_port();
    // The balancer: the doomed process first, the peer once it is gone.
    case.hooks.push(peer_port);
    peer_setup.set("TELEGRAM_WEBHOOK_LISTEN", &format!("127.0.0.1:{peer_port}"));
    let peer_home = tempfile::tempdir().unwrap();
    peer_setup.set(
        "DATA_DIR",
        &peer_home.path().join("data").display().to_string(),
    );
    let mut peer = Gateway::start(&peer_setup, None, peer_home.path());
    let mut doomed = case.start(Some("queued"));
    case.send_orders().await;
    assert_eq!(doomed.ended(PATIENCE).await, Some(9), "{}", doomed.log());
    // Only the peer runs now; nothing is delivered to it.
    case.wait_for_outcomes(&peer).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    peer.stop().await;
    case.check();
    assert!(
        peer.log().contains("taking over queued messages"),
        "{}",
        peer.log()
    );
}
