//! End to end on Discord through `switchboard::run`: Discord configured by its
//! `DISCORD_*` variables, the real core and adapter against the fake Discord
//! (REST + gateway) and the fake LLM. Every assertion is on what the fakes saw.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;
use support::fake_discord::{
    custom_ids, id_eq, message_id, FakeDiscord, Press, UserMessage, TOKEN,
};
use support::fake_llm::{last_user_text, FakeLlm, Reply};
use switchboard::{Config, RunError};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub(crate) const CHANNEL: u64 = 1_200_000_000_000_000_011;
const OTHER_CHANNEL: u64 = 1_200_000_000_000_000_012;
pub(crate) const THREAD: u64 = 1_200_000_000_000_000_013;
pub(crate) const DM_CHANNEL: u64 = 1_200_000_000_000_000_014;
pub(crate) const ALICE: u64 = 1_300_000_000_000_000_011;
pub(crate) const BOB: u64 = 1_300_000_000_000_000_012;
const APPROVER_ROLE: u64 = 1_400_000_000_000_000_011;

pub(crate) struct E2e {
    pub(crate) discord: FakeDiscord,
    pub(crate) llm: FakeLlm,
    pub(crate) run: JoinHandle<Result<(), RunError>>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) _dir: tempfile::TempDir,
    /// The variables the gateway was started with (for [`E2e::restart`]).
    env: HashMap<String, String>,
}

impl E2e {
    pub(crate) async fn start() -> E2e {
        E2e::with(&[]).await
    }

    /// The gateway with Discord configured from `DISCORD_*` variables (plus `vars`).
    pub(crate) async fn with(vars: &[(&str, &str)]) -> E2e {
        let discord = FakeDiscord::start().await;
        discord.add_text_channel(CHANNEL);
        discord.add_text_channel(OTHER_CHANNEL);
        discord.add_thread(THREAD, CHANNEL);
        discord.add_dm(DM_CHANNEL);
        let llm = FakeLlm::start().await;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let role = APPROVER_ROLE.to_string();
        let mut env: HashMap<String, String> = [
            ("LLM_BASE_URL", llm.base_url()),
            ("LLM_MODEL", "fake-model".to_owned()),
            ("DATA_DIR", data.display().to_string()),
            (
                "DATABASE_URL",
                format!("sqlite://{}", data.join("switchboard.db").display()),
            ),
            ("WORKSPACE_DIR", dir.path().join("ws").display().to_string()),
            ("ACCESS_POLICY", "open".to_owned()),
            ("APPROVAL_TIMEOUT", "30".to_owned()),
            ("LLM_IDLE_TIMEOUT_SECS", "10".to_owned()),
            ("DISCORD_BOT_TOKEN", TOKEN.to_owned()),
            ("DISCORD_API_URL", discord.api_url.clone()),
            ("DISCORD_APPROVER_ROLES", role),
            // Activity lines have tests of their own (`activity_lines`).
            ("CHAT_VERBOSITY", "off".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        for (k, v) in vars {
            env.insert((*k).to_owned(), (*v).to_owned());
        }
        let (run, shutdown) = launch(&env, &discord).await;
        E2e {
            discord,
            llm,
            run,
            shutdown,
            _dir: dir,
            env,
        }
    }

    /// Stops the gateway, lets `meanwhile` act on the fakes and the data
    /// directory while no process runs, and starts a new process on the
    /// same data, model and Discord.
    pub(crate) async fn restart(self, meanwhile: impl FnOnce(&FakeDiscord, &Path)) -> E2e {
        let E2e {
            discord,
            llm,
            run,
            shutdown,
            _dir,
            env,
        } = self;
        stop(run, shutdown).await;
        let closed = discord.wait_for(|f| f.connected_shards().is_empty()).await;
        assert!(closed, "the stopped gateway's connection never closed");
        meanwhile(&discord, &_dir.path().join("data"));
        let (run, shutdown) = launch(&env, &discord).await;
        E2e {
            discord,
            llm,
            run,
            shutdown,
            _dir,
            env,
        }
    }

    pub(crate) fn say(&self, message: UserMessage) -> u64 {
        self.discord.send_message(message).expect("shard connected")
    }

    /// Waits for `check`; on timeout fails with every REST call the fake saw.
    pub(crate) async fn wait(&self, what: &str, check: impl Fn(&FakeDiscord) -> bool) {
        if !self.discord.wait_for(check).await {
            let calls: Vec<String> = self
                .discord
                .calls()
                .iter()
                .map(|c| format!("{} {} {} {}", c.status, c.method, c.path, c.body))
                .collect();
            panic!("timed out waiting for {what}; calls:\n{}", calls.join("\n"));
        }
    }

    /// Waits for a bot message in `channel` whose content is exactly `text`.
    pub(crate) async fn wait_text(&self, channel: u64, text: &str) -> Value {
        self.wait(&format!("{text:?} in {channel}"), |d| {
            has_text(d, channel, text)
        })
        .await;
        self.discord
            .bot_messages(channel)
            .into_iter()
            .find(|m| m["content"] == text)
            .unwrap()
    }

    pub(crate) async fn wait_card(&self, channel: u64) -> Value {
        self.wait("an approval card", |d| d.card(channel).is_some())
            .await;
        self.discord.card(channel).unwrap()
    }

    /// Waits for the `n`-th interaction callback and returns it (kind, data).
    pub(crate) async fn wait_callback(&self, n: usize) -> (u64, Value) {
        self.wait(&format!("{n} interaction callbacks"), |d| {
            d.callbacks().len() >= n
        })
        .await;
        let callback = self.discord.callbacks()[n - 1].clone();
        (callback.kind, callback.data)
    }

    /// Waits until the fake Discord saw no new REST call for 500 ms (bounded),
    /// so that late or duplicate posts would show.
    pub(crate) async fn quiet(&self) {
        let mut seen = usize::MAX;
        for _ in 0..30 {
            let now = self.discord.calls().len();
            if now == seen {
                return;
            }
            seen = now;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        panic!("the gateway never became quiet");
    }

    pub(crate) async fn stop(self) {
        stop(self.run, self.shutdown).await;
    }
}

/// Runs the gateway on `env` until its Discord shard is ready.
async fn launch(
    env: &HashMap<String, String>,
    discord: &FakeDiscord,
) -> (JoinHandle<Result<(), RunError>>, CancellationToken) {
    let config = Config::from_lookup(|k| env.get(k).cloned()).expect("core config");
    assert!(
        config.platforms.discord.is_some(),
        "DISCORD_BOT_TOKEN enables Discord"
    );
    let shutdown = CancellationToken::new();
    let mut run = tokio::spawn(switchboard::run(config, shutdown.clone()));
    let ready = tokio::select! {
        ready = discord.wait_ready(1) => ready,
        ended = async { (&mut run).await } => panic!("run ended early: {ended:?}"),
    };
    assert!(ready, "the shard never became ready");
    (run, shutdown)
}

async fn stop(run: JoinHandle<Result<(), RunError>>, shutdown: CancellationToken) {
    shutdown.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("run stops after shutdown")
        .expect("run task");
    assert!(ended.is_ok(), "{ended:?}");
}

fn has_text(d: &FakeDiscord, channel: u64, text: &str) -> bool {
    d.bot_messages(channel).iter().any(|m| m["content"] == text)
}

pub(crate) fn texts(d: &FakeDiscord, channel: u64) -> Vec<String> {
    d.bot_messages(channel)
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

pub(crate) fn ephemeral(data: &Value) -> bool {
    data["flags"].as_u64().is_some_and(|f| f & 64 != 0)
}

/// The content of the tool message answering `call_id` in an LLM request.
pub(crate) fn tool_result(request: &Value, call_id: &str) -> String {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no tool result for {call_id} in {request:#}"))
}

fn exec(call_id: &str, args: Value) -> Reply {
    Reply::tool_calls([(call_id, "exec_command", args)])
}

#[tokio::test]
async fn guild_messages_are_answered_only_when_addressed() {
    let e = E2e::start().await;
    e.say(UserMessage::new(CHANNEL, BOB, "chatter between humans"));
    e.llm.push(Reply::text("Four."));
    let question = e.say(UserMessage::new(CHANNEL, ALICE, "what is 2+2?").mentioning_bot());
    let answer = e.wait_text(CHANNEL, "Four.").await;
    e.quiet().await;
    assert!(id_eq(&answer["message_reference"]["message_id"], question));
    let requests = e.llm.requests().await;
    assert_eq!(requests.len(), 1, "only the mention reached the model");
    let asked = last_user_text(&requests[0]).unwrap();
    assert!(
        asked.contains("what is 2+2?") && !asked.contains("<@"),
        "{asked}"
    );
    assert!(!requests[0].to_string().contains("chatter between humans"));
    assert_eq!(
        e.discord.typing_calls(CHANNEL),
        0,
        "an answer within a second costs no typing call"
    );

    // A reply to the bot is addressed too.
    e.llm.push(Reply::text("Six."));
    e.say(UserMessage::new(CHANNEL, ALICE, "and 3+3?").replying_to(message_id(&answer)));
    e.wait_text(CHANNEL, "Six.").await;
    e.stop().await;
}

#[tokio::test]
async fn slash_commands_are_registered_answered_at_once_and_run_like_typed_ones() {
    let skills = tempfile::tempdir().unwrap();
    std::fs::write(
        skills.path().join("standup.md"),
        "---\ndescription: Turn notes into a stand-up update\n---\nWrite a stand-up from:\n{{args}}",
    )
    .unwrap();
    let dir = skills.path().display().to_string();
    let e = E2e::with(&[("SKILLS_DIR", dir.as_str())]).await;
    e.wait("the slash commands registered", |d| {
        d.slash_commands().iter().any(|c| c["name"] == "standup")
    })
    .await;
    let commands = e.discord.slash_commands();
    let names: Vec<&str> = commands.iter().filter_map(|c| c["name"].as_str()).collect();
    for name in [
        "help",
        "clear",
        "memory",
        "tasks",
        "approvals",
        "skills",
        "summarize",
    ] {
        assert!(names.contains(&name), "/{name} missing: {names:?}");
    }
    assert_eq!(
        e.discord
            .calls()
            .iter()
            .filter(|c| c.method == "PUT" && c.path.ends_with("/commands"))
            .count(),
        1,
        "registered once, not again on each READY"
    );

    // In a guild channel, without a mention: the command is addressed to the bot.
    let interaction = e
        .discord
        .slash(CHANNEL, ALICE, "help", None)
        .expect("registered");
    let (kind, data) = e.wait_callback(1).await;
    assert_eq!((kind, data["content"].as_str()), (4, Some("/help")));
    assert_eq!(e.discord.callbacks()[0].interaction, interaction);
    e.wait("the help text", |d| {
        d.bot_messages(CHANNEL).iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("**Commands**"))
        })
    })
    .await;

    // A skill with its input: the model gets the expanded skill.
    e.llm.push(Reply::text("Yesterday: shipped the parser."));
    e.discord
        .slash(CHANNEL, ALICE, "standup", Some("shipped the parser"))
        .expect("registered");
    let (kind, data) = e.wait_callback(2).await;
    assert_eq!(
        (kind, data["content"].as_str()),
        (4, Some("/standup shipped the parser"))
    );
    e.wait_text(CHANNEL, "Yesterday: shipped the parser.").await;
    let asked = last_user_text(&e.llm.requests().await[0]).unwrap();
    assert!(
        asked.contains("Write a stand-up from") && asked.contains("shipped the parser"),
        "{asked}"
    );
    assert!(
        e.discord
            .slash(CHANNEL, ALICE, "not-registered", None)
            .is_none(),
        "Discord only offers registered commands"
    );
    e.stop().await;
}

#[tokio::test]
async fn threads_and_direct_messages_are_answered_where_they_were_asked() {
    let e = E2e::start().await;
    e.llm.push(Reply::text("Answer in the thread."));
    e.say(UserMessage::new(THREAD, ALICE, "question in a thread").mentioning_bot());
    e.wait_text(THREAD, "Answer in the thread.").await;
    e.llm.push(Reply::text("Answer in private."));
    e.say(UserMessage::new(DM_CHANNEL, ALICE, "a private question"));
    e.wait_text(DM_CHANNEL, "Answer in private.").await;
    e.quiet().await;
    assert!(
        e.discord.bot_messages(CHANNEL).is_empty(),
        "nothing leaked to the parent channel"
    );
    e.stop().await;
}

#[tokio::test]
async fn a_csv_in_a_thread_is_read_and_a_chart_goes_back_into_the_thread() {
    let e = E2e::start().await;
    let csv = support::fake_discord::FakeFile::new(
        "sales.csv",
        "text/csv",
        b"region,sales\nnorth,120\n".to_vec(),
    );
    let mut png = Vec::new();
    image::RgbImage::from_pixel(32, 16, image::Rgb([1, 2, 3]))
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    // Alice's own workspace folder: her turns see only it.
    let folder = e._dir.path().join(format!("ws/users/discord-{ALICE}"));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("chart.png"), &png).unwrap();
    e.llm.push(Reply::tool_calls([(
        "s1",
        "send_file",
        json!({"path": "chart.png", "caption": "north leads"}),
    )]));
    e.llm.push(Reply::text("Chart sent."));
    e.say(
        UserMessage::new(THREAD, ALICE, "chart this")
            .mentioning_bot()
            .with_file(csv),
    );
    e.wait_text(THREAD, "Chart sent.").await;
    let asked = last_user_text(&e.llm.requests().await[0]).unwrap_or_default();
    assert!(
        asked.contains("north,120"),
        "the CSV came through the CDN: {asked}"
    );
    assert_eq!(e.discord.cdn_downloads().len(), 1);
    let uploads = e.discord.uploads(THREAD);
    assert_eq!(uploads.len(), 1, "{uploads:?}");
    assert_eq!(
        (uploads[0].filename.as_str(), &uploads[0].bytes),
        ("chart.png", &png)
    );
    assert!(
        e.discord.uploads(CHANNEL).is_empty(),
        "nothing in the parent channel"
    );
    e.stop().await;
}

#[tokio::test]
async fn a_streamed_answer_edits_one_message() {
    let e = E2e::start().await;
    let answer = "Streaming on Discord edits a single message in place, at most once per second, \
                  until the whole answer is there.";
    e.llm
        .push(Reply::text(answer).with_chunk_delay(Duration::from_millis(120)));
    e.say(UserMessage::new(CHANNEL, ALICE, "stream something").mentioning_bot());
    e.wait_text(CHANNEL, answer).await;
    e.quiet().await;
    assert_eq!(
        texts(&e.discord, CHANNEL),
        [answer],
        "one message, edited in place"
    );
    let id = message_id(&e.discord.bot_messages(CHANNEL)[0]);
    let edits = e
        .discord
        .accepted("PATCH", &format!("/channels/{CHANNEL}/messages/{id}"));
    assert!(!edits.is_empty(), "the draft was edited");
    e.stop().await;
}

#[tokio::test]
async fn an_approval_allowed_by_the_requester_updates_the_card_in_the_interaction() {
    let e = E2e::start().await;
    e.llm
        .push(exec("call_1", json!({ "command": "echo approved-run" })));
    e.llm.push(Reply::text("It printed approved-run."));
    e.say(UserMessage::new(CHANNEL, ALICE, "run the echo").mentioning_bot());
    let card = e.wait_card(CHANNEL).await;
    let ids = custom_ids(&card);
    assert_eq!(ids.len(), 4, "Allow once / Always / Edit / Deny: {ids:?}");
    assert!(ids
        .iter()
        .all(|id| id.len() <= 100 && id.starts_with("ap:")));
    let allow = ids.iter().find(|id| id.ends_with(":y")).unwrap();
    e.discord
        .press(Press::new(message_id(&card), allow.clone(), ALICE))
        .unwrap();
    let (kind, data) = e.wait_callback(1).await;
    assert_eq!(kind, 7, "decided in the interaction response");
    assert_eq!(data["components"], json!([]));
    let decided = e.discord.message(message_id(&card)).unwrap();
    assert!(decided["content"]
        .as_str()
        .unwrap()
        .contains("Allowed once"));
    assert!(custom_ids(&decided).is_empty());
    e.wait_text(CHANNEL, "It printed approved-run.").await;
    let requests = e.llm.wait_for_requests(2).await;
    assert!(tool_result(&requests[1], "call_1").contains("approved-run"));
    e.stop().await;
}

#[tokio::test]
async fn foreign_presses_are_refused_privately_and_double_presses_noticed() {
    let e = E2e::start().await;
    e.llm
        .push(exec("call_1", json!({ "command": "echo never" })));
    e.llm.push(Reply::text("Understood, not running it."));
    e.say(UserMessage::new(CHANNEL, ALICE, "run something").mentioning_bot());
    let card = e.wait_card(CHANNEL).await;
    let ids = custom_ids(&card);
    let id = |code: &str| ids.iter().find(|a| a.ends_with(code)).unwrap().clone();
    let card_id = message_id(&card);

    e.discord.press(Press::new(card_id, id(":y"), BOB)).unwrap();
    let (kind, data) = e.wait_callback(1).await;
    assert_eq!(kind, 4);
    assert!(ephemeral(&data), "the refusal is only for the presser");
    assert_eq!(
        custom_ids(&e.discord.message(card_id).unwrap()).len(),
        4,
        "card unchanged"
    );

    // A double press: both arrive while the card still shows its buttons
    // (Discord sends nothing for buttons already removed).
    for _ in 0..2 {
        e.discord
            .press(Press::new(card_id, id(":n"), ALICE))
            .unwrap();
    }
    e.wait_callback(3).await;
    let mut answers: Vec<(u64, Value)> = e.discord.callbacks()[1..]
        .iter()
        .map(|c| (c.kind, c.data.clone()))
        .collect();
    answers.sort_by_key(|(kind, _)| *kind);
    let [(refused, notice), (updated, _)] = [answers[0].clone(), answers[1].clone()];
    assert_eq!((refused, updated), (4, 7), "one decision, one notice");
    assert!(ephemeral(&notice));
    assert!(notice["content"]
        .as_str()
        .unwrap()
        .contains("Already decided"));
    let denied = e.discord.message(card_id).unwrap();
    assert!(denied["content"].as_str().unwrap().contains("Denied"));
    assert!(custom_ids(&denied).is_empty());
    assert_eq!(e.discord.press(Press::new(card_id, id(":y"), ALICE)), None);
    e.wait_text(CHANNEL, "Understood, not running it.").await;
    e.stop().await;
}

#[tokio::test]
async fn an_approver_role_may_decide_for_the_requester() {
    let e = E2e::start().await;
    e.llm
        .push(exec("call_1", json!({ "command": "echo by-approver" })));
    e.llm.push(Reply::text("Ran it."));
    e.say(UserMessage::new(CHANNEL, ALICE, "run it").mentioning_bot());
    let card = e.wait_card(CHANNEL).await;
    let allow = allow_button(&card);
    e.discord
        .press(Press::new(message_id(&card), allow, BOB).with_roles(&[APPROVER_ROLE]))
        .unwrap();
    let (kind, _) = e.wait_callback(1).await;
    assert_eq!(kind, 7);
    e.wait_text(CHANNEL, "Ran it.").await;
    e.stop().await;
}

/// The custom_id of a card's "Allow once" button.
pub(crate) fn allow_button(card: &Value) -> String {
    custom_ids(card)
        .into_iter()
        .find(|a| a.ends_with(":y"))
        .expect("an allow button")
}

/// A gateway with 1 s approvals, showing an `echo` card that nobody answers:
/// the gateway, the card's message id and its allow button.
async fn card_that_expires_in_a_second() -> (E2e, u64, String) {
    let e = E2e::with(&[("APPROVAL_TIMEOUT", "1")]).await;
    e.llm
        .push(exec("call_1", json!({ "command": "echo too-late" })));
    e.llm.push(Reply::text("The approval expired."));
    e.say(UserMessage::new(CHANNEL, ALICE, "run it").mentioning_bot());
    let card = e.wait_card(CHANNEL).await;
    let allow = allow_button(&card);
    (e, message_id(&card), allow)
}

#[tokio::test]
async fn an_expired_approval_is_marked_and_its_buttons_removed() {
    let (e, card_id, allow) = card_that_expires_in_a_second().await;
    e.wait("the card marked expired", |d| {
        d.message(card_id)
            .is_some_and(|m| m["content"].as_str().unwrap_or("").contains("Expired"))
    })
    .await;
    assert!(custom_ids(&e.discord.message(card_id).unwrap()).is_empty());
    // With the buttons gone, Discord has nothing left to press.
    assert_eq!(e.discord.press(Press::new(card_id, allow, ALICE)), None);
    e.wait_text(CHANNEL, "The approval expired.").await;
    e.stop().await;
}

#[tokio::test]
async fn a_press_on_a_card_the_expiry_could_not_update_is_noticed() {
    let (e, card_id, allow) = card_that_expires_in_a_second().await;
    // The bot lost the right to edit it, so its buttons outlive the approval.
    e.discord.refuse_edits(card_id);
    e.wait_text(CHANNEL, "The approval expired.").await;
    assert_eq!(custom_ids(&e.discord.message(card_id).unwrap()).len(), 4);
    e.discord.press(Press::new(card_id, allow, ALICE)).unwrap();
    let (kind, data) = e.wait_callback(1).await;
    assert_eq!(kind, 4);
    assert!(ephemeral(&data));
    assert!(
        data["content"].as_str().unwrap().contains("expired"),
        "{data}"
    );
    e.stop().await;
}

#[tokio::test]
async fn a_background_task_notification_arrives_in_the_same_thread() {
    let e = E2e::start().await;
    e.llm.push(exec(
        "call_1",
        json!({
            "command": "for i in 1 2 3 4 5 6; do echo $((i*16))%; sleep 1; done; echo bg-done",
            "background": true
        }),
    ));
    e.llm.push(Reply::text("Started it in the background."));
    e.llm
        .push(Reply::text("The background job printed bg-done."));
    e.say(UserMessage::new(THREAD, ALICE, "run it in the background").mentioning_bot());
    let card = e.wait_card(THREAD).await;
    let allow = allow_button(&card);
    e.discord
        .press(Press::new(message_id(&card), allow, ALICE))
        .unwrap();
    e.wait_text(THREAD, "Started it in the background.").await;
    e.wait_text(THREAD, "The background job printed bg-done.")
        .await;
    e.quiet().await;
    let requests = e.llm.wait_for_requests(3).await;
    let notice = last_user_text(&requests[2]).unwrap();
    assert!(notice.contains("bg-done"), "{notice}");
    assert!(
        e.discord.bot_messages(CHANNEL).is_empty(),
        "everything stayed in the thread"
    );
    // The task's status message was edited with its progress while it ran.
    let progress: Vec<String> = e
        .discord
        .calls()
        .iter()
        .filter(|c| {
            c.method == "PATCH" && c.path.contains(&format!("/channels/{THREAD}/messages/"))
        })
        .filter_map(|c| c.body["content"].as_str().map(str::to_owned))
        .filter(|b| b.contains("Background task") && b.contains('█') && !b.contains("done in"))
        .collect();
    assert!(
        progress.iter().any(|b| ["16%", "32%", "48%", "64%", "80%"]
            .iter()
            .any(|p| b.contains(p))),
        "{progress:?}\n{:#?}",
        e.discord
            .calls()
            .iter()
            .map(|c| format!("{} {} {}", c.method, c.path, c.body))
            .collect::<Vec<_>>()
    );
    e.stop().await;
}

#[tokio::test]
async fn a_long_answer_is_chunked_with_balanced_fences() {
    let e = E2e::start().await;
    let code: String = (0..120)
        .map(|i| format!("let value_{i} = compute({i}); // step {i}\n"))
        .collect();
    let prose = "This paragraph explains the code. ".repeat(30);
    let answer = format!("{prose}\n\n```rust\n{code}```\n\n{prose}\n\nDone.");
    e.llm.push(Reply::text(&answer));
    e.say(UserMessage::new(CHANNEL, ALICE, "write a lot").mentioning_bot());
    e.wait("the last chunk", |d| {
        texts(d, CHANNEL)
            .last()
            .is_some_and(|t| t.ends_with("Done."))
    })
    .await;
    e.quiet().await;
    let posted = texts(&e.discord, CHANNEL);
    assert!(posted.len() >= 3, "{} chunks", posted.len());
    for chunk in &posted {
        assert!(chunk.chars().count() <= 2000);
        let fences = chunk
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        assert_eq!(fences % 2, 0, "unbalanced fences:\n{chunk}");
    }
    e.stop().await;
}

#[tokio::test]
async fn a_rate_limited_channel_does_not_hold_up_another() {
    let e = E2e::start().await;
    e.llm.set_responder(|request| {
        let asked = last_user_text(request).unwrap_or_default();
        let word = asked.split_whitespace().last().unwrap_or("?").to_owned();
        Reply::text(&format!("echo {word}"))
    });
    e.discord.rate_limit_channel(CHANNEL, 1, 2.0);
    e.say(UserMessage::new(CHANNEL, ALICE, "say alpha").mentioning_bot());
    e.say(UserMessage::new(OTHER_CHANNEL, BOB, "say beta").mentioning_bot());
    e.wait_text(OTHER_CHANNEL, "echo beta").await;
    assert!(
        !has_text(&e.discord, CHANNEL, "echo alpha"),
        "the other channel answered while this one waited out retry_after"
    );
    e.wait_text(CHANNEL, "echo alpha").await;
    e.quiet().await;
    assert_eq!(
        texts(&e.discord, CHANNEL),
        ["echo alpha"],
        "nothing lost or duplicated"
    );
    assert_eq!(texts(&e.discord, OTHER_CHANNEL), ["echo beta"]);
    assert_eq!(e.discord.rate_limited(), 1);
    e.stop().await;
}

#[tokio::test]
async fn malformed_payloads_and_unknown_buttons_are_ignored() {
    let e = E2e::start().await;
    e.llm.push(Reply::text("First answer."));
    e.say(UserMessage::new(CHANNEL, ALICE, "hello").mentioning_bot());
    let answer = e.wait_text(CHANNEL, "First answer.").await;
    assert!(e.discord.send_raw(0, "{{{ not json"));
    assert!(e
        .discord
        .send_raw(0, r#"{"op":0,"t":"MESSAGE_CREATE","s":9,"d":{"id":"x"}}"#));
    // Discord only sends presses of buttons a message carries; the answer has none.
    let answer_id = message_id(&answer);
    assert_eq!(
        e.discord.press(Press::new(answer_id, "ap:x:y", ALICE)),
        None
    );
    // Buttons the core never made: a card an older version posted.
    let unknown = "ap:0123456789abcdef0123456789abcdef:y";
    let old_card = e
        .discord
        .plant_bot_message(CHANNEL, "Old card", &["not an action id", unknown]);
    // Not an action id: the adapter acknowledges it and the core never sees it.
    e.discord
        .press(Press::new(old_card, "not an action id", ALICE))
        .unwrap();
    let (kind, _) = e.wait_callback(1).await;
    assert_eq!(kind, 6);
    // A well-formed but unknown approval: the core answers privately.
    e.discord
        .press(Press::new(old_card, unknown, ALICE))
        .unwrap();
    let (kind, data) = e.wait_callback(2).await;
    assert_eq!(kind, 4);
    assert!(ephemeral(&data));
    e.llm.push(Reply::text("Still here."));
    e.say(UserMessage::new(CHANNEL, ALICE, "are you there?").mentioning_bot());
    e.wait_text(CHANNEL, "Still here.").await;
    assert_eq!(e.discord.identifies().len(), 1, "the connection was kept");
    assert_eq!(e.discord.resumes(), 0, "...without even a resume");
    e.stop().await;
}

/// Issue 23 item 2 on Discord: a 50,000-character command is one card message
/// with its buttons plus `command.txt` (multipart `files[0]` + `payload_json`);
/// the decision updates the card within Discord's 2,000 characters.
#[tokio::test]
async fn a_long_command_card_is_one_message_with_the_full_text_attached() {
    let e = E2e::start().await;
    let command = format!("echo {}; rm -rf data", "a".repeat(50_000));
    e.llm.push(exec("call_1", json!({ "command": command })));
    e.llm.push(Reply::text("Not run."));
    e.say(UserMessage::new(CHANNEL, ALICE, "run the long one").mentioning_bot());
    let card = e.wait_card(CHANNEL).await;
    e.wait("the attached command", |d| !d.uploads(CHANNEL).is_empty())
        .await;
    let msgs = e.discord.bot_messages(CHANNEL);
    assert_eq!(msgs.len(), 2, "one card and one file: {msgs:#?}");
    assert_eq!(
        message_id(&msgs[0]),
        message_id(&card),
        "buttons on the first message"
    );
    let content = card["content"].as_str().unwrap();
    assert!(content.contains("attached as command.txt"), "{content}");
    assert!(!content.contains("rm -rf data"));
    let uploads = e.discord.uploads(CHANNEL);
    assert_eq!(uploads.len(), 1);
    assert_eq!(uploads[0].filename, "command.txt");
    assert!(uploads[0].text().contains(&command));

    let deny = custom_ids(&card)
        .into_iter()
        .find(|id| id.ends_with(":n"))
        .unwrap();
    e.discord
        .press(Press::new(message_id(&card), deny, ALICE))
        .unwrap();
    let (kind, data) = e.wait_callback(1).await;
    assert_eq!(kind, 7, "decided in the interaction response");
    assert_eq!(data["components"], json!([]));
    e.wait_text(CHANNEL, "Not run.").await;
    let decided = e.discord.message(message_id(&card)).unwrap();
    assert!(custom_ids(&decided).is_empty(), "the buttons are gone");
    assert!(decided["content"].as_str().unwrap().contains("Denied"));
    e.stop().await;
}

/// Issue 23 item 8 on Discord: a 5 MB answer is `answer.md` plus a short head.
#[tokio::test]
async fn a_huge_answer_goes_as_one_file_and_a_short_head() {
    use support::fake_llm::chunk;
    let e = E2e::start().await;
    let line = "All work and no play makes Jack a dull boy. ".repeat(2);
    let answer: String = line.repeat(5_000_000 / line.len() + 1);
    // In 100 kB deltas: word-sized ones would make a million SSE events.
    let mut chunks: Vec<Value> = answer
        .as_bytes()
        .chunks(100_000)
        .map(|c| chunk(json!({ "content": std::str::from_utf8(c).unwrap() }), None))
        .collect();
    chunks[0]["choices"][0]["delta"]["role"] = json!("assistant");
    chunks.push(chunk(json!({}), Some("stop")));
    e.llm.push(Reply::chunks(chunks));
    e.say(UserMessage::new(CHANNEL, ALICE, "write a lot").mentioning_bot());
    e.wait("the attached answer", |d| !d.uploads(CHANNEL).is_empty())
        .await;
    e.quiet().await;
    let uploads = e.discord.uploads(CHANNEL);
    assert_eq!(uploads.len(), 1);
    assert_eq!(uploads[0].filename, "answer.md");
    let got = uploads[0].text();
    // Whole; a note may follow (e.g. when the exchange could not be saved).
    assert!(
        got.starts_with(&answer),
        "the file holds the whole answer: {} of {} bytes, ends {:?}",
        got.len(),
        answer.len(),
        &got[got.len().saturating_sub(200)..]
    );
    let texts: Vec<String> = texts(&e.discord, CHANNEL)
        .into_iter()
        .filter(|t| t != "Full answer")
        .collect();
    assert!(texts.len() <= 2, "{} text messages", texts.len());
    assert!(
        texts
            .iter()
            .any(|t| t.contains("the full answer is attached as answer.md")),
        "{texts:?}"
    );
    e.stop().await;
}
