//! End to end: the real gateway (`switchboard::start`, the path `run` takes
//! after connecting adapters) with the fake LLM and the Telegram adapter
//! against the fake Bot API. Assertions are on what the fake Telegram received.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;
use support::fake_llm::{chunk, last_user_text, FakeLlm, Reply, FAKE_MODEL};
use support::fake_telegram::{FakeTelegram, FakeUser, StoredMessage, Where, TOKEN};
use switchboard::Config;
use switchboard_platform::{chunk_markdown, LengthUnit, PlatformAdapter, Quota, Secret};
use switchboard_telegram::{TelegramAdapter, TelegramConfig, TelegramLimits};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(20);

pub(crate) struct E2e {
    pub(crate) llm: FakeLlm,
    pub(crate) tg: FakeTelegram,
    pub(crate) adapter: Arc<TelegramAdapter>,
    pub(crate) running: Option<switchboard::Running>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) _dir: tempfile::TempDir,
}

pub(crate) fn ann() -> FakeUser {
    FakeUser::new(900, "Ann")
}
pub(crate) fn bob() -> FakeUser {
    FakeUser::new(901, "Bob")
}
fn eve() -> FakeUser {
    FakeUser::new(902, "Eve")
}

impl E2e {
    pub(crate) async fn start(tweak: impl FnOnce(&mut Config)) -> E2e {
        E2e::with_env(&[], tweak).await
    }

    /// [`E2e::start`] with more variables in the environment read.
    pub(crate) async fn with_env(env: &[(&str, &str)], tweak: impl FnOnce(&mut Config)) -> E2e {
        let llm = FakeLlm::start().await;
        // Fast quotas below, so no flood limits here; pacing under Telegram's
        // limits is covered by the adapter tests and the benchmark.
        let tg = FakeTelegram::start_lenient().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let vars: HashMap<&str, String> = HashMap::from([
            ("LLM_BASE_URL", llm.base_url()),
            ("LLM_MODEL", FAKE_MODEL.to_owned()),
            ("DATA_DIR", dir.path().display().to_string()),
            ("ACCESS_POLICY", "allowlist".to_owned()),
            ("TELEGRAM_ALLOWED_USERS", "900,901,902".to_owned()),
            ("TELEGRAM_BOT_TOKEN", TOKEN.to_owned()),
            ("TELEGRAM_API_URL", tg.api_url()),
            // Activity lines have tests of their own (`activity_lines`).
            ("CHAT_VERBOSITY", "off".to_owned()),
        ]);
        let extra: HashMap<&str, String> = env.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        let lookup = |k: &str| extra.get(k).or_else(|| vars.get(k)).cloned();
        let mut config = Config::from_lookup(lookup).unwrap();
        tweak(&mut config);
        // The same variables `switchboard run` reads through the wiring.
        let mut tcfg: TelegramConfig = config.platforms.telegram.clone().expect("Telegram enabled");
        tcfg.poll_timeout_secs = 1;
        // Fast quotas keep the tests quick.
        tcfg.limits = TelegramLimits {
            per_chat: Quota::per_second(NonZeroU32::new(50).unwrap()),
            per_group: Quota::per_second(NonZeroU32::new(1_000).unwrap()),
            per_bot: Quota::per_second(NonZeroU32::new(1_000).unwrap()),
        };
        assert_eq!(tcfg.token, Secret::new(TOKEN));
        let adapter = Arc::new(TelegramAdapter::connect(tcfg).await.unwrap());
        let shutdown = CancellationToken::new();
        let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![adapter.clone()];
        let running = switchboard::start(&config, adapters, shutdown.clone())
            .await
            .unwrap();
        E2e {
            llm,
            tg,
            adapter,
            running: Some(running),
            shutdown,
            _dir: dir,
        }
    }

    pub(crate) async fn wait(&self, what: &str, check: impl Fn(&FakeTelegram) -> bool) {
        assert!(
            self.tg.wait_until(WAIT, check).await,
            "timed out waiting for {what}"
        );
    }

    /// Waits until the bot has `n` messages in `chat` and the gateway is idle.
    pub(crate) async fn answered(&self, chat: i64, n: usize) -> Vec<StoredMessage> {
        self.wait(&format!("{n} bot messages in {chat}"), |t| {
            t.bot_messages(chat).len() >= n
        })
        .await;
        if let Some(r) = &self.running {
            tokio::time::timeout(WAIT, r.idle()).await.unwrap();
        }
        self.tg.bot_messages(chat)
    }

    fn card(&self, chat: i64) -> Option<StoredMessage> {
        self.tg
            .bot_messages(chat)
            .into_iter()
            .rev()
            .find(|m| m.text.contains("requested by"))
    }

    pub(crate) async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(r) = self.running.take() {
            tokio::time::timeout(WAIT, r.wait()).await.unwrap();
        }
    }
}

fn button(card: &StoredMessage, suffix: &str) -> String {
    let markup = card.reply_markup.as_ref().expect("card has a keyboard");
    markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().into_iter().flatten())
        .filter_map(|b| b["callback_data"].as_str())
        .find(|d| d.ends_with(suffix))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no button ending in {suffix}: {markup}"))
}

fn answer_texts(tg: &FakeTelegram) -> Vec<String> {
    tg.calls_to("AnswerCallbackQuery")
        .into_iter()
        .map(|c| c.params["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect()
}

#[tokio::test]
async fn switchboard_run_connects_telegram_from_the_environment() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let vars: HashMap<&str, String> = HashMap::from([
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", FAKE_MODEL.to_owned()),
        ("DATA_DIR", dir.path().display().to_string()),
        ("ACCESS_POLICY", "allowlist".to_owned()),
        ("TELEGRAM_ALLOWED_USERS", "900".to_owned()),
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_owned()),
        ("TELEGRAM_API_URL", tg.api_url()),
    ]);
    let config = Config::from_lookup(|k| vars.get(k).cloned()).unwrap();
    llm.push(Reply::text("Hello through run."));
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(switchboard::run(config, shutdown.clone()));
    tg.message(Where::Dm, &ann(), "hi");
    assert!(
        tg.wait_until(WAIT, |t| t
            .bot_messages(900)
            .iter()
            .any(|m| m.text == "Hello through run."))
            .await
    );
    shutdown.cancel();
    let ended = tokio::time::timeout(WAIT, run).await.unwrap().unwrap();
    assert!(ended.is_ok(), "{ended:?}");
    assert_eq!(tg.calls_to("GetMe").len(), 1);
    // This fake enforces Telegram's real flood limits; the default quotas fit.
    assert_eq!(tg.rate_limited_responses(), 0);
    let offset = dir.path().join(format!(
        "telegram-offset-{}",
        support::fake_telegram::BOT_ID
    ));
    assert!(offset.exists(), "offset kept in DATA_DIR");
}

#[tokio::test]
async fn the_command_menu_lists_the_commands_and_follows_the_skills() {
    let skills = tempfile::tempdir().unwrap();
    std::fs::write(
        skills.path().join("standup.md"),
        "---\ndescription: Turn notes into a stand-up update\n---\nWrite a stand-up from:\n{{args}}",
    )
    .unwrap();
    let dir = skills.path().to_owned();
    let e = E2e::start(|c| c.skills_dir = dir).await;
    let has = |tg: &FakeTelegram, name: &str| tg.commands().iter().any(|(c, _)| c == name);
    assert!(
        e.tg.wait_until(WAIT, |tg| has(tg, "help") && has(tg, "standup"))
            .await,
        "menu: {:?}",
        e.tg.commands()
    );
    let menu = e.tg.commands();
    let names: Vec<&str> = menu.iter().map(|(c, _)| c.as_str()).collect();
    for command in [
        "help",
        "clear",
        "memory",
        "tasks",
        "approvals",
        "usage",
        "model",
        "whoami",
        "skills",
        "summarize",
    ] {
        assert!(names.contains(&command), "/{command} missing: {names:?}");
    }
    assert!(
        !names.contains(&"start") && !names.contains(&"approve"),
        "{names:?}"
    );
    assert!(menu.contains(&("standup".into(), "Turn notes into a stand-up update".into())));

    // A skill added while the gateway runs joins the menu.
    std::fs::write(
        skills.path().join("retro.md"),
        "---\ndescription: Run a short retrospective\n---\nAsk what went well about:\n{{args}}",
    )
    .unwrap();
    assert!(
        e.tg.wait_until(WAIT, |tg| has(tg, "retro")).await,
        "menu after the reload: {:?}",
        e.tg.commands()
    );
    assert!(e.tg.calls_to("SetMyCommands").iter().all(|c| c.ok));
    e.stop().await;
}

#[tokio::test]
async fn an_answer_complete_within_the_edit_interval_is_one_message() {
    let e = E2e::start(|_| {}).await;
    let text = "Short and quick: no draft, no edit.";
    e.llm.push(Reply::text(text));
    e.tg.message(Where::Dm, &ann(), "quick one");
    let msgs = e.answered(900, 1).await;
    assert_eq!(msgs[0].text, text);
    assert_eq!(msgs[0].edits, 0, "posted once, final");
    assert!(e.tg.calls_to("EditMessageText").is_empty());
    assert_eq!(e.tg.calls_to("SendMessage").len(), 1);
    e.stop().await;
}

#[tokio::test]
async fn a_photo_is_seen_by_the_model_and_a_chart_goes_back_into_the_topic() {
    let e = E2e::start(|c| c.media.vision = switchboard::media::VisionSetting::On).await;
    let mut png = Vec::new();
    image::RgbImage::from_pixel(64, 48, image::Rgb([10, 20, 30]))
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    // An allowed user's photo: downloaded through getFile and the file
    // route, resized, and sent to the model as an image part.
    let file_id = e.tg.host_file(png.clone());
    e.llm.set_responder(|request| {
        let seen: Vec<String> = support::images::in_request(request)
            .iter()
            .map(|b| support::images::describe(b))
            .collect();
        Reply::text(&format!("I see {}", seen.join(", ")))
    });
    e.tg.media(
        Where::Dm,
        &ann(),
        json!({"photo": [{"file_id": file_id, "file_unique_id": "u1", "width": 64, "height": 48,
            "file_size": png.len()}], "caption": "what is in this picture?"}),
    );
    let msgs = e.answered(900, 1).await;
    assert!(msgs[0].text.starts_with("I see 64x48"), "{}", msgs[0].text);
    assert_eq!(e.tg.file_downloads().len(), 1);

    // A stranger's photo gets the allowlist refusal: no download, no turn.
    let stranger = FakeUser::new(999, "Mallory");
    let theirs = e.tg.host_file(png.clone());
    e.tg.media(
        Where::Dm,
        &stranger,
        json!({"photo": [{"file_id": theirs, "file_unique_id": "u2", "width": 64, "height": 48}]}),
    );
    let refused = e.answered(999, 1).await;
    assert!(refused[0].text.contains("allowlist"), "{}", refused[0].text);
    assert_eq!(
        e.tg.file_downloads().len(),
        1,
        "nothing fetched for a stranger"
    );

    // In a forum topic, send_file delivers the chart there as a photo.
    // Bob's own workspace folder: his turns see only it.
    let chart = e._dir.path().join("workspace/users/telegram-901/chart.png");
    std::fs::create_dir_all(chart.parent().unwrap()).unwrap();
    std::fs::write(&chart, &png).unwrap();
    e.llm.push(Reply::tool_calls([(
        "s1",
        "send_file",
        json!({"path": "chart.png", "caption": "Q3 chart"}),
    )]));
    e.llm.push(Reply::text("There it is."));
    let topic = Where::Topic {
        chat: -5003,
        thread: 77,
    };
    e.tg.message(
        topic,
        &bob(),
        &format!("@{} send the chart", e.adapter.bot_username()),
    );
    e.answered(-5003, 1).await;
    let sent = e.tg.documents(-5003);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        (sent[0].kind, sent[0].thread_id, sent[0].caption.as_deref()),
        (
            support::fake_telegram::FileField::Photo,
            Some(77),
            Some("Q3 chart")
        )
    );
    assert_eq!(sent[0].bytes, png);
    e.stop().await;
}

#[tokio::test]
async fn groups_answer_mentions_and_replies_only_and_keep_topics() {
    let e = E2e::start(|_| {}).await;
    let group = Where::Group(-5001);
    e.tg.message(group, &ann(), "chatter not meant for the bot");
    e.llm.push(Reply::text("Mentioned, answering."));
    e.tg.message(
        group,
        &ann(),
        &format!("@{} hello", e.adapter.bot_username()),
    );
    let msgs = e.answered(-5001, 1).await;
    assert_eq!(msgs[0].text, "Mentioned, answering.");
    let first = e.llm.requests().await;
    assert_eq!(first.len(), 1, "the unaddressed message reached no model");
    assert_eq!(
        last_user_text(&first[0])
            .as_deref()
            .map(|t| t.contains("hello")),
        Some(true)
    );

    e.llm.push(Reply::text("Replying to your reply."));
    e.tg.reply(group, &bob(), "and more?", msgs[0].message_id);
    let msgs = e.answered(-5001, 2).await;
    assert_eq!(msgs[1].text, "Replying to your reply.");

    let topic = Where::Topic {
        chat: -5002,
        thread: 42,
    };
    e.llm.push(Reply::text("Answer in the topic."));
    e.tg.message(
        topic,
        &bob(),
        &format!("@{} in a topic", e.adapter.bot_username()),
    );
    let msgs = e.answered(-5002, 1).await;
    assert_eq!(
        (msgs[0].text.as_str(), msgs[0].thread_id),
        ("Answer in the topic.", Some(42))
    );
    e.stop().await;
}

#[tokio::test]
async fn approvals_refuse_others_then_run_for_the_requester() {
    let e = E2e::start(|_| {}).await;
    let group = Where::Topic {
        chat: -6001,
        thread: 7,
    };
    e.llm.push(Reply::tool_calls([(
        "call_1",
        "exec_command",
        json!({"command": "echo approved-run"}),
    )]));
    e.llm.push(Reply::text("The command printed approved-run."));
    e.tg.message(
        group,
        &ann(),
        &format!("@{} run it", e.adapter.bot_username()),
    );
    e.wait("the approval card", |t| {
        t.bot_messages(-6001)
            .iter()
            .any(|m| m.reply_markup.is_some())
    })
    .await;
    let card = e.card(-6001).unwrap();
    assert_eq!(card.thread_id, Some(7), "card in the same topic");
    let allow = button(&card, ":y");
    assert!(allow.len() <= 64);

    // Another user presses: private refusal, card unchanged, tool not run.
    e.tg.callback(group, &eve(), card.message_id, &allow);
    e.wait("the refusal", |t| {
        t.calls_to("AnswerCallbackQuery").len() == 1
    })
    .await;
    assert!(answer_texts(&e.tg)[0].contains("Only the person who asked"));
    let unchanged = e.tg.stored(-6001, card.message_id).unwrap();
    assert_eq!(
        (unchanged.text.clone(), unchanged.edits),
        (card.text.clone(), 0)
    );
    assert_eq!(e.llm.requests().await.len(), 1);

    // The requester approves: the tool runs and the model sees its output.
    e.tg.callback(group, &ann(), card.message_id, &allow);
    let requests = e.llm.wait_for_requests(2).await;
    assert!(tool_results(&requests[1])
        .iter()
        .any(|r| r.contains("approved-run")));
    let msgs = e.answered(-6001, 2).await;
    assert_eq!(
        msgs.last().unwrap().text,
        "The command printed approved-run."
    );
    assert_eq!(msgs.last().unwrap().thread_id, Some(7));
    let decided = e.tg.stored(-6001, card.message_id).unwrap();
    assert!(decided.reply_markup.is_none(), "keyboard removed");
    assert_ne!(decided.text, card.text, "card shows the decision");

    // A second press: already decided.
    e.tg.callback(group, &ann(), card.message_id, &allow);
    e.wait("the double-press answer", |t| {
        t.calls_to("AnswerCallbackQuery").len() == 3
    })
    .await;
    assert!(
        answer_texts(&e.tg)[2].contains("Already decided"),
        "{:?}",
        answer_texts(&e.tg)
    );
    e.stop().await;
}

#[tokio::test]
async fn typing_stops_while_an_approval_card_waits() {
    let e = E2e::start(|c| {
        if let Some(t) = c.platforms.telegram.as_mut() {
            t.typing_interval = Duration::from_millis(40);
        }
    })
    .await;
    e.llm.push(Reply::tool_calls([(
        "call_1",
        "exec_command",
        json!({"command": "echo approved-run"}),
    )]));
    e.llm.push(Reply::text("Done."));
    e.tg.message(Where::Dm, &ann(), "run it");
    e.wait("the card", |t| {
        t.bot_messages(900).iter().any(|m| m.reply_markup.is_some())
    })
    .await;
    let typing = || e.tg.calls_to("SendChatAction").len();
    assert!(typing() >= 1, "typing while the turn ran");
    // The turn paused with the card: no renewal while it waits (one may
    // have been on its way as the card went out), over many intervals.
    let at_card = typing();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        typing() <= at_card + 1,
        "typing renewed while the card waited"
    );
    // The decision resumes the turn, and its answer ends it.
    let card = e.card(900).unwrap();
    e.tg.callback(Where::Dm, &ann(), card.message_id, &button(&card, ":y"));
    e.wait("the answer", |t| {
        t.bot_messages(900).iter().any(|m| m.text.contains("Done."))
    })
    .await;
    e.stop().await;
}

#[tokio::test]
async fn denial_reaches_the_model_and_expiry_refuses_late_presses() {
    let e = E2e::start(|c| c.approval_timeout = Duration::from_secs(2)).await;
    e.llm.push(Reply::tool_calls([(
        "call_1",
        "exec_command",
        json!({"command": "rm -rf build"}),
    )]));
    e.llm.push(Reply::text("Understood, I did not run it."));
    e.tg.message(Where::Dm, &ann(), "clean the build");
    e.wait("the card", |t| {
        t.bot_messages(900).iter().any(|m| m.reply_markup.is_some())
    })
    .await;
    let card = e.card(900).unwrap();
    e.tg.callback(Where::Dm, &ann(), card.message_id, &button(&card, ":n"));
    let requests = e.llm.wait_for_requests(2).await;
    assert!(
        tool_results(&requests[1])
            .iter()
            .any(|r| r.to_lowercase().contains("denied")),
        "{:?}",
        tool_results(&requests[1])
    );
    let msgs = e.answered(900, 2).await;
    assert_eq!(msgs.last().unwrap().text, "Understood, I did not run it.");

    // Nobody decides in time: the card expires and a late press is refused.
    e.llm.push(Reply::tool_calls([(
        "call_2",
        "exec_command",
        json!({"command": "echo late"}),
    )]));
    e.llm.push(Reply::text("The request expired."));
    e.tg.message(Where::Dm, &ann(), "try another");
    e.wait("a second card", |t| {
        t.bot_messages(900)
            .iter()
            .filter(|m| m.text.contains("requested by"))
            .count()
            == 2
    })
    .await;
    let card = e.card(900).unwrap();
    e.answered(900, 4).await;
    let expired = e.tg.stored(900, card.message_id).unwrap();
    assert!(expired.reply_markup.is_none() && expired.text.to_lowercase().contains("expired"));
    let before = e.tg.calls_to("AnswerCallbackQuery").len();
    e.tg.callback(Where::Dm, &ann(), card.message_id, &button(&card, ":y"));
    e.wait("the late answer", |t| {
        t.calls_to("AnswerCallbackQuery").len() == before + 1
    })
    .await;
    let late = answer_texts(&e.tg).pop().unwrap_or_default();
    assert!(late.contains("expired"), "{late}");
    assert_eq!(
        e.llm.requests().await.len(),
        4,
        "the late press ran nothing"
    );
    e.stop().await;
}

#[tokio::test]
async fn background_task_reports_progress_and_answers_in_the_topic() {
    let e = E2e::start(|_| {}).await;
    let topic = Where::Topic {
        chat: -7001,
        thread: 3,
    };
    e.llm.push(Reply::tool_calls([(
        "call_1",
        "exec_command",
        json!({
            "command": "for i in 1 2 3 4; do echo $((i*20))%; sleep 1; done; echo background-done",
            "background": true
        }),
    )]));
    e.llm.push(Reply::text("Started it in the background."));
    e.llm
        .push(Reply::text("The background job finished: background-done."));
    e.tg.message(
        topic,
        &ann(),
        &format!("@{} long job", e.adapter.bot_username()),
    );
    e.wait("the card", |t| {
        t.bot_messages(-7001)
            .iter()
            .any(|m| m.reply_markup.is_some())
    })
    .await;
    let card = e.card(-7001).unwrap();
    e.tg.callback(topic, &ann(), card.message_id, &button(&card, ":y"));
    let requests = e.llm.wait_for_requests(3).await;
    assert_eq!(requests.len(), 3);
    assert!(
        requests[2].to_string().contains("SYSTEM NOTIFICATION"),
        "the result came back as a notification"
    );
    e.wait("the notification answer", |t| {
        t.bot_messages(-7001)
            .iter()
            .any(|m| m.text == "The background job finished: background-done.")
    })
    .await;
    let msgs = e.tg.bot_messages(-7001);
    assert!(
        msgs.iter().all(|m| m.thread_id == Some(3)),
        "everything in the topic"
    );
    let status = msgs
        .iter()
        .find(|m| m.message_id != card.message_id && m.edits > 0 && m.text.contains("exec_command"))
        .unwrap_or_else(|| panic!("no edited status message: {msgs:#?}"));
    assert!(status.text.contains("background-done") || status.text.to_lowercase().contains("done"));
    // While it ran, that message showed a progress bar with the percentage.
    let progress: Vec<String> =
        e.tg.calls_to("EditMessageText")
            .iter()
            .filter(|c| c.ok && c.params["message_id"] == status.message_id)
            .filter_map(|c| c.params["text"].as_str().map(str::to_owned))
            .collect();
    assert!(
        progress
            .iter()
            .any(|t| t.contains('█') && ["20%", "40%", "60%"].iter().any(|p| t.contains(p))),
        "{progress:#?}"
    );
    e.stop().await;
}

fn long_answer() -> String {
    let mut text = String::from("# Report 📊\n\n");
    for i in 0..40 {
        text.push_str(&format!(
            "Section {i}: 数据分析结果 😀 with details & <notes> that go on for a while.\n\n"
        ));
        if i % 8 == 0 {
            text.push_str("```rust\n");
            for j in 0..45 {
                text.push_str(&format!(
                    "let value_{i}_{j} = compute(\"中文\", {j}); // 🚀\n"
                ));
            }
            text.push_str("```\n\n");
        }
    }
    text
}

#[tokio::test]
async fn a_long_answer_is_chunked_and_a_429_storm_does_not_stop_another_chat() {
    let e = E2e::start(|_| {}).await;
    let long = long_answer();
    assert!(long.chars().count() > 10_000);
    let expected = chunk_markdown(&long, 4096, LengthUnit::Utf16);
    assert!(expected.len() >= 3);
    let l = long.clone();
    e.llm
        .set_responder(move |req| match last_user_text(req).as_deref() {
            Some(t) if t.contains("long") => Reply::text(&l),
            _ => Reply::text("Short and calm."),
        });
    e.tg.ensure_chat(Where::Dm, &ann());
    e.tg.fail_with_429(900, 3, 1);
    e.tg.message(Where::Dm, &ann(), "the long report please");
    e.wait("the storm", |t| t.rate_limited_responses() >= 1)
        .await;
    e.tg.message(Where::Dm, &bob(), "a quick question");
    let calm = e.answered(901, 1).await;
    assert_eq!(calm[0].text, "Short and calm.");

    let msgs = e.answered(900, expected.len()).await;
    assert_eq!(msgs.len(), expected.len(), "each chunk exactly once");
    for m in &msgs {
        assert!(m.text.encode_utf16().count() <= 4096);
    }
    let all: String = msgs
        .iter()
        .map(|m| m.text.clone())
        .collect::<Vec<_>>()
        .join("\n");
    let mut at = 0;
    for i in 0..40 {
        let needle = format!("Section {i}: 数据分析结果 😀 with details & <notes>");
        at += all[at..]
            .find(&needle)
            .unwrap_or_else(|| panic!("section {i} missing or out of order"));
    }
    for j in 0..45 {
        assert!(all.contains(&format!("let value_32_{j} = compute(\"中文\", {j}); // 🚀")));
    }
    // Every code chunk rendered as a balanced <pre> (the fake refuses unbalanced HTML).
    let sends = e.tg.calls_to("SendMessage");
    let edits = e.tg.calls_to("EditMessageText");
    let refused: Vec<_> = sends
        .iter()
        .chain(&edits)
        .filter(|c| !c.ok && c.error_code != Some(429))
        .filter(|c| {
            !c.description
                .as_deref()
                .is_some_and(|d| d.contains("not modified"))
        })
        .map(|c| {
            (
                c.method.clone(),
                c.description.clone(),
                c.params["text"].to_string(),
            )
        })
        .collect();
    assert!(refused.is_empty(), "{refused:#?}");
    let bob_first = sends
        .iter()
        .position(|c| c.ok && c.params["chat_id"] == 901)
        .unwrap();
    let ann_last = sends
        .iter()
        .rposition(|c| c.ok && c.params["chat_id"] == 900)
        .unwrap();
    assert!(
        bob_first < ann_last,
        "the calm chat was answered while the stormy one waited"
    );
    assert_eq!(e.tg.rate_limited_responses(), 3);
    assert_eq!(e.adapter.rate_limited_count(), 3);
    e.stop().await;
}

#[tokio::test]
async fn malformed_updates_and_forged_presses_are_ignored() {
    let e = E2e::start(|_| {}).await;
    e.llm.push(Reply::tool_calls([(
        "call_1",
        "exec_command",
        json!({"command": "echo mine"}),
    )]));
    e.tg.message(Where::Dm, &ann(), "run mine");
    e.wait("the card", |t| {
        t.bot_messages(900).iter().any(|m| m.reply_markup.is_some())
    })
    .await;
    let card = e.card(900).unwrap();

    e.tg.push_raw(json!({"message": {"this is": "not a message"}}));
    e.tg.push_raw(json!({"callback_query": "garbage"}));
    e.tg.callback(Where::Dm, &ann(), card.message_id, "zz:unknown:button");
    e.tg.callback(
        Where::Dm,
        &ann(),
        card.message_id,
        "way too long and not an action id at all, with spaces",
    );
    // Eve forges a press of Ann's approval from her own chat.
    e.tg.ensure_chat(Where::Dm, &eve());
    e.tg.callback(Where::Dm, &eve(), card.message_id, &button(&card, ":y"));
    e.wait("three answered presses", |t| {
        t.calls_to("AnswerCallbackQuery").len() == 3
    })
    .await;
    let texts = answer_texts(&e.tg);
    assert!(
        texts.iter().any(|t| t.contains("no longer valid")),
        "{texts:?}"
    );
    // Eve's press is in her own chat, not on the card: refused as such.
    assert!(
        texts
            .iter()
            .any(|t| t.contains("does not belong to this message")),
        "{texts:?}"
    );
    assert_eq!(
        e.tg.stored(900, card.message_id).unwrap().edits,
        0,
        "card unchanged"
    );
    assert_eq!(e.llm.requests().await.len(), 1, "nothing ran");

    // The poller is still running: Bob gets an answer.
    e.llm.push(Reply::text("Still here."));
    e.tg.message(Where::Dm, &bob(), "are you there?");
    e.wait("Bob's answer", |t| {
        t.bot_messages(901).iter().any(|m| m.text == "Still here.")
    })
    .await;
    e.stop().await;
}

/// Issue 23 item 2: a 50,000-character command used to become a 16-message
/// card (the payload buried mid-way) whose final edit failed with "message
/// too long", leaving live buttons. Now: one card message with the buttons,
/// the full text as `command.txt`, and the decided edit succeeds.
#[tokio::test]
async fn a_long_command_card_is_one_message_with_the_full_text_attached() {
    let e = E2e::start(|_| {}).await;
    let command = format!("echo {}; rm -rf data", "a".repeat(50_000));
    e.llm.push(Reply::tool_calls([(
        "call_1",
        "exec_command",
        json!({ "command": command }),
    )]));
    e.llm.push(Reply::text("Not run."));
    e.tg.message(Where::Dm, &ann(), "run the long one");
    e.wait("the card and its attachment", |t| {
        !t.documents(900).is_empty() && t.bot_messages(900).iter().any(|m| m.reply_markup.is_some())
    })
    .await;
    let msgs = e.tg.bot_messages(900);
    assert_eq!(msgs.len(), 2, "one card and one document: {msgs:#?}");
    let card = e.card(900).unwrap();
    assert_eq!(
        card.message_id, msgs[0].message_id,
        "the buttons are on the first message"
    );
    assert!(card.reply_markup.is_some());
    assert!(
        card.text.contains("The command is 50,"),
        "the card says the size: {}",
        card.text
    );
    assert!(
        card.text.contains("attached as command.txt"),
        "{}",
        card.text
    );
    assert!(
        !card.text.contains("rm -rf data"),
        "only the start is shown"
    );
    let docs = e.tg.documents(900);
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].file_name, "command.txt");
    assert!(
        docs[0].text().contains(&command),
        "the file holds the whole command"
    );

    e.tg.callback(Where::Dm, &ann(), card.message_id, &button(&card, ":n"));
    e.llm.wait_for_requests(2).await;
    e.answered(900, 3).await;
    let decided = e.tg.stored(900, card.message_id).unwrap();
    assert!(decided.reply_markup.is_none(), "the buttons are gone");
    assert!(decided.text.contains("Denied"), "{}", decided.text);
    assert!(
        e.tg.calls_to("EditMessageText").iter().all(|c| c.ok),
        "every edit of the card succeeded"
    );
    e.stop().await;
}

/// Issue 23 item 8: a 5 MB answer used to become ~1,220 messages. Now it goes
/// as `answer.md` with a short head in the chat.
#[tokio::test]
async fn a_huge_answer_goes_as_one_file_and_a_short_head() {
    let e = E2e::start(|_| {}).await;
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
    e.tg.message(Where::Dm, &ann(), "write a lot");
    e.wait("the attached answer", |t| !t.documents(900).is_empty())
        .await;
    if let Some(r) = &e.running {
        tokio::time::timeout(WAIT, r.idle()).await.unwrap();
    }
    let docs = e.tg.documents(900);
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].file_name, "answer.md");
    // Whole; a note may follow (e.g. when the exchange could not be saved).
    let got = docs[0].text();
    assert!(
        got.starts_with(&answer),
        "the file holds the whole answer: {} of {} bytes, ends {:?}",
        got.len(),
        answer.len(),
        &got[got.len().saturating_sub(200)..]
    );
    let texts: Vec<StoredMessage> =
        e.tg.bot_messages(900)
            .into_iter()
            .filter(|m| m.message_id != docs[0].message_id)
            .collect();
    assert!(texts.len() <= 2, "{} text messages", texts.len());
    assert!(
        texts
            .iter()
            .any(|m| m.text.contains("the full answer is attached as answer.md")),
        "{texts:#?}"
    );
    e.stop().await;
}
