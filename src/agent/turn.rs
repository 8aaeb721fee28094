//! The state one turn's steps share: its conversation and counters, what it
//! has said, and how it ends (the outcome a step returns).

use super::compaction::ContextView;
use super::deadline::Deadline;
use super::events::{RuntimeEvent, StopReason, TurnOutcome};
use super::intent::{self, Requirement};
use super::intent_check::IntentCheck;
use super::model_call::ROUND_SEPARATOR;
use super::results::shrink_stale;
use super::runtime::ASK_USER;
use super::scratchpad::Scratchpad;
use crate::domain::ApprovalId;
use crate::llm::{Message, Role, ToolCall, Usage};
use crate::tools::TurnHost;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What a model round asks for next.
pub(super) enum Next {
    Calls(Vec<ToolCall>),
    /// The intent guard sent the answer back: call the model again.
    Again,
    Done(Box<TurnOutcome>),
}

impl Next {
    pub(super) fn done(outcome: TurnOutcome) -> Next {
        Next::Done(Box::new(outcome))
    }
}

/// What the steps of one turn share.
pub(super) struct Turn<'a> {
    pub(super) log: TurnTally<'a>,
    pub(super) pad: Scratchpad,
    /// Text of every round, joined by blank lines: what the user saw stream.
    pub(super) text: String,
    pub(super) intents: IntentCheck,
    /// The base system prompt and the turn's additions.
    pub(super) system: String,
    pub(super) host: &'a Arc<dyn TurnHost>,
    pub(super) cancel: &'a CancellationToken,
    pub(super) deadline: &'a Deadline,
    pub(super) tx: &'a mpsc::Sender<RuntimeEvent>,
    /// The model this turn runs on.
    pub(super) model: super::runtime::TurnModel,
    /// The tools this turn may use.
    pub(super) tools: std::sync::Arc<crate::tools::ToolRegistry>,
    /// What the model call in progress has shown so far (for a stop).
    pub(super) partial: String,
}

/// Saved in history after what a stopped turn had said.
pub(super) const STOPPED_NOTE: &str = "[The user stopped this answer here; it is unfinished.]";

impl Turn<'_> {
    /// Adds a round's text to the turn's; `show` sends text that was held
    /// back while it might be refused (it leads to a tool, so the chat can
    /// show it now).
    pub(super) async fn add_text(&mut self, said: &str, show: bool) {
        if said.is_empty() {
            return;
        }
        if show {
            let shown = if self.text.is_empty() {
                said.to_owned()
            } else {
                format!("{ROUND_SEPARATOR}{said}")
            };
            let _ = self.tx.send(RuntimeEvent::TextDelta(shown)).await;
        }
        if !self.text.is_empty() {
            self.text.push_str(ROUND_SEPARATOR);
        }
        self.text.push_str(said);
    }

    pub(super) fn finish(&mut self, text: String, stop: StopReason) -> TurnOutcome {
        self.log.finish(&mut self.pad, text, stop)
    }

    /// The turn was stopped (`/stop`, an interrupting message): what it did
    /// stays in history — the finished rounds' calls and results, and the
    /// text shown so far with a note that it was cut short — so the next
    /// turn knows.
    pub(super) fn stopped(&mut self) -> TurnOutcome {
        let mut said = std::mem::take(&mut self.text);
        let partial = std::mem::take(&mut self.partial);
        if !partial.is_empty() {
            if !said.is_empty() {
                said.push_str(ROUND_SEPARATOR);
            }
            said.push_str(&partial);
        }
        let note = if said.trim().is_empty() {
            STOPPED_NOTE.to_owned()
        } else {
            format!("{said}\n\n{STOPPED_NOTE}")
        };
        self.log.messages.push(Message::assistant(note));
        self.finish("Cancelled.".into(), StopReason::Cancelled)
    }

    /// A call of `round` waits for approval `approval`: its checkpoint is
    /// stored, the turn ends here and the decision resumes it.
    pub(super) fn paused(&mut self, round: usize, approval: ApprovalId) -> TurnOutcome {
        self.pad
            .record("paused", json!({ "round": round, "approval": approval }));
        let text = std::mem::take(&mut self.text);
        let mut outcome = self.finish(text, StopReason::Paused);
        outcome.pause = Some(crate::tools::Pause::Approval(approval));
        outcome
    }

    /// The model asked the user `question` (`ask_user`): the turn ends with
    /// it, and the next message answers it.
    pub(super) fn asked(&mut self, question: String) -> TurnOutcome {
        self.log.messages.push(Message::assistant(question.clone()));
        let text = if self.text.trim().is_empty() {
            question
        } else {
            format!("{}{ROUND_SEPARATOR}{question}", self.text)
        };
        self.finish(text, StopReason::WaitingForUser)
    }

    /// Every round was used without an answer.
    pub(super) fn out_of_rounds(&mut self, max: usize) -> TurnOutcome {
        let text = format!(
            "I stopped after {max} tool rounds without reaching an answer. Tell me how to continue, or narrow the request."
        );
        self.log.messages.push(Message::assistant(text.clone()));
        self.finish(text, StopReason::MaxRounds)
    }

    pub(super) fn stop_at_deadline(&mut self) -> TurnOutcome {
        let text = std::mem::take(&mut self.text);
        self.log
            .stop_at_deadline(&mut self.pad, &text, self.deadline)
    }
}

/// The tool names of requirements, for the trace.
pub(super) fn names(requirements: &[Requirement]) -> Vec<&str> {
    requirements.iter().map(Requirement::primary).collect()
}

/// The question of an `ask_user` call in this round, if any.
pub(super) fn asked_question(calls: &[ToolCall]) -> Option<String> {
    calls.iter().filter(|c| c.name == ASK_USER).find_map(|c| {
        let v: serde_json::Value = serde_json::from_str(&c.arguments).ok()?;
        v.get("question")?.as_str().map(str::to_owned)
    })
}

/// The request copy of the conversation, with results of earlier rounds shrunk:
/// every tool result before the last assistant message with tool calls.
pub(super) fn shrink_earlier_results(messages: &[Message]) -> Vec<Message> {
    let last_round = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty());
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| match (m.role, last_round) {
            (Role::Tool, Some(last)) if i < last => match shrink_stale(&m.content) {
                Some(content) => Message {
                    content,
                    ..m.clone()
                },
                None => m.clone(),
            },
            _ => m.clone(),
        })
        .collect()
}

/// A running turn's conversation and counters.
pub(super) struct TurnTally<'a> {
    pub(super) messages: &'a mut Vec<Message>,
    pub(super) new_from: usize,
    pub(super) usage: Usage,
    pub(super) rounds: usize,
    pub(super) started: Instant,
    /// What the model sees of `messages` once compaction folded their head.
    pub(super) view: ContextView,
    pub(super) intent_corrections: usize,
    pub(super) intent_unmet: bool,
}

impl<'a> TurnTally<'a> {
    /// A fresh tally of a turn whose new messages start at `new_from`.
    pub(super) fn new(messages: &'a mut Vec<Message>, new_from: usize) -> Self {
        TurnTally {
            messages,
            new_from,
            usage: Usage::default(),
            rounds: 0,
            started: Instant::now(),
            view: ContextView::default(),
            intent_corrections: 0,
            intent_unmet: false,
        }
    }

    /// Ends the turn at its deadline, telling the user (after what the
    /// finished rounds said).
    pub(super) fn stop_at_deadline(
        &mut self,
        pad: &mut Scratchpad,
        turn_text: &str,
        deadline: &Deadline,
    ) -> TurnOutcome {
        self.messages.push(Message::assistant(deadline.notice()));
        let text = deadline.stop_text(turn_text);
        self.finish(pad, text, StopReason::Deadline)
    }

    pub(super) fn finish(
        &mut self,
        pad: &mut Scratchpad,
        text: String,
        stop: StopReason,
    ) -> TurnOutcome {
        pad.record(
            "final",
            json!({
                "stop": format!("{stop:?}"), "rounds": self.rounds, "elapsed_ms": self.started.elapsed().as_millis() as u64,
                "input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens,
                "cache_read_tokens": self.usage.cache_read_tokens, "text": text,
            }),
        );
        let mut new_messages = self
            .messages
            .get(self.new_from..)
            .map(<[Message]>::to_vec)
            .unwrap_or_default();
        // Also after a resume: the checkpoint may hold corrections.
        intent::strip_corrections(&mut new_messages);
        let compaction = self.view.record.clone();
        TurnOutcome {
            text,
            stop,
            rounds: self.rounds,
            usage: self.usage,
            new_messages,
            intent_corrections: self.intent_corrections,
            intent_unmet: self.intent_unmet,
            compaction,
            error: None,
            pause: None,
        }
    }
}
