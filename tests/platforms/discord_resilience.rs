//! The Discord adapter through gateway failures, against the fake gateway:
//! a zombie connection, close codes, op 7, INVALID_SESSION and a gateway
//! that goes away. Each time the same adapter (no restart) reconnects, the
//! link status says reconnecting while it is down and connected after, and
//! every message reaches the core once: replayed by a resume, or — where
//! Discord ends the session and a new one is identified — fetched over REST
//! after the new READY (the backfill), never twice. What the fake saw
//! (IDENTIFY / RESUME, history reads) shows which way it went.
//!
//! serenity 0.12 retries a new session through its shard queuer: up to 5 s
//! waiting for the old runner, then every 5 s while the gateway refuses. So
//! a re-identify costs a few seconds of wall clock here; nothing asserts how
//! long anything took.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;
use support::fake_discord::{Disruption, FakeDiscord, FakeDiscordOptions, UserMessage, TOKEN};
use switchboard_discord::{DiscordAdapter, DiscordConfig};
use switchboard_platform::{Inbound, LinkState, PlatformAdapter, PlatformError, Secret};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const CHANNEL: u64 = 1_200_000_000_000_000_031;
const ALICE: u64 = 1_300_000_000_000_000_031;
/// Long enough for any reconnect path of serenity (5 s steps).
const PATIENCE: Duration = Duration::from_secs(40);

struct Harness {
    fake: FakeDiscord,
    adapter: Arc<DiscordAdapter>,
    inbound: support::intake::Received,
    shutdown: CancellationToken,
    run: JoinHandle<Result<(), PlatformError>>,
    /// Texts the core received, in order.
    seen: Vec<String>,
    /// Their message ids.
    seen_ids: Vec<u64>,
}

async fn start() -> Harness {
    // Discord's interval is ~41 s; 1 s finds a zombie soon without a busy
    // machine ever making a late ACK look like one.
    let fake = FakeDiscord::start_with(FakeDiscordOptions {
        heartbeat_interval_ms: 1_000,
        ..FakeDiscordOptions::default()
    })
    .await;
    fake.add_text_channel(CHANNEL);
    let mut config = DiscordConfig::new(Secret::new(TOKEN));
    config.api_url = Some(fake.api_url.clone());
    config.free_channels.insert(CHANNEL);
    config.timings.link_check = Duration::from_millis(20);
    let adapter = Arc::new(DiscordAdapter::connect(config).await.expect("connect"));
    let (tx, inbound) = support::intake::acking(64);
    let shutdown = CancellationToken::new();
    let run = {
        let (adapter, shutdown) = (adapter.clone(), shutdown.clone());
        tokio::spawn(async move { adapter.run(tx, shutdown).await })
    };
    assert!(fake.wait_ready(1).await, "the shard never became ready");
    let h = Harness {
        fake,
        adapter,
        inbound,
        shutdown,
        run,
        seen: Vec::new(),
        seen_ids: Vec::new(),
    };
    h.wait_link(LinkState::Connected).await;
    h
}

fn say(text: &str) -> UserMessage {
    UserMessage::new(CHANNEL, ALICE, text)
}

impl Harness {
    async fn wait_link(&self, state: LinkState) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while self.adapter.link().state != state {
            assert!(
                tokio::time::Instant::now() < deadline,
                "never {state:?}: {:?}",
                self.adapter.link()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn wait_fake(&self, what: &str, check: impl Fn(&FakeDiscord) -> bool) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !check(&self.fake) {
            assert!(tokio::time::Instant::now() < deadline, "never {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Receives until `text` arrives, recording every text on the way.
    async fn receive_until(&mut self, text: &str) {
        loop {
            let next = tokio::time::timeout(PATIENCE, self.inbound.recv())
                .await
                .unwrap_or_else(|_| panic!("{text:?} never arrived; saw {:?}", self.seen))
                .expect("inbound channel closed");
            let Inbound::Message(m) = next else { continue };
            self.seen.push(m.text.clone());
            self.seen_ids.push(m.message_id.0 as u64);
            if m.text == text {
                return;
            }
        }
    }

    /// Sends `text` (once connected) and waits for it to reach the core.
    async fn round_trip(&mut self, text: &str) {
        self.fake.send_message(say(text)).expect("a session");
        self.receive_until(text).await;
    }

    /// A last message: everything delivered before it is in `seen`, so a
    /// duplicate or a late replay would show there. Then stops the adapter,
    /// which must still be the first run (never restarted).
    async fn finish(mut self, expected: &[&str]) {
        self.round_trip("the end").await;
        let mut expected = expected.to_vec();
        expected.push("the end");
        assert_eq!(self.seen, expected, "each message exactly once, in order");
        assert!(!self.run.is_finished(), "the adapter never stopped");
        self.shutdown.cancel();
        let result = tokio::time::timeout(PATIENCE, self.run)
            .await
            .expect("run ends after shutdown")
            .expect("run task");
        assert!(result.is_ok(), "{result:?}");
    }

    fn identifies(&self) -> usize {
        self.fake.identifies().len()
    }
}

/// A disruption that Discord and serenity recover by resuming: the messages
/// sent meanwhile are replayed once, no new session is identified.
async fn resumes_after(what: Disruption) {
    let mut h = start().await;
    h.round_trip("before").await;
    // The gateway is slow to resume, so the link is seen reconnecting.
    h.fake.hold_resumes(true);
    let (sent, ids) = h
        .fake
        .disrupt(0, what, vec![say("missed 1"), say("missed 2")]);
    assert!(sent, "the shard was connected");
    assert!(ids.iter().all(Option::is_some), "the session lives on");
    h.wait_fake("a resume", |f| f.held_resumes() == 1).await;
    h.wait_link(LinkState::Reconnecting).await;
    h.fake.hold_resumes(false);
    h.wait_fake("a resume", |f| f.resumes() == 1).await;
    h.receive_until("missed 2").await;
    assert_eq!(h.fake.replayed(), 2, "both missed messages were replayed");
    assert_eq!(h.identifies(), 1, "no new session: {what:?}");
    h.wait_link(LinkState::Connected).await;
    let link = h.adapter.link();
    assert!(link.last_error.is_some(), "the drop is on record: {link:?}");
    h.round_trip("after").await;
    h.finish(&["before", "missed 1", "missed 2", "after"]).await;
}

/// A disruption after which Discord wants a new session: serenity
/// identifies again. What was sent while no session existed never reaches
/// the gateway (as on Discord), so the backfill reads it from the channel
/// after the new READY; nothing is doubled.
async fn identifies_again_after(what: Disruption) {
    let mut h = start().await;
    h.round_trip("before").await;
    let before = h.seen_ids[0];
    // The gateway refuses the new connection for a while, so the link is
    // seen reconnecting (a new session is otherwise ready within a moment).
    h.fake.refuse_connections();
    let (sent, ids) = h.fake.disrupt(0, what, vec![say("lost")]);
    assert!(sent, "the shard was connected");
    assert_eq!(ids, [None], "no session: Discord delivers it to no one");
    h.wait_fake("a refused attempt", |f| f.refused_connections() >= 1)
        .await;
    h.wait_link(LinkState::Reconnecting).await;
    h.fake.come_back();
    h.wait_fake("a new session", |f| {
        f.identifies().len() == 2 && f.connected_shards() == [0]
    })
    .await;
    h.wait_link(LinkState::Connected).await;
    assert_eq!(h.fake.resumes(), 0, "{what:?} is not resumed");
    h.receive_until("lost").await;
    // Read from the last message seen, with Discord's largest page.
    let reads = h.fake.history_reads(CHANNEL);
    assert_eq!(reads, [(200, format!("after={before}&limit=100"))]);
    h.round_trip("after").await;
    h.finish(&["before", "lost", "after"]).await;
}

#[tokio::test]
async fn a_dropped_connection_1006_resumes_and_replays() {
    resumes_after(Disruption::Drop).await;
}

#[tokio::test]
async fn close_4000_resumes_and_replays() {
    resumes_after(Disruption::Close(4000)).await;
}

#[tokio::test]
async fn op_7_reconnect_resumes_and_replays() {
    resumes_after(Disruption::Reconnect).await;
}

#[tokio::test]
async fn a_resumable_invalid_session_resumes_and_replays() {
    resumes_after(Disruption::InvalidSession { resumable: true }).await;
}

#[tokio::test]
async fn close_4007_starts_a_new_session() {
    identifies_again_after(Disruption::Close(4007)).await;
}

#[tokio::test]
async fn close_4009_starts_a_new_session() {
    identifies_again_after(Disruption::Close(4009)).await;
}

#[tokio::test]
async fn an_invalid_session_starts_a_new_session() {
    identifies_again_after(Disruption::InvalidSession { resumable: false }).await;
}

/// 4007 makes serenity resume with seq 0, which the fake (like Discord)
/// refuses with INVALID_SESSION before serenity identifies.
#[tokio::test]
async fn a_resume_from_seq_0_is_refused_as_discord_does() {
    let mut h = start().await;
    h.round_trip("before").await;
    h.fake.disrupt(0, Disruption::Close(4007), Vec::new());
    h.wait_fake("a new session", |f| f.identifies().len() == 2)
        .await;
    assert_eq!(h.fake.resume_attempts(), [0], "resumed from seq 0, refused");
    assert_eq!(h.fake.invalid_sessions(), 1);
    h.wait_link(LinkState::Connected).await;
    h.round_trip("after").await;
    h.finish(&["before", "after"]).await;
}

/// 4004 (authentication failed) and 4014 (disallowed intents) are fatal
/// in serenity: no resume, no new session; `run` ends with the reason and
/// the link is stopped (the operator must fix the token or the intents).
async fn is_fatal(code: u16, reason: &str) {
    let h = start().await;
    h.fake.disrupt(0, Disruption::Close(code), Vec::new());
    let result = tokio::time::timeout(PATIENCE, h.run)
        .await
        .expect("run ends")
        .expect("run task");
    let error = result.expect_err("a fatal close ends run").to_string();
    assert!(error.contains(reason), "{error}");
    assert!(!error.contains(TOKEN), "{error}");
    assert_eq!(h.adapter.link().state, LinkState::Stopped);
    assert_eq!(h.fake.identifies().len(), 1, "no new session");
    assert!(h.fake.resume_attempts().is_empty(), "no resume");
}

#[tokio::test]
async fn close_4004_is_fatal() {
    is_fatal(4004, "DISCORD_BOT_TOKEN").await;
}

#[tokio::test]
async fn close_4014_is_fatal() {
    is_fatal(4014, "Intents").await;
}

/// Heartbeats no longer ACKed: serenity gives the connection up at its next
/// heartbeat and starts a new session (it does not resume a zombie).
#[tokio::test]
async fn a_zombie_connection_is_replaced_by_a_new_session() {
    let mut h = start().await;
    h.round_trip("before").await;
    h.fake.refuse_connections();
    assert!(h.fake.stop_acking(0));
    // A zombie still delivers: this one arrives on the old connection.
    h.round_trip("on the zombie").await;
    h.wait_fake("a refused attempt", |f| f.refused_connections() >= 1)
        .await;
    assert!(h.fake.unacked_heartbeats() >= 1);
    h.wait_link(LinkState::Reconnecting).await;
    h.fake.come_back();
    h.wait_fake("a new session", |f| {
        f.identifies().len() == 2 && f.connected_shards() == [0]
    })
    .await;
    h.wait_link(LinkState::Connected).await;
    assert_eq!(h.fake.resumes(), 0, "serenity re-identifies after a zombie");
    // The backfill found nothing new: what it read again is not repeated.
    h.wait_fake("a history read", |f| !f.history_reads(CHANNEL).is_empty())
        .await;
    h.round_trip("after").await;
    h.finish(&["before", "on the zombie", "after"]).await;
}

/// The gateway goes away (connections drop, new ones answered 503) for
/// several of serenity's attempts, then comes back. The outage's length
/// does not matter to serenity (no growing backoff: 5 s between boots), so
/// a few refused attempts stand in for "two minutes".
#[tokio::test]
async fn a_gateway_away_for_a_while_is_reconnected_without_a_restart() {
    let mut h = start().await;
    h.round_trip("before").await;
    h.fake.go_away();
    h.wait_link(LinkState::Reconnecting).await;
    let during = h.fake.send_message(say("during the outage"));
    h.wait_fake("3 refused attempts", |f| f.refused_connections() >= 3)
        .await;
    assert_eq!(h.adapter.link().state, LinkState::Reconnecting);
    h.fake.come_back();
    h.wait_fake("a connection again", |f| f.connected_shards() == [0])
        .await;
    h.wait_link(LinkState::Connected).await;
    // serenity gives the resume up once it cannot connect and identifies a
    // new session when the gateway is back: the message sent during the
    // outage is not replayed (Discord only replays to a resume), the
    // backfill reads it.
    h.receive_until("during the outage").await;
    h.round_trip("after").await;
    assert_eq!(h.identifies(), 2, "a new session");
    assert_eq!(h.fake.resumes(), 0);
    assert!(
        during.is_some(),
        "sent to the old session, which was never resumed"
    );
    h.finish(&["before", "during the outage", "after"]).await;
}

/// `/healthz` through `switchboard::run`: 200 `ok` with Discord connected,
/// 200 `degraded` (Discord `reconnecting`) while the gateway refuses, `ok`
/// again after; a message missed during a drop is answered exactly once.
#[tokio::test]
async fn healthz_shows_discord_degraded_while_it_reconnects() {
    use crate::discord_e2e::{texts, E2e, ALICE as E2E_ALICE, CHANNEL as E2E_CHANNEL};
    use support::fake_llm::Reply;
    let addr = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().to_string()
    };
    let e = E2e::with(&[("HEALTH_LISTEN", addr.as_str())]).await;
    let health = || async {
        let r = reqwest::get(format!("http://{addr}/healthz"))
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json::<serde_json::Value>().await.unwrap())
    };
    let wait_health = |want: &'static str, discord: &'static str| async move {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let (status, body) = health().await;
            assert_eq!(status, 200, "{body}");
            if body["status"] == want && body["adapters"]["discord"] == discord {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "never {want}: {body}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    wait_health("ok", "connected").await;

    e.discord.refuse_connections();
    e.discord.disrupt(0, Disruption::Close(4009), Vec::new());
    wait_health("degraded", "reconnecting").await;
    e.discord.come_back();
    wait_health("ok", "connected").await;

    // Missed during a drop, replayed by the resume, answered once.
    e.llm.push(Reply::text("Pong."));
    let ping = UserMessage::new(E2E_CHANNEL, E2E_ALICE, "ping").mentioning_bot();
    let (_, ids) = e.discord.disrupt(0, Disruption::Drop, vec![ping]);
    assert!(ids[0].is_some());
    e.wait_text(E2E_CHANNEL, "Pong.").await;
    e.quiet().await;
    assert_eq!(texts(&e.discord, E2E_CHANNEL), ["Pong."]);
    assert_eq!(e.llm.requests().await.len(), 1, "asked the model once");
    assert_eq!(e.discord.replayed(), 1);
    e.stop().await;
}

/// A new session after `what`, with `missed` sent while no session existed.
async fn new_session_missing(h: &Harness, missed: Vec<UserMessage>) {
    h.fake.refuse_connections();
    let (sent, ids) = h.fake.disrupt(0, Disruption::Close(4009), missed);
    assert!(sent, "the shard was connected");
    assert!(ids.iter().all(Option::is_none), "no session meanwhile");
    h.wait_fake("a refused attempt", |f| f.refused_connections() >= 1)
        .await;
    h.fake.come_back();
    h.wait_fake("a new session", |f| {
        f.identifies().len() == 2 && f.connected_shards() == [0]
    })
    .await;
}

/// More than a page was missed: the backfill reads page after page (each
/// after the newest of the previous one), waits out a 429 on the way, and
/// delivers every message once, oldest first. A message posted after the
/// new READY comes live and again in the last page: it is delivered once.
#[tokio::test]
async fn more_than_a_page_of_missed_messages_is_paged() {
    let mut h = start().await;
    h.round_trip("before").await;
    let missed: Vec<String> = (0..150).map(|i| format!("missed {i}")).collect();
    // The first history read is refused once by the route's limit.
    h.fake.rate_limit_channel(CHANNEL, 1, 1.0);
    new_session_missing(&h, missed.iter().map(|t| say(t)).collect()).await;
    h.round_trip("live").await;
    h.receive_until("missed 149").await;
    let reads = h.fake.history_reads(CHANNEL);
    let statuses: Vec<u16> = reads.iter().map(|r| r.0).collect();
    assert_eq!(statuses, [429, 200, 200], "{reads:?}");
    let hundredth = h.seen_ids[101];
    assert_eq!(reads[2].1, format!("after={hundredth}&limit=100"));
    h.round_trip("after").await;
    let mut expected = vec!["before", "live"];
    expected.extend(missed.iter().map(String::as_str));
    expected.push("after");
    h.finish(&expected).await;
}

/// A channel the bot lost access to answers 403: it is skipped with a
/// warning, the other channels are still read.
#[tokio::test]
async fn a_channel_the_bot_cannot_read_is_skipped_with_a_log_line() {
    use crate::telegram_updates::{captured_logs, logs_text};
    const HIDDEN: u64 = 1_200_000_000_000_000_032;
    captured_logs();
    let mut h = start().await;
    h.fake.add_text_channel(HIDDEN);
    h.fake
        .send_message(UserMessage::new(HIDDEN, ALICE, "hidden before"))
        .expect("a session");
    h.round_trip("before").await;
    h.fake.deny_history(HIDDEN);
    let missed = vec![UserMessage::new(HIDDEN, ALICE, "hidden lost"), say("lost")];
    new_session_missing(&h, missed).await;
    h.receive_until("lost").await;
    let reads = h.fake.history_reads(HIDDEN);
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(reads[0].0, 403);
    h.round_trip("after").await;
    let logged = logs_text();
    assert!(
        logged
            .lines()
            .any(|l| l.contains("could not read a Discord channel's history")
                && l.contains(&HIDDEN.to_string())
                && l.contains("403")),
        "no warning for the hidden channel"
    );
    h.finish(&["hidden before", "before", "lost", "after"])
        .await;
}

/// The fake's history route is as strict as Discord's: a snowflake `after`,
/// `limit` in 1..=100, newest first, 404 for an unknown channel.
#[tokio::test]
async fn the_fake_history_route_is_strict() {
    let h = start().await;
    let first = h.fake.send_message(say("one")).expect("a session");
    h.fake.send_message(say("two")).expect("a session");
    h.fake.send_message(say("three")).expect("a session");
    let get = |path: String| {
        let url = format!("{}/api/v10{path}", h.fake.api_url);
        async move {
            let r = reqwest::Client::new()
                .get(url)
                .header("authorization", format!("Bot {TOKEN}"))
                .send()
                .await
                .unwrap();
            (
                r.status().as_u16(),
                r.json::<serde_json::Value>().await.unwrap(),
            )
        }
    };
    let history = format!("/channels/{CHANNEL}/messages");
    let (status, page) = get(format!("{history}?after={first}&limit=100")).await;
    assert_eq!(status, 200);
    let contents: Vec<&str> = page
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["three", "two"], "newest first, after `first`");
    assert!(page[0].get("guild_id").is_none() && page[0].get("member").is_none());
    let (_, page) = get(format!("{history}?after={first}&limit=1")).await;
    assert_eq!(page[0]["content"], "two", "the page right after `after`");
    for bad in ["after=x&limit=5", "after=1&limit=0", "after=1&limit=101"] {
        let (status, body) = get(format!("{history}?{bad}")).await;
        assert_eq!((status, body["code"].as_u64()), (400, Some(50035)), "{bad}");
    }
    let (status, body) = get("/channels/999/messages?limit=5".into()).await;
    assert_eq!((status, body["code"].as_u64()), (404, Some(10003)));
    let mut h = h;
    h.receive_until("three").await;
    h.finish(&["one", "two", "three"]).await;
}

/// End to end: mentions posted while no session existed are answered once
/// each after the new READY, and a message fetched that the gateway also
/// delivers is not answered twice.
#[tokio::test]
async fn messages_missed_between_sessions_are_answered_exactly_once() {
    use crate::discord_e2e::{texts, E2e, ALICE as E2E_ALICE, CHANNEL as E2E_CHANNEL};
    use support::fake_llm::Reply;
    let e = E2e::start().await;
    e.llm.push(Reply::text("Hi."));
    e.say(UserMessage::new(E2E_CHANNEL, E2E_ALICE, "hello").mentioning_bot());
    e.wait_text(E2E_CHANNEL, "Hi.").await;
    e.discord.refuse_connections();
    let missed = |text: &str| UserMessage::new(E2E_CHANNEL, E2E_ALICE, text).mentioning_bot();
    let (_, ids) = e.discord.disrupt(
        0,
        Disruption::InvalidSession { resumable: false },
        vec![missed("first missed"), missed("second missed")],
    );
    assert_eq!(ids, [None, None]);
    e.llm.push(Reply::text("One."));
    e.llm.push(Reply::text("Two."));
    e.wait("a refused attempt", |d| d.refused_connections() >= 1)
        .await;
    e.discord.come_back();
    e.wait_text(E2E_CHANNEL, "Two.").await;
    e.quiet().await;
    assert_eq!(texts(&e.discord, E2E_CHANNEL), ["Hi.", "One.", "Two."]);
    assert_eq!(e.llm.requests().await.len(), 3, "each message asked once");
    assert_eq!(e.discord.identifies().len(), 2);
    e.stop().await;
}

/// End to end across a restart: a mention posted while no process ran is
/// answered by the next one, once. The stopped process left each channel's
/// last delivered message on disk; here that mark is set back one message,
/// as a crash right after "hello" was answered would leave it, so "hello"
/// is fetched again — and not answered twice.
#[tokio::test]
async fn messages_posted_while_no_process_ran_are_answered_after_a_restart() {
    use crate::discord_e2e::{texts, E2e, ALICE as E2E_ALICE, CHANNEL as E2E_CHANNEL};
    use support::fake_discord::BOT_ID;
    use support::fake_llm::Reply;
    let mention = |text: &str| UserMessage::new(E2E_CHANNEL, E2E_ALICE, text).mentioning_bot();
    let e = E2e::start().await;
    e.llm.push(Reply::text("Hi."));
    let hello = e.say(mention("hello"));
    e.wait_text(E2E_CHANNEL, "Hi.").await;
    e.llm.push(Reply::text("Caught up."));
    let e = e
        .restart(|discord, data| {
            let path = data.join(format!("discord-{BOT_ID}-shards-0-0.json"));
            let saved = std::fs::read(&path).expect("the stop saved the marks");
            let mut marks: serde_json::Value = serde_json::from_slice(&saved).unwrap();
            let mark = &mut marks["channels"][E2E_CHANNEL.to_string()];
            assert_eq!(mark["last"], hello, "the last delivered message");
            mark["last"] = (hello - 1).into();
            std::fs::write(&path, marks.to_string()).unwrap();
            let sent = discord.send_message(mention("while away"));
            assert_eq!(sent, None, "posted while no gateway session existed");
        })
        .await;
    e.wait_text(E2E_CHANNEL, "Caught up.").await;
    e.quiet().await;
    assert_eq!(texts(&e.discord, E2E_CHANNEL), ["Hi.", "Caught up."]);
    let requests = e.llm.requests().await;
    assert_eq!(requests.len(), 2, "each message asked once");
    let asked = support::fake_llm::last_user_text(&requests[1]).unwrap_or_default();
    assert!(asked.contains("while away"), "{asked}");
    let reads = e.discord.history_reads(E2E_CHANNEL);
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(reads[0].1, format!("after={}&limit=100", hello - 1));
    e.stop().await;
}
