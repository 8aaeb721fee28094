//! A streamed answer shown as the platform's native draft, against a
//! recording adapter on a paused clock: kept alive through a long silence,
//! tried again once what it gave way to is over, turned into edits when refused, never a
//! lasting message, never shown after the final answer, and scrubbed like
//! every post.

use super::ReplyStream;
use crate::gateway::delivery::scrubbed::ScrubbedAdapter;
use async_trait::async_trait;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_platform::{
    Activity, ButtonPress, Capabilities, ChatAddress, ChatId, DraftId, Drafts, GaveWay,
    InboundSink, LengthUnit, MessageId, MessageRef, OutgoingMessage, Platform, PlatformAdapter,
    PlatformError, PressAnswer,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const INTERVAL: Duration = Duration::from_secs(1);
const LIFETIME: Duration = Duration::from_secs(30);

/// One call the adapter received: when, which, with what text.
#[derive(Debug, Clone)]
struct Call {
    at: Instant,
    op: &'static str,
    text: String,
}

/// Records every call; `draft` answers from `answers`, then `Ok(true)`.
struct Recorder {
    caps: Capabilities,
    drafts: bool,
    answers: Mutex<VecDeque<Result<bool, PlatformError>>>,
    calls: Mutex<Vec<Call>>,
}

impl Recorder {
    fn new(drafts: bool, answers: Vec<Result<bool, PlatformError>>) -> Arc<Recorder> {
        Arc::new(Recorder {
            caps: Capabilities {
                max_message_len: 4096,
                length_unit: LengthUnit::Utf16,
                can_edit: true,
                buttons: true,
                threads: false,
                min_edit_interval: INTERVAL,
                private_answers: true,
                max_upload_bytes: 0,
                max_download_bytes: 0,
                answer_buttons: true,
                local_operator: false,
                forms: false,
                menus: false,
            },
            drafts,
            answers: Mutex::new(answers.into()),
            calls: Mutex::new(Vec::new()),
        })
    }

    fn record(&self, op: &'static str, text: &str) -> usize {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.push(Call {
            at: Instant::now(),
            op,
            text: text.to_owned(),
        });
        calls.len()
    }

    fn calls(&self, op: &str) -> Vec<Call> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.iter().filter(|c| c.op == op).cloned().collect()
    }
}

fn chat() -> ChatAddress {
    ChatAddress::new(Platform::Telegram, ChatId(5), None)
}

#[async_trait]
impl PlatformAdapter for Recorder {
    fn platform(&self) -> Platform {
        Platform::Telegram
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, _: InboundSink, _: CancellationToken) -> Result<(), PlatformError> {
        Ok(())
    }

    async fn send(
        &self,
        to: &ChatAddress,
        message: OutgoingMessage,
    ) -> Result<MessageRef, PlatformError> {
        let n = self.record("send", &message.text);
        Ok(MessageRef {
            chat: *to,
            id: MessageId(i64::try_from(n).unwrap_or_default()),
        })
    }

    async fn edit(&self, _: &MessageRef, message: OutgoingMessage) -> Result<(), PlatformError> {
        self.record("edit", &message.text);
        Ok(())
    }

    async fn answer_press(&self, _: &ButtonPress, _: PressAnswer) -> Result<(), PlatformError> {
        Ok(())
    }

    async fn activity(&self, _: &ChatAddress, _: Activity) -> Result<(), PlatformError> {
        Ok(())
    }

    fn drafts(&self, _: &ChatAddress) -> Option<Drafts> {
        self.drafts.then_some(Drafts {
            min_interval: INTERVAL,
            lifetime: LIFETIME,
        })
    }

    async fn draft(&self, _: &ChatAddress, _: DraftId, text: &str) -> Result<bool, PlatformError> {
        self.record("draft", text);
        let answer = self
            .answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        answer.unwrap_or(Ok(true))
    }

    /// What a draft gave way to (the chat's message) is over 300 ms later.
    async fn wait_turn(&self, _: &ChatAddress, call: GaveWay, within: Duration) {
        self.record("wait_turn", &format!("{call:?} within {within:?}"));
        tokio::time::sleep(Duration::from_millis(300).min(within)).await;
    }
}

/// Milliseconds from `start` to each call.
fn times(calls: &[Call], start: Instant) -> Vec<u128> {
    calls
        .iter()
        .map(|c| c.at.duration_since(start).as_millis())
        .collect()
}

/// A tool runs for 70 s after the answer's first words: the draft is shown
/// again every 20 s (two thirds of its 30 s), unchanged, and never becomes a
/// message until the final answer, which is sent anew.
#[tokio::test(start_paused = true)]
async fn a_native_draft_is_shown_again_while_a_long_tool_runs() {
    let adapter = Recorder::new(true, Vec::new());
    let mut reply = ReplyStream::new(adapter.clone(), chat(), None);
    let start = Instant::now();
    reply.push("Looking it up").await;
    tokio::time::sleep(INTERVAL).await;
    assert!(
        adapter.calls("draft").is_empty(),
        "the first update waits an interval"
    );
    reply.set_status("searching the web".to_owned()).await;
    tokio::time::sleep(Duration::from_secs(70)).await;

    let drafts = adapter.calls("draft");
    assert_eq!(times(&drafts, start), [1_000, 21_000, 41_000, 61_000]);
    assert!(drafts
        .iter()
        .all(|c| c.text == "Looking it up\n\n⏳ searching the web"));
    assert!(reply.first_byte().is_some());
    assert!(!reply.posted(), "a draft is not a lasting message");
    assert!(adapter.calls("send").is_empty() && adapter.calls("edit").is_empty());

    reply.push(", found it.").await;
    let refs = reply.finish("Looking it up, found it.").await;
    assert_eq!(refs.map(|r| r.len()).ok(), Some(1));
    let sent = adapter.calls("send");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].text, "Looking it up, found it.");
    assert!(adapter.calls("edit").is_empty(), "no edit after drafts");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(adapter.calls("draft").len(), 4, "none after the answer");
}

/// The final answer stops the draft's task: text handed to it but not shown
/// yet is dropped, and no draft follows the answer.
#[tokio::test(start_paused = true)]
async fn no_draft_follows_the_final_answer() {
    let adapter = Recorder::new(true, Vec::new());
    let mut reply = ReplyStream::new(adapter.clone(), chat(), None);
    let start = Instant::now();
    reply.push("One").await;
    tokio::time::sleep(INTERVAL).await;
    reply.push(" two").await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    reply.push(" three").await;
    tokio::time::sleep(INTERVAL).await;
    reply.push(" four").await;
    let refs = reply.finish("One two three four five").await;
    assert_eq!(refs.map(|r| r.len()).ok(), Some(1));
    tokio::time::sleep(Duration::from_secs(5)).await;
    let drafts = adapter.calls("draft");
    assert_eq!(times(&drafts, start), [1_000, 2_500]);
    assert_eq!(drafts[1].text, "One two three");
    let all = adapter
        .calls
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    assert_eq!(all.last().map(|c| c.op), Some("send"), "{all:#?}");
}

/// A draft that gave way is tried again as soon as what it gave way to is
/// over (the adapter's wake-up, not a timer) with the latest text, without
/// waiting for new text; the first byte counts from when one was shown.
#[tokio::test(start_paused = true)]
async fn a_draft_that_gave_way_is_tried_again_soon() {
    let adapter = Recorder::new(true, vec![Ok(false)]);
    let mut reply = ReplyStream::new(adapter.clone(), chat(), None);
    let start = Instant::now();
    reply.push("Hi").await;
    tokio::time::sleep(INTERVAL).await;
    reply.push(" there").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(reply.first_byte().is_none(), "nothing shown yet");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let drafts = adapter.calls("draft");
    assert_eq!(times(&drafts, start), [1_000, 1_300]);
    assert_eq!(drafts[1].text, "Hi there");
    let waits = adapter.calls("wait_turn");
    assert_eq!(times(&waits, start), [1_000]);
    assert_eq!(waits[0].text, "Draft within 1s");
    assert!(reply.first_byte().is_some());
}

/// Refused: the rest of the answer goes as a message edited in place, the
/// final answer included (never posted twice), and no draft is tried again.
#[tokio::test(start_paused = true)]
async fn a_refused_draft_turns_the_rest_of_the_answer_into_edits() {
    let refused = PlatformError::Unsupported("stream drafts in this chat");
    let adapter = Recorder::new(true, vec![Err(refused)]);
    let mut reply = ReplyStream::new(adapter.clone(), chat(), Some(MessageId(3)));
    reply.push("Hello").await;
    tokio::time::sleep(INTERVAL).await;
    reply.push(" world").await;
    tokio::time::sleep(INTERVAL).await;
    assert_eq!(adapter.calls("draft").len(), 1);
    assert!(adapter.calls("send").is_empty());
    reply.push(" again").await;
    let sent = adapter.calls("send");
    assert_eq!(sent.len(), 1, "shown as a message instead");
    assert_eq!(sent[0].text, "Hello world again");
    assert!(
        reply.posted(),
        "from now on a crash must not run the turn again"
    );
    tokio::time::sleep(INTERVAL).await;
    let refs = reply.finish("Hello world again!").await;
    assert_eq!(refs.map(|r| r.len()).ok(), Some(1));
    let edits: Vec<String> = adapter.calls("edit").into_iter().map(|c| c.text).collect();
    assert_eq!(edits, ["Hello world again!"]);
    assert_eq!(adapter.calls("send").len(), 1);
    assert_eq!(adapter.calls("draft").len(), 1, "not tried again");
}

/// A platform without drafts keeps editing one message in place.
#[tokio::test(start_paused = true)]
async fn without_drafts_the_answer_is_edited_in_place() {
    let adapter = Recorder::new(false, Vec::new());
    let mut reply = ReplyStream::new(adapter.clone(), chat(), None);
    reply.push("One").await;
    tokio::time::sleep(INTERVAL).await;
    reply.push(" two").await;
    assert!(reply.posted());
    let refs = reply.finish("One two three").await;
    assert_eq!(refs.map(|r| r.len()).ok(), Some(1));
    assert!(adapter.calls("draft").is_empty());
    assert_eq!(adapter.calls("send").len(), 1);
    assert_eq!(adapter.calls("edit").len(), 1);
}

/// Drafts pass through the secret scrubber like every post.
#[tokio::test(start_paused = true)]
async fn a_draft_is_scrubbed_of_known_secrets() {
    let secret = "sk-draft-test-4c8e1f0a9b";
    crate::secrets::register([secret]);
    let adapter = Recorder::new(true, Vec::new());
    let wrapped = ScrubbedAdapter::wrap(adapter.clone());
    let mut reply = ReplyStream::new(wrapped, chat(), None);
    reply.push("The key is ").await;
    tokio::time::sleep(INTERVAL).await;
    reply.push(secret).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    let drafts = adapter.calls("draft");
    assert_eq!(drafts.len(), 1);
    assert_eq!(drafts[0].text, "The key is [REDACTED]");
}
