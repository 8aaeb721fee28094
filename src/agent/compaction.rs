//! Context compaction: when a request would outgrow the model's window, the
//! head of the conversation is folded into a `[conversation summary]` and a
//! recent tail is kept verbatim. Memories are flushed from the head first.
//!
//! The turn's own message list is never rewritten (it is what gets persisted
//! and checkpointed); compaction keeps a [`ContextView`] over it instead.

use super::events::RuntimeEvent;
use super::tool_fields::{declared, field_values, result_tools, KeyFields};
use crate::llm::{
    complete, estimate_message_tokens, estimate_tokens, is_unsegmented, Message, Provider, Role,
    ToolDefinition,
};
use crate::text::clip;
use crate::tools::TurnHost;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The recent tail keeps at most this many tokens …
pub const TAIL_MAX_TOKENS: usize = 20_000;
/// … but at least this many …
pub const TAIL_MIN_TOKENS: usize = 4_000;
/// … and at least this many messages.
pub const TAIL_MIN_MESSAGES: usize = 4;
/// A context of more messages than this is compacted even under the token
/// threshold (a long chat of short messages), keeping at most half as tail.
/// Turns load twice this many live messages, so nothing drops out of the
/// context unsummarized.
pub const MAX_CONTEXT_MESSAGES: usize = 200;
/// Words a summary may have.
pub const SUMMARY_MAX_WORDS: usize = 500;
/// Marks the message that stands for the folded history.
pub const SUMMARY_MARK: &str = "[conversation summary]";
const ACK: &str = "Understood. I'll continue from this summary.";
const TRIMMED: &str = "(Earlier messages were trimmed because the conversation outgrew the context window; they could not be summarized.)";
const SUMMARY_TIMEOUT: Duration = Duration::from_secs(120);
const MESSAGE_CHARS: usize = 2_000;
const TRANSCRIPT_CHARS: usize = 160_000;
/// Fields kept when a tool result is summarized, in this order.
const KEY_FIELDS: &[&str] = &[
    "error",
    "message",
    "status",
    "code",
    "name",
    "result",
    "id",
    "title",
    "path",
    "url",
    "exit_code",
    "count",
    "total",
    "summary",
];

const PROMPT: &str = r#"You compress the earlier part of a conversation between a user and an assistant so the assistant can continue without it.
Reply with ONLY a JSON object:
{"summary": "<at most 500 words>", "task_state": {"current_goal": "...", "open_loops": ["..."], "important_facts": ["..."], "last_decision": "..."}}
The summary keeps, in the conversation's language: what the user wants, what was done and found (tool results only by their key fields), decisions and their reasons, open questions.
task_state keeps only what stays true: no balances, prices, positions or configuration status, which tools can re-read."#;

/// A compaction that happened during a turn, for the gateway to persist.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    /// The summary text (without the mark) now standing for the folded messages.
    pub summary: String,
    /// The summarizer's `task_state` object, when it produced one.
    pub task_state: Option<Value>,
    /// How many of the turn's messages (history first, then new) are folded.
    pub folded: usize,
    /// Summarizing failed and the head was trimmed instead.
    pub fell_back: bool,
}

/// The messages that stand for a folded history.
pub fn summary_messages(summary: &str) -> [Message; 2] {
    [
        Message::user(format!("{SUMMARY_MARK}\n{summary}")),
        Message::assistant(ACK),
    ]
}

pub use crate::llm::{reserve, threshold};

/// The conversation as the model sees it: a summary prefix, then the turn's
/// messages from `folded` on.
#[derive(Debug, Default)]
pub(crate) struct ContextView {
    folded: usize,
    prefix: Vec<Message>,
    pub(crate) record: Option<Compacted>,
    /// The fields each tool's results keep through compaction (their specs').
    pub(crate) key_fields: KeyFields,
}

impl ContextView {
    pub(crate) fn context(&self, messages: &[Message]) -> Vec<Message> {
        let rest = messages.get(self.folded..).unwrap_or_default();
        self.prefix.iter().chain(rest).cloned().collect()
    }
}

/// Where the kept tail starts: as many recent tokens as fit `max_tokens`, at
/// least [`TAIL_MIN_TOKENS`] and [`TAIL_MIN_MESSAGES`], and never at a tool
/// result whose call would be cut off.
pub fn tail_start(messages: &[Message], max_tokens: usize) -> usize {
    let mut start = messages.len();
    let mut tokens = 0;
    while start > 0 {
        let t = estimate_message_tokens(&messages[start - 1]);
        let short = messages.len() - start < TAIL_MIN_MESSAGES || tokens < TAIL_MIN_TOKENS;
        if !short && tokens + t > max_tokens {
            break;
        }
        start -= 1;
        tokens += t;
    }
    while start > 0 && messages[start].role == Role::Tool {
        start -= 1;
    }
    start
}

/// The context to send: `messages` through `view`, compacted first when the
/// request would exceed the threshold of the window of the model the call
/// goes to; and that window, which the request is sized for.
pub(crate) async fn prepare(
    provider: &dyn Provider,
    host: &Arc<dyn TurnHost>,
    system: &str,
    tools: &[ToolDefinition],
    messages: &[Message],
    view: &mut ContextView,
    events: &mpsc::Sender<RuntimeEvent>,
) -> SizedContext {
    // Read once: summarizing may fail over and change what `model()` says.
    let sized_for = provider.model().context_window;
    let window = sized_for as usize;
    let context = view.context(messages);
    let fixed = estimate_tokens(system)
        + tools
            .iter()
            .map(|t| estimate_tokens(&t.description) + estimate_tokens(&t.parameters.to_string()))
            .sum::<usize>();
    let prefix = view.prefix.len();
    let Some(start) = compaction_point(window, fixed, &context, prefix) else {
        return SizedContext {
            messages: context,
            sized_for,
            compaction: None,
        };
    };
    let originals = start - prefix;
    host.before_compaction(&messages[view.folded..view.folded + originals])
        .await;
    let folded = summarize_keeping(provider, &context[..start], &view.key_fields).await;
    let kept = super::kept_facts::kept_facts(&context[..start], &view.key_fields);
    let summary = super::kept_facts::with_block(&folded.summary, &kept);
    view.folded += originals;
    view.prefix = summary_messages(&summary).to_vec();
    view.record = Some(Compacted {
        summary,
        task_state: folded.task_state,
        folded: view.folded,
        fell_back: folded.fell_back,
    });
    let after = view.context(messages);
    let tokens = |m: &[Message]| fixed + m.iter().map(estimate_message_tokens).sum::<usize>();
    let (tokens_before, tokens_after) = (tokens(&context), tokens(&after));
    let _ = events
        .send(RuntimeEvent::Compaction {
            messages_before: context.len(),
            messages_after: after.len(),
            tokens_before,
            tokens_after,
        })
        .await;
    // Sizes are estimated tokens (a key naming tokens would read as a secret).
    let trace = serde_json::json!({
        "before": { "messages": context.len(), "estimate": tokens_before },
        "after": { "messages": after.len(), "estimate": tokens_after },
        "fell_back": folded.fell_back, "kept": kept,
    });
    SizedContext {
        messages: after,
        sized_for,
        compaction: Some(trace),
    }
}

/// A context ready to send, and the context window it was sized for.
pub(crate) struct SizedContext {
    pub(crate) messages: Vec<Message>,
    pub(crate) sized_for: u32,
    /// What a compaction made of the context, for the turn's trace.
    pub(crate) compaction: Option<Value>,
}

/// Where the kept tail of `context` starts when a request of it (plus `fixed`
/// tokens of system prompt and tool schemas) exceeds the window's threshold,
/// or it has more than [`MAX_CONTEXT_MESSAGES`] messages; `None` when no
/// compaction is due or nothing beyond the first `prefix` messages (an earlier
/// summary) could be folded.
pub fn compaction_point(
    window: usize,
    fixed: usize,
    context: &[Message],
    prefix: usize,
) -> Option<usize> {
    let limit = threshold(window);
    let estimate = fixed + context.iter().map(estimate_message_tokens).sum::<usize>();
    if estimate <= limit && context.len() <= MAX_CONTEXT_MESSAGES {
        return None;
    }
    let mut start = tail_start(context, (limit / 2).clamp(TAIL_MIN_TOKENS, TAIL_MAX_TOKENS))
        .max(context.len().saturating_sub(MAX_CONTEXT_MESSAGES / 2));
    while start > 0 && context[start].role == Role::Tool {
        start -= 1;
    }
    (start > prefix).then_some(start)
}

/// A head folded into text.
#[derive(Debug, Clone, PartialEq)]
pub struct FoldedHead {
    pub summary: String,
    pub task_state: Option<Value>,
    /// The model could not summarize: the head was trimmed (an earlier summary kept).
    pub fell_back: bool,
}

/// Summarizes `head` with the model, or trims it when that fails.
pub async fn summarize_head(provider: &dyn Provider, head: &[Message]) -> FoldedHead {
    summarize_keeping(provider, head, &KeyFields::new()).await
}

/// [`summarize_head`], the results of the tools in `key_fields` shown to the
/// summarizer with their named fields whole.
async fn summarize_keeping(
    provider: &dyn Provider,
    head: &[Message],
    key_fields: &KeyFields,
) -> FoldedHead {
    match summarize(provider, head, key_fields).await {
        Ok((summary, task_state)) => FoldedHead {
            summary,
            task_state,
            fell_back: false,
        },
        Err(e) => {
            tracing::warn!(error = %e, "summarizing for compaction failed; trimming instead");
            // The earlier summary's kept facts are carried by the caller.
            let earlier = head
                .first()
                .and_then(|m| m.content.strip_prefix(SUMMARY_MARK))
                .map(|s| {
                    s.split(super::kept_facts::KEPT_MARK)
                        .next()
                        .unwrap_or(s)
                        .trim()
                });
            let summary =
                earlier.map_or_else(|| TRIMMED.to_owned(), |s| format!("{s}\n\n{TRIMMED}"));
            FoldedHead {
                summary,
                task_state: None,
                fell_back: true,
            }
        }
    }
}

/// Asks the model for the summary (and task state) of `head`.
async fn summarize(
    provider: &dyn Provider,
    head: &[Message],
    key_fields: &KeyFields,
) -> Result<(String, Option<Value>), String> {
    let text = transcript_keeping(head, key_fields);
    let reply = complete(provider, PROMPT, text, SUMMARY_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    let text = reply.trim();
    let body = text
        .strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .and_then(|r| r.strip_suffix("```"))
        .unwrap_or(text);
    let (summary, task_state) = match serde_json::from_str::<Value>(body.trim()) {
        Ok(Value::Object(map)) => {
            let summary = map
                .get("summary")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_owned();
            (
                summary,
                map.get("task_state").filter(|v| v.is_object()).cloned(),
            )
        }
        // Not the JSON asked for: plain prose is still a usable summary.
        _ => (text.to_owned(), None),
    };
    if summary.is_empty() {
        return Err("the model returned an empty summary".into());
    }
    Ok((clip_words(&summary, SUMMARY_MAX_WORDS), task_state))
}

/// The head as text for the summarizer, tool results reduced to key fields.
pub fn transcript(head: &[Message]) -> String {
    transcript_keeping(head, &KeyFields::new())
}

/// [`transcript`], a result of a tool in `declared_fields` led by the fields
/// its spec names, whole.
fn transcript_keeping(head: &[Message], declared_fields: &KeyFields) -> String {
    let tools = result_tools(head);
    let mut lines: Vec<String> = Vec::new();
    for m in head {
        let text = clip(m.content.trim(), MESSAGE_CHARS);
        if let Some((name, fields)) = declared(m, &tools, declared_fields) {
            let values = field_values(&m.content, fields).join("; ");
            lines.push(format!("[tool result of {name}, kept fields] {values}"));
        }
        match m.role {
            Role::Tool => lines.push(format!("[tool result] {}", key_fields(&m.content))),
            Role::Assistant => {
                if !text.is_empty() {
                    lines.push(format!("[assistant] {text}"));
                }
                for call in &m.tool_calls {
                    lines.push(format!(
                        "[assistant calls {}] {}",
                        call.name,
                        clip(&call.arguments, 300)
                    ));
                }
            }
            Role::User => lines.push(format!("[user] {text}")),
            Role::System => lines.push(format!("[system] {text}")),
        }
    }
    // Over the cap, the most recent part of the head matters most.
    let mut total = 0;
    let keep = lines.iter().rev().take_while(|l| {
        total += l.len() + 1;
        total <= TRANSCRIPT_CHARS
    });
    let mut kept: Vec<&String> = keep.collect();
    kept.reverse();
    kept.into_iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool result by its key fields: JSON objects keep the known fields (or
/// the first scalars), other text its beginning.
pub fn key_fields(text: &str) -> String {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Object(map)) => {
            let mut fields: Vec<String> = KEY_FIELDS
                .iter()
                .filter_map(|k| map.get(*k).map(|v| format!("{k}: {}", scalar(v))))
                .collect();
            if fields.is_empty() {
                fields = map
                    .iter()
                    .filter(|(_, v)| !v.is_object() && !v.is_array())
                    .take(6)
                    .map(|(k, v)| format!("{k}: {}", scalar(v)))
                    .collect();
            }
            format!("{{{}}} ({} fields)", fields.join(", "), map.len())
        }
        Ok(Value::Array(items)) => format!("array of {} items", items.len()),
        _ => clip(text.trim(), 300),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => clip(s, 120),
        Value::Array(a) => format!("[{} items]", a.len()),
        Value::Object(o) => format!("{{{} fields}}", o.len()),
        other => other.to_string(),
    }
}

/// Cuts `text` after `max` words; each CJK character counts as a word.
pub fn clip_words(text: &str, max: usize) -> String {
    let mut words = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        let starts = if is_unsegmented(c) {
            in_word = false;
            true
        } else if c.is_alphanumeric() {
            let s = !in_word;
            in_word = true;
            s
        } else {
            in_word = false;
            false
        };
        if starts {
            words += 1;
            if words > max {
                return format!("{}…", text[..i].trim_end());
            }
        }
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Asked, TurnCheckpoint};
    use crate::llm::{ChatRequest, Chunk, ChunkStream, ModelInfo, ProviderError, ToolCall};
    use crate::tools::{Tool, ToolSpec};
    use std::sync::Mutex;

    /// A model that answers with `reply` (or fails) and records the prompts.
    struct Scripted {
        info: ModelInfo,
        reply: Option<String>,
        systems: Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl Provider for Scripted {
        fn model(&self) -> &ModelInfo {
            &self.info
        }

        async fn chat_stream(&self, request: ChatRequest) -> Result<ChunkStream, ProviderError> {
            self.systems.lock().unwrap().push(request.system);
            match &self.reply {
                Some(text) => Ok(Box::pin(futures::stream::iter([Ok(Chunk::Text(
                    text.clone(),
                ))]))),
                None => Err(ProviderError::Server {
                    status: 500,
                    message: "down".into(),
                }),
            }
        }
    }

    /// Records what the memory flush was given.
    #[derive(Default)]
    struct Flushes(Mutex<Vec<usize>>);

    #[async_trait::async_trait]
    impl TurnHost for Flushes {
        async fn request_approval(
            &self,
            _: &ToolSpec,
            _: &ToolCall,
            _: &Value,
            _: String,
            _: TurnCheckpoint,
        ) -> Asked {
            Asked::Unavailable
        }

        async fn start_background(
            &self,
            _: Arc<dyn Tool>,
            _: &ToolCall,
            _: Value,
        ) -> Result<crate::domain::TaskId, String> {
            Err("no".into())
        }

        async fn before_compaction(&self, head: &[Message]) {
            self.0.lock().unwrap().push(head.len());
        }
    }

    async fn run(
        reply: Option<&str>,
        messages: &[Message],
    ) -> (Vec<Message>, ContextView, Vec<usize>, Vec<RuntimeEvent>) {
        let provider = Scripted {
            info: ModelInfo::new("m", Some(20_000)),
            reply: reply.map(str::to_owned),
            systems: Mutex::default(),
        };
        let flushes = Arc::new(Flushes::default());
        let host: Arc<dyn TurnHost> = flushes.clone();
        let (tx, mut rx) = mpsc::channel(8);
        let mut view = ContextView::default();
        let sent = prepare(&provider, &host, "system", &[], messages, &mut view, &tx)
            .await
            .messages;
        drop(tx);
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        let flushed = flushes.0.lock().unwrap().clone();
        (sent, view, flushed, events)
    }

    fn long_conversation() -> Vec<Message> {
        (0..40)
            .map(|i| {
                if i % 2 == 0 {
                    Message::user("q ".repeat(600))
                } else {
                    Message::assistant("a ".repeat(600))
                }
            })
            .collect()
    }

    #[tokio::test]
    async fn over_the_threshold_the_head_is_flushed_then_summarized() {
        let messages = long_conversation();
        let (sent, view, flushed, events) = run(
            Some(r#"{"summary": "S", "task_state": {"current_goal": "G"}}"#),
            &messages,
        )
        .await;
        let record = view.record.clone().unwrap();
        assert_eq!(
            flushed,
            [record.folded],
            "the flush saw exactly the folded messages"
        );
        assert_eq!(sent[0].content, format!("{SUMMARY_MARK}\nS"));
        assert_eq!(sent.len(), 2 + messages.len() - record.folded);
        assert_eq!(record.task_state.unwrap()["current_goal"], "G");
        assert!(!record.fell_back);
        assert!(
            matches!(events.as_slice(), [RuntimeEvent::Compaction { messages_before: 40, messages_after, .. }] if *messages_after == sent.len())
        );
        // Under the threshold nothing happens.
        let (sent, view, flushed, events) = run(Some("{}"), &messages[35..]).await;
        assert_eq!(
            (sent.len(), view.record, flushed.len(), events.len()),
            (5, None, 0, 0)
        );
    }

    #[tokio::test]
    async fn a_failed_summary_trims_the_head_and_keeps_the_tail() {
        let messages = long_conversation();
        let (sent, view, _, events) = run(None, &messages).await;
        let record = view.record.unwrap();
        assert!(record.fell_back && sent[0].content.contains("trimmed"));
        assert_eq!(&sent[2..], &messages[record.folded..]);
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn many_short_messages_are_compacted_by_count() {
        let mut chat: Vec<Message> = (0..MAX_CONTEXT_MESSAGES)
            .map(|i| Message::user(format!("m{i}")))
            .collect();
        assert_eq!(compaction_point(128_000, 0, &chat, 0), None, "at the cap");
        // One more, and the kept tail would start at a tool result: it is
        // extended back to the call.
        chat.push(Message::user("one more"));
        let at = chat.len() - MAX_CONTEXT_MESSAGES / 2;
        chat[at - 1] = call("c1");
        chat[at] = Message::tool_result("c1", "r");
        let start = compaction_point(128_000, 0, &chat, 0).unwrap();
        assert_eq!(start, at - 1);
        assert!(chat.len() - start <= MAX_CONTEXT_MESSAGES / 2 + 1);
        assert!(!chat[start].tool_calls.is_empty());
    }

    #[test]
    fn thresholds_follow_the_reserve_formula() {
        for (window, expected) in [
            (64_000, 47_616),
            (128_000, 96_000),
            (200_000, 150_000),
            (1_000_000, 750_000),
            (16_000, 8_000),
        ] {
            assert_eq!(threshold(window), expected, "window {window}");
        }
    }

    fn call(id: &str) -> Message {
        let mut m = Message::assistant("");
        m.tool_calls.push(ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        });
        m
    }

    #[test]
    fn the_tail_never_starts_with_an_orphan_tool_result() {
        let big = "x".repeat(12_000); // ~3,000 tokens each
        let messages = vec![
            Message::user("start"),
            Message::assistant("ok"),
            Message::user("read them"),
            call("c1"),
            Message::tool_result("c1", big.clone()),
            Message::tool_result("c1", big.clone()),
            Message::tool_result("c1", big.clone()),
            Message::tool_result("c1", big.clone()),
            Message::assistant(big.clone()),
        ];
        // 4 messages (~12K tokens) end inside the results: extended back to the call.
        let start = tail_start(&messages, 8_000);
        assert_eq!(start, 3);
        assert_eq!(messages[start].role, Role::Assistant);
        assert!(!messages[start].tool_calls.is_empty());
    }

    #[test]
    fn the_tail_keeps_minimums_and_stops_at_the_budget() {
        let small: Vec<Message> = (0..50).map(|i| Message::user(format!("m{i}"))).collect();
        // Tiny messages: the 4K-token minimum takes everything.
        assert_eq!(tail_start(&small, 20_000), 0);
        let medium: Vec<Message> = (0..50).map(|_| Message::user("y".repeat(4_000))).collect(); // ~1,004 tokens each
        let start = tail_start(&medium, 20_000);
        assert_eq!(50 - start, 19, "as many as fit 20K tokens");
        let huge: Vec<Message> = (0..6).map(|_| Message::user("z".repeat(100_000))).collect();
        assert_eq!(
            6 - tail_start(&huge, 20_000),
            TAIL_MIN_MESSAGES,
            "at least four messages"
        );
    }

    #[test]
    fn cjk_text_fills_the_tail_budget_sooner() {
        let en: Vec<Message> = (0..40).map(|_| Message::user("a".repeat(2_000))).collect();
        let zh: Vec<Message> = (0..40).map(|_| Message::user("字".repeat(2_000))).collect();
        let en_tail = en.len() - tail_start(&en, 20_000);
        let zh_tail = zh.len() - tail_start(&zh, 20_000);
        assert!(zh_tail < en_tail, "{zh_tail} vs {en_tail}");
        assert_eq!(zh_tail, 9);
    }

    #[test]
    fn tool_results_are_reduced_to_key_fields() {
        let json = r#"{"status": "ok", "code": "600519", "name": "Moutai", "rows": [1, 2, 3], "debug": "x"}"#;
        assert_eq!(
            key_fields(json),
            "{status: ok, code: 600519, name: Moutai} (5 fields)"
        );
        assert_eq!(key_fields(r#"{"a": 1, "b": [1]}"#), "{a: 1} (2 fields)");
        assert!(key_fields(&"line\n".repeat(1_000)).chars().count() <= 301);
        let t = transcript(&[
            Message::user("hi"),
            call("c1"),
            Message::tool_result("c1", json),
        ]);
        assert!(
            t.contains("[assistant calls read_file] {}") && t.contains("[tool result] {status: ok"),
            "{t}"
        );
    }

    #[test]
    fn summaries_are_cut_at_the_word_limit() {
        let en = "word ".repeat(600);
        assert_eq!(clip_words(&en, 500).split_whitespace().count(), 500);
        let zh = "字".repeat(600);
        assert_eq!(clip_words(&zh, 500).chars().count(), 501); // 500 characters and the ellipsis
        assert_eq!(clip_words("short text", 500), "short text");
    }
}
