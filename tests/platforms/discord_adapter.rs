//! The Discord adapter against the fake Discord (REST + gateway on 127.0.0.1):
//! normalization, outbound calls, interactions, pacing, sharding and robustness.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;
use support::fake_discord::{
    FakeDiscord, FakeDiscordOptions, Press, UserMessage, BOT_ID, GUILD_ID, INTENTS, TOKEN,
};
use switchboard_discord::{DiscordAdapter, DiscordConfig, DiscordError};
use switchboard_platform::{
    chunk_markdown, measure, ActionId, Activity, Addressed, Button, ButtonPress, ButtonStyle,
    ChatAddress, ChatId, ChatKind, Inbound, InboundMessage, LengthUnit, MessageId, MessageRef,
    OutgoingMessage, Platform, PlatformAdapter, PlatformError, PressAnswer, Secret, ThreadId,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub(crate) const CHANNEL: u64 = 1_200_000_000_000_000_001;
const OTHER_CHANNEL: u64 = 1_200_000_000_000_000_002;
const FREE_CHANNEL: u64 = 1_200_000_000_000_000_003;
const THREAD: u64 = 1_200_000_000_000_000_004;
const DM_CHANNEL: u64 = 1_200_000_000_000_000_005;
pub(crate) const ALICE: u64 = 1_300_000_000_000_000_001;
pub(crate) const BOB: u64 = 1_300_000_000_000_000_002;
const APPROVER: u64 = 1_300_000_000_000_000_003;
const APPROVER_ROLE: u64 = 1_400_000_000_000_000_001;
/// The managed role Discord gives the bot when it joins a guild.
const BOT_ROLE: u64 = 1_400_000_000_000_000_002;
const MODS_ROLE: u64 = 1_400_000_000_000_000_003;

pub(crate) struct Harness {
    pub(crate) fake: FakeDiscord,
    pub(crate) adapter: Arc<DiscordAdapter>,
    inbound: support::intake::Received,
    shutdown: CancellationToken,
    run: JoinHandle<Result<(), PlatformError>>,
}

fn config_for(fake: &FakeDiscord) -> DiscordConfig {
    let mut config = DiscordConfig::new(Secret::new(TOKEN));
    config.api_url = Some(fake.api_url.clone());
    config.approvers.insert(APPROVER);
    config.approver_roles.insert(APPROVER_ROLE);
    config.free_channels.insert(FREE_CHANNEL);
    config.timings.defer_after = Duration::from_millis(150);
    config
}

pub(crate) async fn harness(
    options: FakeDiscordOptions,
    tweak: impl FnOnce(&mut DiscordConfig),
) -> Harness {
    let fake = FakeDiscord::start_with(options).await;
    fake.add_text_channel(CHANNEL);
    fake.add_text_channel(OTHER_CHANNEL);
    fake.add_text_channel(FREE_CHANNEL);
    fake.add_thread(THREAD, CHANNEL);
    fake.add_dm(DM_CHANNEL);
    let mut config = config_for(&fake);
    tweak(&mut config);
    let shards = config.shard_range.map_or(config.shards, |(a, b)| b - a + 1) as usize;
    let adapter = Arc::new(DiscordAdapter::connect(config).await.expect("connect"));
    let (tx, inbound) = support::intake::acking(64);
    let shutdown = CancellationToken::new();
    let run = {
        let adapter = adapter.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move { adapter.run(tx, shutdown).await })
    };
    assert!(fake.wait_ready(shards).await, "shards never became ready");
    Harness {
        fake,
        adapter,
        inbound,
        shutdown,
        run,
    }
}

async fn start() -> Harness {
    harness(FakeDiscordOptions::default(), |_| {}).await
}

impl Harness {
    pub(crate) async fn next(&mut self) -> Inbound {
        tokio::time::timeout(Duration::from_secs(15), self.inbound.recv())
            .await
            .expect("no inbound event within 15 s")
            .expect("inbound channel closed")
    }

    async fn next_message(&mut self) -> InboundMessage {
        match self.next().await {
            Inbound::Message(m) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    pub(crate) async fn next_press(&mut self) -> ButtonPress {
        match self.next().await {
            Inbound::ButtonPress(p) => p,
            other => panic!("expected a press, got {other:?}"),
        }
    }

    /// Dispatches a user message and returns its normalized form.
    async fn say(&mut self, message: UserMessage) -> InboundMessage {
        self.fake.send_message(message).expect("shard connected");
        self.next_message().await
    }

    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        let result = tokio::time::timeout(Duration::from_secs(15), self.run)
            .await
            .expect("run ends after shutdown")
            .expect("run task");
        assert!(result.is_ok(), "{result:?}");
    }
}

pub(crate) fn channel(id: u64) -> ChatAddress {
    ChatAddress::new(Platform::Discord, ChatId(id as i64), None)
}

pub(crate) fn card(text: &str, ids: &[&str]) -> OutgoingMessage {
    let buttons = ids
        .iter()
        .map(|id| Button {
            label: format!("{id} label"),
            action: ActionId::parse(id).unwrap(),
            style: ButtonStyle::Primary,
            shortcut: None,
        })
        .collect();
    OutgoingMessage::text(text).with_buttons(vec![buttons])
}

fn fences_balanced(text: &str) -> bool {
    text.lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count()
        % 2
        == 0
}

#[tokio::test]
async fn identifies_with_token_intents_and_shard_then_heartbeats() {
    let h = start().await;
    let identifies = h.fake.identifies();
    assert_eq!(identifies.len(), 1);
    assert_eq!(identifies[0].shard, [0, 1]);
    assert_eq!(identifies[0].intents, INTENTS);
    assert!(identifies[0].token_ok);
    assert_eq!(h.adapter.bot_user_id(), BOT_ID);
    assert!(
        h.fake.wait_for(|f| f.heartbeats() >= 1).await,
        "no heartbeat"
    );
    let caps = h.adapter.capabilities();
    assert_eq!(
        (caps.max_message_len, caps.length_unit),
        (2000, LengthUnit::Chars)
    );
    h.stop().await;
}

#[tokio::test]
async fn guild_messages_are_gated_on_mention_reply_and_free_channels() {
    let mut h = start().await;

    let plain = h
        .say(UserMessage::new(CHANNEL, ALICE, "just chatting"))
        .await;
    assert_eq!(plain.addressed, Addressed::NotAddressed);
    assert_eq!(plain.chat_kind, ChatKind::Channel);
    assert_eq!(plain.chat, channel(CHANNEL));

    let mention = h
        .say(
            UserMessage::new(CHANNEL, ALICE, "what is 2+2?")
                .mentioning_bot()
                .named("Alice"),
        )
        .await;
    assert_eq!(mention.addressed, Addressed::Mention);
    assert_eq!(mention.text, "what is 2+2?");
    assert_eq!(mention.user.display_name, "Alice");
    assert_eq!(mention.user.id.get(), ALICE as i64);
    assert!(!mention.user.is_approver);

    let answer = h
        .adapter
        .send(
            &mention.chat,
            OutgoingMessage::text("4").replying_to(Some(mention.message_id)),
        )
        .await
        .unwrap();
    let reply = h
        .say(UserMessage::new(CHANNEL, ALICE, "and 3+3?").replying_to(answer.id.get() as u64))
        .await;
    assert_eq!(reply.addressed, Addressed::ReplyToBot);
    assert_eq!(reply.reply_to, Some(answer.id));

    let free = h.say(UserMessage::new(FREE_CHANNEL, BOB, "hello")).await;
    assert_eq!(free.addressed, Addressed::FreeChannel);

    // Bots (and the bot itself) are dropped: the next event is the marker.
    h.fake
        .send_message(
            UserMessage::new(CHANNEL, BOB, "beep")
                .by_a_bot()
                .mentioning_bot(),
        )
        .unwrap();
    h.fake
        .send_message(
            UserMessage::new(CHANNEL, BOT_ID, "myself")
                .named("switchboard")
                .by_a_bot(),
        )
        .unwrap();
    let marker = h.say(UserMessage::new(CHANNEL, BOB, "marker")).await;
    assert_eq!(marker.text, "marker");

    let by_id = h
        .say(UserMessage::new(CHANNEL, APPROVER, "hi").mentioning_bot())
        .await;
    assert!(by_id.user.is_approver);
    let by_role = h
        .say(
            UserMessage::new(CHANNEL, BOB, "hi")
                .mentioning_bot()
                .with_roles(&[APPROVER_ROLE]),
        )
        .await;
    assert!(by_role.user.is_approver);
    h.stop().await;
}

#[tokio::test]
async fn thread_messages_are_answered_in_the_thread() {
    let mut h = start().await;
    let msg = h
        .say(UserMessage::new(THREAD, ALICE, "in a thread").mentioning_bot())
        .await;
    assert_eq!(msg.chat_kind, ChatKind::Thread);
    assert_eq!(msg.chat, channel(THREAD));
    assert_eq!(msg.addressed, Addressed::Mention);
    h.adapter
        .send(&msg.chat, OutgoingMessage::text("threaded answer"))
        .await
        .unwrap();
    let posted = h.fake.bot_messages(THREAD);
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0]["content"], "threaded answer");
    assert!(h.fake.bot_messages(CHANNEL).is_empty());

    // An address naming the thread explicitly posts there too.
    let explicit = ChatAddress::new(
        Platform::Discord,
        ChatId(CHANNEL as i64),
        Some(ThreadId(THREAD as i64)),
    );
    h.adapter
        .send(&explicit, OutgoingMessage::text("again"))
        .await
        .unwrap();
    assert_eq!(h.fake.bot_messages(THREAD).len(), 2);

    // A thread under a free channel is free; its kind is looked up once.
    h.fake.add_thread(THREAD + 100, FREE_CHANNEL);
    let free = h
        .say(UserMessage::new(THREAD + 100, ALICE, "free thread"))
        .await;
    assert_eq!(
        (free.addressed, free.chat_kind),
        (Addressed::FreeChannel, ChatKind::Thread)
    );
    h.say(UserMessage::new(THREAD + 100, ALICE, "again")).await;
    let lookups = h
        .fake
        .accepted("GET", &format!("/channels/{}", THREAD + 100));
    assert_eq!(lookups.len(), 1);
    h.stop().await;
}

#[tokio::test]
async fn direct_messages_are_always_addressed() {
    let mut h = start().await;
    let dm = h
        .say(UserMessage::new(DM_CHANNEL, ALICE, "hello in private"))
        .await;
    assert_eq!(dm.addressed, Addressed::Dm);
    assert_eq!(dm.chat_kind, ChatKind::Dm);
    assert_eq!(dm.text, "hello in private");
    h.adapter
        .send(&dm.chat, OutgoingMessage::text("hi!"))
        .await
        .unwrap();
    assert_eq!(h.fake.bot_messages(DM_CHANNEL)[0]["content"], "hi!");
    // DMs need no channel look-up.
    assert!(h
        .fake
        .accepted("GET", &format!("/channels/{DM_CHANNEL}"))
        .is_empty());
    h.stop().await;
}

#[tokio::test]
async fn send_edit_typing_and_markdown() {
    let mut h = harness(FakeDiscordOptions::default(), |c| {
        c.timings.typing_interval = Duration::from_millis(40);
        c.timings.typing_delay = Duration::ZERO;
    })
    .await;
    let question = h
        .say(UserMessage::new(CHANNEL, ALICE, "stream please").mentioning_bot())
        .await;
    h.adapter
        .activity(&question.chat, Activity::Typing)
        .await
        .unwrap();
    assert!(
        h.fake.wait_for(|f| f.typing_calls(CHANNEL) >= 3).await,
        "typing not renewed"
    );

    let draft = h
        .adapter
        .send(
            &question.chat,
            OutgoingMessage::text("**Draft**").replying_to(Some(question.message_id)),
        )
        .await
        .unwrap();
    let create = h
        .fake
        .accepted("POST", &format!("/channels/{CHANNEL}/messages"));
    assert_eq!(
        create[0].body["message_reference"]["message_id"],
        question.message_id.get().to_string()
    );
    assert_eq!(create[0].body["content"], "**Draft**");

    h.adapter
        .edit(&draft, OutgoingMessage::text("**Draft** and `more`"))
        .await
        .unwrap();
    h.adapter
        .activity(&question.chat, Activity::Idle)
        .await
        .unwrap();
    let stored = h.fake.message(draft.id.get() as u64).unwrap();
    assert_eq!(stored["content"], "**Draft** and `more`");
    assert_eq!(stored["type"], 19);

    let after_idle = h.fake.typing_calls(CHANNEL);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        h.fake.typing_calls(CHANNEL) <= after_idle + 1,
        "typing continued after Idle"
    );

    let missing = MessageRef {
        chat: question.chat,
        id: MessageId(12345),
    };
    let err = h
        .adapter
        .edit(&missing, OutgoingMessage::text("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, PlatformError::NotFound), "{err:?}");
    let too_long = h
        .adapter
        .send(&question.chat, OutgoingMessage::text("x".repeat(2001)))
        .await;
    assert!(matches!(
        too_long,
        Err(PlatformError::TooLong {
            len: 2001,
            max: 2000
        })
    ));
    h.stop().await;
}

#[tokio::test]
async fn a_long_answer_is_chunked_with_balanced_fences() {
    let h = start().await;
    let code: String = (0..150)
        .map(|i| format!("    let value_{i} = compute({i}); // step {i}\n"))
        .collect();
    let prose = "Some explanation of the code above. ".repeat(40);
    let text =
        format!("# Result\n\n{prose}\n\n```rust\n{code}```\n\n{prose}\n\n```\n{code}```\n\nDone.");
    let chunks = chunk_markdown(&text, 2000, LengthUnit::Chars);
    assert!(chunks.len() >= 4);
    for chunk in &chunks {
        h.adapter
            .send(&channel(CHANNEL), OutgoingMessage::text(chunk.clone()))
            .await
            .unwrap();
    }
    let posted = h.fake.bot_messages(CHANNEL);
    assert_eq!(posted.len(), chunks.len());
    for (message, chunk) in posted.iter().zip(&chunks) {
        let content = message["content"].as_str().unwrap();
        assert_eq!(content, chunk);
        assert!(measure(content, LengthUnit::Chars) <= 2000);
        assert!(fences_balanced(content), "unbalanced fences in:\n{content}");
    }
    assert!(posted.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .ends_with("Done."));
    h.stop().await;
}

#[tokio::test]
async fn presses_become_button_presses_and_answers_become_callbacks() {
    // This test is about the callback shapes, not the clock: nothing expires.
    let options = FakeDiscordOptions {
        interaction_expiry: Duration::from_secs(60),
        ..FakeDiscordOptions::default()
    };
    let mut h = harness(options, |c| c.timings.defer_after = Duration::from_secs(30)).await;
    let card_ref = h
        .adapter
        .send(
            &channel(CHANNEL),
            card(
                "Run `rm -rf build`?",
                &["ap:1:allow", "ap:1:always", "ap:1:edit", "ap:1:deny"],
            ),
        )
        .await
        .unwrap();
    let card_id = card_ref.id.get() as u64;
    let stored = h.fake.message(card_id).unwrap();
    assert_eq!(
        stored["components"][0]["components"][3]["custom_id"],
        "ap:1:deny"
    );

    // Update (type 7): card replaced in the interaction response, buttons removed.
    h.fake
        .press(Press::new(card_id, "ap:1:allow", APPROVER))
        .unwrap();
    let press = h.next_press().await;
    assert_eq!(press.action.as_str(), "ap:1:allow");
    assert_eq!(press.user.id.get(), APPROVER as i64);
    assert!(press.user.is_approver);
    assert_eq!(press.message, Some(card_ref));
    assert_eq!(
        (press.chat, press.chat_kind),
        (channel(CHANNEL), ChatKind::Channel)
    );
    h.adapter
        .answer_press(
            &press,
            PressAnswer::Update(OutgoingMessage::text("✅ Allowed once by approver")),
        )
        .await
        .unwrap();
    let callbacks = h.fake.callbacks();
    assert_eq!(callbacks.len(), 1);
    assert_eq!(callbacks[0].kind, 7);
    assert_eq!(callbacks[0].data["components"], serde_json::json!([]));
    let stored = h.fake.message(card_id).unwrap();
    assert_eq!(stored["content"], "✅ Allowed once by approver");
    assert_eq!(stored["components"], serde_json::json!([]));

    // Answering the same press twice is refused locally.
    let again = h.adapter.answer_press(&press, PressAnswer::Ack).await;
    assert!(again.is_err());

    // Private (type 4, flags 64) for a foreign presser; the card is unchanged.
    let other = h
        .adapter
        .send(&channel(CHANNEL), card("Another card", &["ap:2:allow"]))
        .await
        .unwrap();
    h.fake
        .press(Press::new(other.id.get() as u64, "ap:2:allow", BOB))
        .unwrap();
    let foreign = h.next_press().await;
    assert!(!foreign.user.is_approver);
    h.adapter
        .answer_press(
            &foreign,
            PressAnswer::Private("Only the requester or an approver can decide.".into()),
        )
        .await
        .unwrap();
    let last = h.fake.callbacks().pop().unwrap();
    assert_eq!((last.kind, last.data["flags"].as_u64()), (4, Some(64)));
    assert_eq!(
        h.fake.message(other.id.get() as u64).unwrap()["content"],
        "Another card"
    );

    // Ack (type 6); an approver by role.
    h.fake
        .press(Press::new(other.id.get() as u64, "ap:2:allow", BOB).with_roles(&[APPROVER_ROLE]))
        .unwrap();
    let by_role = h.next_press().await;
    assert!(by_role.user.is_approver);
    h.adapter
        .answer_press(&by_role, PressAnswer::Ack)
        .await
        .unwrap();
    assert_eq!(h.fake.callbacks().pop().unwrap().kind, 6);
    h.stop().await;
}

#[tokio::test]
async fn a_slow_answer_is_deferred_then_delivered_through_the_webhook() {
    let mut h = start().await; // defer_after = 150 ms
    let card_ref = h
        .adapter
        .send(
            &channel(CHANNEL),
            card("Deploy?", &["ap:9:allow", "ap:9:deny"]),
        )
        .await
        .unwrap();
    let card_id = card_ref.id.get() as u64;

    h.fake
        .press(Press::new(card_id, "ap:9:allow", ALICE))
        .unwrap();
    let press = h.next_press().await;
    assert!(
        h.fake
            .wait_for(|f| f.callbacks().iter().any(|c| c.kind == 6))
            .await,
        "never deferred"
    );
    h.adapter
        .answer_press(
            &press,
            PressAnswer::Update(OutgoingMessage::text("✅ Deployed")),
        )
        .await
        .unwrap();
    let followups = h.fake.followups();
    assert_eq!(followups.len(), 1);
    assert!(followups[0].edit_original);
    let stored = h.fake.message(card_id).unwrap();
    assert_eq!(stored["content"], "✅ Deployed");
    assert_eq!(stored["components"], serde_json::json!([]));
    assert_eq!(
        h.fake.callbacks().len(),
        1,
        "exactly one callback per interaction"
    );

    let other = h
        .adapter
        .send(&channel(CHANNEL), card("Again?", &["ap:10:allow"]))
        .await
        .unwrap();
    h.fake
        .press(Press::new(other.id.get() as u64, "ap:10:allow", BOB))
        .unwrap();
    let press = h.next_press().await;
    assert!(
        h.fake.wait_for(|f| f.callbacks().len() == 2).await,
        "never deferred"
    );
    h.adapter
        .answer_press(&press, PressAnswer::Private("Already decided.".into()))
        .await
        .unwrap();
    let followup = h.fake.followups().pop().unwrap();
    assert!(!followup.edit_original && followup.ephemeral());
    assert_eq!(followup.body["content"], "Already decided.");
    h.stop().await;
}

#[tokio::test]
async fn malformed_payloads_and_unknown_custom_ids_are_ignored() {
    let mut h = start().await;
    let card_ref = h
        .adapter
        .send(&channel(CHANNEL), card("Card", &["ap:5:allow"]))
        .await
        .unwrap();
    // Discord only sends presses of buttons the message carries.
    assert_eq!(
        h.fake
            .press(Press::new(card_ref.id.get() as u64, "ap:6:allow", ALICE)),
        None
    );
    // Ids that are not action ids can only come from a card the bot posted
    // long ago (an older version, another scheme).
    let odd_ids = ["not an action", "ünknown", &"x".repeat(90)];
    let old_card = h.fake.plant_bot_message(CHANNEL, "Old card", &odd_ids);
    assert!(h.fake.send_raw(0, "this is not json"));
    assert!(h.fake.send_raw(
        0,
        r#"{"op":0,"t":"MESSAGE_CREATE","s":3,"d":{"bogus":true}}"#
    ));
    assert!(h.fake.send_raw(
        0,
        r#"{"op":0,"t":"INTERACTION_CREATE","s":4,"d":{"type":3}}"#
    ));
    assert!(h.fake.send_raw(0, r#"{"op":77,"d":null}"#));
    assert!(h.fake.send_raw(0, r#"[1,2,3]"#));
    // Not an action id (space, non-ASCII, too long): acknowledged, never forwarded.
    for custom_id in odd_ids {
        h.fake
            .press(Press::new(old_card, custom_id, ALICE))
            .unwrap();
    }
    let after = h
        .say(UserMessage::new(CHANNEL, ALICE, "still there?").mentioning_bot())
        .await;
    assert_eq!(after.text, "still there?");
    assert!(
        h.fake.wait_for(|f| f.callbacks().len() == 3).await,
        "ignored presses not acknowledged"
    );
    assert!(h.fake.callbacks().iter().all(|c| c.kind == 6));
    assert_eq!(h.fake.identifies().len(), 1, "the connection was kept");
    assert_eq!(h.fake.resumes(), 0, "...without even a resume");
    assert!(h.inbound.try_recv().is_err(), "nothing else was forwarded");
    h.stop().await;
}

#[tokio::test]
async fn a_dropped_connection_resumes_and_keeps_delivering() {
    let mut h = start().await;
    let link = |h: &Harness| h.adapter.link();
    assert!(
        wait_until(|| link(&h).state == switchboard_platform::LinkState::Connected).await,
        "{:?}",
        link(&h)
    );
    assert!(h.fake.drop_connection(0));
    assert!(
        h.fake
            .wait_for(|f| f.resumes() >= 1 && f.connected_shards() == vec![0])
            .await,
        "no resume"
    );
    // The console shows the drop as the last error, and the resumed
    // connection as connected.
    assert!(
        wait_until(|| {
            let now = link(&h);
            now.state == switchboard_platform::LinkState::Connected && now.last_error.is_some()
        })
        .await,
        "{:?}",
        link(&h)
    );
    let msg = h
        .say(UserMessage::new(CHANNEL, ALICE, "after resume").mentioning_bot())
        .await;
    assert_eq!(msg.text, "after resume");
    assert_eq!(h.fake.identifies().len(), 1);
    h.stop().await;
}

#[tokio::test]
async fn a_rate_limited_channel_pauses_while_another_flows() {
    let h = start().await;
    // Long enough for the other channel's three messages within its own quota
    // (two at once, the third 1.26 s later).
    h.fake.rate_limit_channel(CHANNEL, 1, 3.0);
    let a = {
        let adapter = h.adapter.clone();
        tokio::spawn(async move {
            for i in 0..3 {
                adapter
                    .send(&channel(CHANNEL), OutgoingMessage::text(format!("a{i}")))
                    .await
                    .unwrap();
            }
        })
    };
    assert!(h.fake.wait_for(|f| f.rate_limited() == 1).await);
    for i in 0..3 {
        h.adapter
            .send(
                &channel(OTHER_CHANNEL),
                OutgoingMessage::text(format!("b{i}")),
            )
            .await
            .unwrap();
    }
    a.await.unwrap();
    let texts = |c: u64| -> Vec<String> {
        h.fake
            .bot_messages(c)
            .iter()
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        texts(CHANNEL),
        ["a0", "a1", "a2"],
        "nothing lost, duplicated or reordered"
    );
    assert_eq!(texts(OTHER_CHANNEL), ["b0", "b1", "b2"]);
    // The other channel flowed while this one waited out retry_after.
    let calls = h.fake.calls();
    let first_a = calls
        .iter()
        .position(|c| c.path.contains(&CHANNEL.to_string()) && c.status == 200)
        .unwrap();
    let last_b = calls
        .iter()
        .rposition(|c| c.path.contains(&OTHER_CHANNEL.to_string()))
        .unwrap();
    assert!(
        last_b < first_a,
        "the other channel waited for the paused one"
    );
    assert_eq!(h.adapter.rate_limited_count(), 1);
    h.stop().await;
}

#[tokio::test]
async fn a_global_rate_limit_pauses_every_channel() {
    let h = start().await;
    h.fake.rate_limit_global(1, 0.5);
    let first = {
        let adapter = h.adapter.clone();
        tokio::spawn(async move {
            adapter
                .send(&channel(CHANNEL), OutgoingMessage::text("first"))
                .await
        })
    };
    // Once the adapter has seen the global 429, another channel must wait too.
    while h.adapter.rate_limited_count() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    h.adapter
        .send(&channel(OTHER_CHANNEL), OutgoingMessage::text("second"))
        .await
        .unwrap();
    first.await.unwrap().unwrap();
    let posts: Vec<_> = h
        .fake
        .calls()
        .into_iter()
        .filter(|c| c.method == "POST")
        .collect();
    assert_eq!(posts.len(), 3);
    assert_eq!(posts[0].status, 429);
    for later in &posts[1..] {
        assert_eq!(later.status, 200);
        // retry_after is honoured bot-wide, not only by the refused channel.
        assert!(later.at.duration_since(posts[0].at) >= Duration::from_millis(500));
    }
    assert_eq!(h.fake.bot_messages(CHANNEL).len(), 1);
    assert_eq!(h.fake.bot_messages(OTHER_CHANNEL).len(), 1);
    assert_eq!(h.adapter.rate_limited_count(), 1);
    h.stop().await;
}

#[tokio::test]
async fn a_shard_range_identifies_only_its_shards() {
    let options = FakeDiscordOptions {
        shards: 4,
        ..FakeDiscordOptions::default()
    };
    let mut h = harness(options, |c| {
        c.shards = 4;
        c.shard_range = Some((2, 3));
    })
    .await;
    let mut shards: Vec<[u32; 2]> = h.fake.identifies().iter().map(|i| i.shard).collect();
    shards.sort_unstable();
    assert_eq!(shards, [[2, 4], [3, 4]]);
    assert_eq!(h.fake.connected_shards(), [2, 3]);
    let guild = FakeDiscord::guild_for_shard(3, 4);
    h.fake.add_channel_in(guild, 1_500_000_000_000_000_001);
    let msg = h
        .say(UserMessage::new(1_500_000_000_000_000_001, ALICE, "via shard 3").mentioning_bot())
        .await;
    assert_eq!(msg.text, "via shard 3");
    h.stop().await;
}

#[tokio::test]
async fn a_wrong_token_is_refused_and_never_echoed() {
    let fake = FakeDiscord::start().await;
    let mut config = config_for(&fake);
    let wrong = "wrong-token.not-the-right-one-123";
    config.token = Secret::new(wrong);
    let err = match DiscordAdapter::connect(config.clone()).await {
        Err(e) => e,
        Ok(_) => panic!("a wrong token must be refused"),
    };
    assert!(matches!(err, DiscordError::Unauthorized), "{err:?}");
    for text in [err.to_string(), format!("{err:?}"), format!("{config:?}")] {
        assert!(!text.contains(wrong), "token leaked: {text}");
    }
    assert!(err.to_string().contains("DISCORD_BOT_TOKEN"));
    assert_eq!(fake.calls()[0].status, 401);
}

#[tokio::test]
async fn errors_never_contain_the_token() {
    let h = start().await;
    let unknown = channel(1_600_000_000_000_000_001);
    let err = h
        .adapter
        .send(&unknown, OutgoingMessage::text("hello"))
        .await
        .unwrap_err();
    assert!(matches!(err, PlatformError::NotFound), "{err:?}");
    let bogus = ButtonPress {
        handle: switchboard_platform::PressHandle("1:2:expired-token".into()),
        ..press_template()
    };
    let err = h
        .adapter
        .answer_press(&bogus, PressAnswer::Ack)
        .await
        .unwrap_err();
    for text in [err.to_string(), format!("{err:?}")] {
        assert!(!text.contains(TOKEN), "token leaked: {text}");
    }
    h.stop().await;
}

fn press_template() -> ButtonPress {
    ButtonPress {
        chat: channel(CHANNEL),
        chat_kind: ChatKind::Channel,
        user: switchboard_platform::User {
            is_approver: false,
            id: switchboard_platform::UserId(ALICE as i64),
            display_name: "alice".into(),
            is_bot: false,
        },
        action: ActionId::parse("ap:0:allow").unwrap(),
        message: None,
        handle: switchboard_platform::PressHandle(String::new()),
        timestamp: chrono::Utc::now(),
        parent: None,
        input: Default::default(),
    }
}

#[tokio::test]
async fn run_ends_when_the_core_stops_listening() {
    let Harness {
        fake,
        adapter: _adapter,
        inbound,
        shutdown: _shutdown,
        run,
    } = start().await;
    drop(inbound);
    fake.send_message(UserMessage::new(CHANNEL, ALICE, "anyone?").mentioning_bot())
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(15), run)
        .await
        .expect("run ends once the sink is closed")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
}

/// The message ids the core received, per channel, in the order received.
fn ids_by_channel(received: &[InboundMessage]) -> std::collections::HashMap<i64, Vec<u64>> {
    let mut by_channel = std::collections::HashMap::<i64, Vec<u64>>::new();
    for m in received {
        by_channel
            .entry(m.chat.chat.get())
            .or_default()
            .push(m.message_id.get() as u64);
    }
    by_channel
}

/// serenity hands every gateway event to a task of its own, so on a
/// multi-thread runtime two back-to-back MESSAGE_CREATEs can reach the adapter
/// in either order; the core must still see each channel's messages in the
/// order Discord created them (snowflake order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn back_to_back_messages_reach_the_core_in_snowflake_order() {
    let mut h = start().await;
    // Look both channels up first, so only the gateway is in play below.
    h.say(UserMessage::new(CHANNEL, ALICE, "warm up")).await;
    h.say(UserMessage::new(OTHER_CHANNEL, BOB, "warm up")).await;
    for round in 0..5 {
        let mut sent = std::collections::HashMap::<i64, Vec<u64>>::new();
        for i in 0..100 {
            let (chat, user) = if i % 3 == 2 {
                (OTHER_CHANNEL, BOB)
            } else {
                (CHANNEL, ALICE)
            };
            let id = h
                .fake
                .send_message(UserMessage::new(chat, user, format!("{round}-{i}")))
                .expect("shard connected");
            sent.entry(chat as i64).or_default().push(id);
        }
        let mut received = Vec::new();
        for _ in 0..100 {
            received.push(h.next_message().await);
        }
        // The fake mints increasing snowflakes, so sending order is id order.
        let received = ids_by_channel(&received);
        for (chat, ids) in &sent {
            let got = &received[chat];
            let misplaced = ids.iter().zip(got).filter(|(a, b)| a != b).count();
            assert_eq!(got.len(), ids.len(), "round {round}: lost or duplicated");
            assert_eq!(
                misplaced, 0,
                "round {round}: {misplaced} out of order in {chat}"
            );
        }
    }
    h.stop().await;
}

#[tokio::test]
async fn a_failed_channel_lookup_is_tried_again() {
    // No pause before asking again (its length is unit-tested on a paused clock).
    let mut h = harness(FakeDiscordOptions::default(), |c| {
        c.timings.lookup_retry = Duration::ZERO;
    })
    .await;
    let thread = THREAD + 200;
    h.fake.add_thread(thread, FREE_CHANNEL);
    h.fake.fail_channel_lookups(thread, 1);
    // Discord answered 500: this one message cannot know it is in a thread…
    let first = h.say(UserMessage::new(thread, ALICE, "hello?")).await;
    assert_eq!(first.chat, channel(thread), "the chat is right either way");
    assert_eq!(first.chat_kind, ChatKind::Channel);
    // …but the next one asks again and is answered as in a free thread.
    let second = h.say(UserMessage::new(thread, ALICE, "anyone?")).await;
    assert_eq!(
        (second.chat_kind, second.addressed),
        (ChatKind::Thread, Addressed::FreeChannel)
    );
    let lookups: Vec<u16> = h
        .fake
        .calls()
        .iter()
        .filter(|c| c.method == "GET" && c.path == format!("/channels/{thread}"))
        .map(|c| c.status)
        .collect();
    assert_eq!(lookups, [500, 200]);
    // A successful look-up is remembered.
    h.say(UserMessage::new(thread, ALICE, "again")).await;
    assert_eq!(
        h.fake.accepted("GET", &format!("/channels/{thread}")).len(),
        1
    );
    h.stop().await;
}

/// The statuses of the fake's answers to look-ups of the bot's member in the
/// default guild, oldest first.
fn member_lookups(fake: &FakeDiscord) -> Vec<u16> {
    fake.calls()
        .iter()
        .filter(|c| {
            c.method == "GET" && c.path.starts_with(&format!("/guilds/{GUILD_ID}/members/"))
        })
        .map(|c| c.status)
        .collect()
}

#[tokio::test]
async fn a_mention_of_the_bots_role_is_a_mention() {
    let mut h = start().await;
    h.fake.give_bot_roles(GUILD_ID, &[BOT_ROLE]);
    // Ordinary messages cost no look-up of the bot's roles.
    let plain = h.say(UserMessage::new(CHANNEL, ALICE, "hello")).await;
    assert_eq!(plain.addressed, Addressed::NotAddressed);
    assert!(member_lookups(&h.fake).is_empty());

    // "@switchboard" picked from autocomplete as the bot's managed role.
    let by_role = h
        .say(UserMessage::new(CHANNEL, ALICE, "what is 2+2?").mentioning_role(BOT_ROLE))
        .await;
    assert_eq!(by_role.addressed, Addressed::Mention);
    assert_eq!(by_role.text, "what is 2+2?");
    assert_eq!(
        h.fake
            .accepted("GET", &format!("/guilds/{GUILD_ID}/members/{BOT_ID}"))
            .len(),
        1
    );

    // In a thread too; the roles are remembered per guild.
    let in_thread = h
        .say(UserMessage::new(THREAD, BOB, "and 3+3?").mentioning_role(BOT_ROLE))
        .await;
    assert_eq!(
        (
            in_thread.addressed,
            in_thread.chat_kind,
            in_thread.text.as_str()
        ),
        (Addressed::Mention, ChatKind::Thread, "and 3+3?")
    );
    let both = h
        .say(
            UserMessage::new(CHANNEL, BOB, "twice")
                .mentioning_role(BOT_ROLE)
                .mentioning_bot(),
        )
        .await;
    assert_eq!(
        (both.addressed, both.text.as_str()),
        (Addressed::Mention, "twice")
    );
    assert_eq!(member_lookups(&h.fake), [200]);
    h.stop().await;
}

#[tokio::test]
async fn a_mention_of_another_role_is_not_addressed() {
    let mut h = start().await;
    h.fake.give_bot_roles(GUILD_ID, &[BOT_ROLE]);
    let mods = h
        .say(UserMessage::new(CHANNEL, ALICE, "please look").mentioning_role(MODS_ROLE))
        .await;
    assert_eq!(mods.addressed, Addressed::NotAddressed);
    assert_eq!(mods.text, format!("<@&{MODS_ROLE}> please look"));
    // In a free channel it is free talk, not a mention.
    let free = h
        .say(UserMessage::new(FREE_CHANNEL, ALICE, "hi mods").mentioning_role(MODS_ROLE))
        .await;
    assert_eq!(free.addressed, Addressed::FreeChannel);
    // A user mention whose digits are the bot's role is someone else.
    let user = h
        .say(UserMessage::new(
            CHANNEL,
            ALICE,
            format!("<@{BOT_ROLE}> hey"),
        ))
        .await;
    assert_eq!(user.addressed, Addressed::NotAddressed);
    assert_eq!(member_lookups(&h.fake), [200]);
    h.stop().await;
}

#[tokio::test]
async fn a_failed_member_lookup_is_tried_again() {
    // No pause before asking again (its length is unit-tested on a paused clock).
    let mut h = harness(FakeDiscordOptions::default(), |c| {
        c.timings.lookup_retry = Duration::ZERO;
    })
    .await;
    h.fake.give_bot_roles(GUILD_ID, &[BOT_ROLE]);
    h.fake.fail_member_lookups(GUILD_ID, 1);
    // Discord answered 500: this message is delivered, just not as a mention…
    let first = h
        .say(UserMessage::new(CHANNEL, ALICE, "hello?").mentioning_role(BOT_ROLE))
        .await;
    assert_eq!(first.addressed, Addressed::NotAddressed);
    assert_eq!(first.text, format!("<@&{BOT_ROLE}> hello?"));
    // …the pump goes on with other messages…
    let mention = h
        .say(UserMessage::new(CHANNEL, BOB, "still there?").mentioning_bot())
        .await;
    assert_eq!(mention.addressed, Addressed::Mention);
    // …and the next role mention asks again.
    let second = h
        .say(UserMessage::new(CHANNEL, ALICE, "anyone?").mentioning_role(BOT_ROLE))
        .await;
    assert_eq!(
        (second.addressed, second.text.as_str()),
        (Addressed::Mention, "anyone?")
    );
    assert_eq!(member_lookups(&h.fake), [500, 200]);
    // A successful look-up is remembered.
    h.say(UserMessage::new(CHANNEL, ALICE, "again").mentioning_role(BOT_ROLE))
        .await;
    assert_eq!(member_lookups(&h.fake), [500, 200]);
    h.stop().await;
}

#[tokio::test]
async fn the_fake_serves_the_bots_member_like_discord() {
    let fake = FakeDiscord::start().await;
    fake.add_text_channel(CHANNEL);
    fake.give_bot_roles(GUILD_ID, &[BOT_ROLE]);
    let client = reqwest::Client::new();
    let get = |path: String, auth: bool| {
        let mut request = client.get(format!("{}/api/v10{path}", fake.api_url));
        if auth {
            request = request.header("authorization", format!("Bot {TOKEN}"));
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<serde_json::Value>().await.unwrap())
        }
    };
    let me = format!("/guilds/{GUILD_ID}/members/{BOT_ID}");
    assert_eq!(get(me.clone(), false).await.0, 401);
    let (status, member) = get(me, true).await;
    assert_eq!(status, 200);
    assert_eq!(member["roles"], serde_json::json!([BOT_ROLE.to_string()]));
    assert_eq!(member["user"]["id"], BOT_ID.to_string());
    assert!(member["joined_at"].is_string());
    let (status, body) = get(format!("/guilds/{}/members/{BOT_ID}", GUILD_ID + 1), true).await;
    assert_eq!((status, body["code"].as_u64()), (404, Some(10004)));
    assert_eq!(body["message"], "Unknown Guild");
    let (status, body) = get(format!("/guilds/{GUILD_ID}/members/{ALICE}"), true).await;
    assert_eq!((status, body["code"].as_u64()), (404, Some(10007)));
    // `@me` is only for PATCH (Modify Current Member) on Discord.
    let (status, _) = get(format!("/guilds/{GUILD_ID}/members/@me"), true).await;
    assert_eq!(status, 405);
}

#[tokio::test]
async fn a_rate_limited_command_registration_does_not_stall_channel_lookups() {
    let mut h = start().await;
    h.fake.rate_limit_commands(1, 60.0);
    let register = {
        let adapter = h.adapter.clone();
        tokio::spawn(async move {
            let commands = [switchboard_platform::CommandInfo::new(
                "help",
                "What I can do",
            )];
            adapter.set_commands(&commands).await
        })
    };
    assert!(
        h.fake
            .wait_for(|f| f
                .calls()
                .iter()
                .any(|c| c.method == "PUT" && c.status == 429))
            .await,
        "the registration was never refused"
    );
    let thread = THREAD + 300;
    h.fake.add_thread(thread, FREE_CHANNEL);
    let msg = h.say(UserMessage::new(thread, ALICE, "hi")).await;
    assert_eq!(
        (msg.chat_kind, msg.addressed),
        (ChatKind::Thread, Addressed::FreeChannel),
        "the look-up waited for the registration's 429"
    );
    register.abort();
    h.stop().await;
}

#[tokio::test]
async fn a_slow_callback_does_not_hold_up_another_press() {
    // Discord's 3 s expiry; no deferral interferes.
    let mut h = harness(FakeDiscordOptions::default(), |c| {
        c.timings.defer_after = Duration::from_secs(2);
        c.timings.callback_timeout = Duration::from_secs(1);
    })
    .await;
    let first = h
        .adapter
        .send(&channel(CHANNEL), card("First?", &["ap:21:allow"]))
        .await
        .unwrap();
    let second = h
        .adapter
        .send(&channel(OTHER_CHANNEL), card("Second?", &["ap:22:allow"]))
        .await
        .unwrap();
    h.fake.slow_next_callback(Duration::from_secs(10));
    // Snowflakes minted in a fresh millisecond share their low bits.
    tokio::time::sleep(Duration::from_millis(5)).await;
    h.fake
        .press(Press::new(first.id.get() as u64, "ap:21:allow", APPROVER))
        .unwrap();
    let slow = h.next_press().await;
    let slow_answer = {
        let adapter = h.adapter.clone();
        tokio::spawn(async move { adapter.answer_press(&slow, PressAnswer::Ack).await })
    };
    assert!(h.fake.wait_for(|f| f.callbacks().len() == 1).await);
    tokio::time::sleep(Duration::from_millis(5)).await;
    let quick_id = h
        .fake
        .press(Press::new(second.id.get() as u64, "ap:22:allow", APPROVER))
        .unwrap();
    let quick = h.next_press().await;
    h.adapter
        .answer_press(&quick, PressAnswer::Private("Decided.".into()))
        .await
        .expect("answered within Discord's 3 s");
    assert!(h
        .fake
        .callbacks()
        .iter()
        .any(|c| c.interaction == quick_id && c.kind == 4));
    // The slow one gives up instead of holding its interaction for 30 s.
    let slow = tokio::time::timeout(Duration::from_secs(15), slow_answer)
        .await
        .expect("the slow callback gave up")
        .unwrap();
    assert!(matches!(slow, Err(PlatformError::Network(_))), "{slow:?}");
    h.stop().await;
}

#[tokio::test]
async fn typing_lasts_until_the_last_turn_in_the_channel_ends() {
    let h = harness(FakeDiscordOptions::default(), |c| {
        c.timings.typing_interval = Duration::from_millis(40);
        c.timings.typing_delay = Duration::ZERO;
    })
    .await;
    let chat = channel(CHANNEL);
    // Alice's and Bob's turns run in the same channel.
    h.adapter.activity(&chat, Activity::Typing).await.unwrap();
    h.adapter.activity(&chat, Activity::Typing).await.unwrap();
    assert!(h.fake.wait_for(|f| f.typing_calls(CHANNEL) >= 2).await);
    // Alice's ends; Bob's still runs.
    h.adapter.activity(&chat, Activity::Idle).await.unwrap();
    let after_first = h.fake.typing_calls(CHANNEL);
    assert!(
        h.fake
            .wait_for(|f| f.typing_calls(CHANNEL) >= after_first + 3)
            .await,
        "typing stopped while another turn still runs"
    );
    // Bob's ends too.
    h.adapter.activity(&chat, Activity::Idle).await.unwrap();
    let after_last = h.fake.typing_calls(CHANNEL);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        h.fake.typing_calls(CHANNEL) <= after_last + 1,
        "typing continued after the last turn ended"
    );
    // A stray Idle is no debt: the next turn types, and its Idle stops it.
    h.adapter.activity(&chat, Activity::Idle).await.unwrap();
    h.adapter.activity(&chat, Activity::Typing).await.unwrap();
    let before = h.fake.typing_calls(CHANNEL);
    assert!(
        h.fake
            .wait_for(|f| f.typing_calls(CHANNEL) >= before + 2)
            .await
    );
    h.adapter.activity(&chat, Activity::Idle).await.unwrap();
    let stopped = h.fake.typing_calls(CHANNEL);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(h.fake.typing_calls(CHANNEL) <= stopped + 1);
    h.stop().await;
}

/// Polls `check` for up to 15 s.
async fn wait_until(check: impl Fn() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !check() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}
