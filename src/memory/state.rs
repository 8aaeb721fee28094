//! Per-session task state (a persisted summary that outlives compaction) and
//! execution state (where the current piece of work stands), and how each is
//! shown to the model.

use super::filter::is_dynamic;
use super::model::clip;
use crate::domain::StopReason;
use crate::llm::{Message, Role};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

const MAX_LOOPS: usize = 5;
const MAX_FACTS: usize = 8;
const MAX_STEPS: usize = 10;
const MAX_OBSERVATIONS: usize = 8;
const ITEM_CHARS: usize = 200;

/// What stays true across turns: the goal, open loops, facts the user stated
/// and the last decision. Never dynamic state that tools can re-read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskState {
    pub current_goal: String,
    pub open_loops: Vec<String>,
    pub important_facts: Vec<String>,
    pub last_decision: String,
}

impl TaskState {
    /// Reads the task state a summarizer produced, clipped and without dynamic facts.
    pub fn from_value(value: &Value) -> Option<TaskState> {
        let text = |k: &str| {
            value
                .get(k)
                .and_then(Value::as_str)
                .map(|s| clip(s.trim(), ITEM_CHARS))
                .unwrap_or_default()
        };
        let list = |k: &str, max: usize| -> Vec<String> {
            value
                .get(k)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|s| clip(s.trim(), ITEM_CHARS))
                        .filter(|s| !s.is_empty() && !is_dynamic(s))
                        .take(max)
                        .collect()
                })
                .unwrap_or_default()
        };
        let state = TaskState {
            current_goal: text("current_goal"),
            open_loops: list("open_loops", MAX_LOOPS),
            important_facts: list("important_facts", MAX_FACTS),
            last_decision: text("last_decision"),
        };
        (!state.is_empty()).then_some(state)
    }

    pub fn is_empty(&self) -> bool {
        self.current_goal.is_empty()
            && self.open_loops.is_empty()
            && self.important_facts.is_empty()
            && self.last_decision.is_empty()
    }

    /// The system-context section, or `None` when there is nothing to say.
    pub fn render(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut out = String::from(
            "[Task state — a persisted summary of this conversation. Re-check dynamic values (balances, prices, configuration) with tools instead of trusting it.]",
        );
        if !self.current_goal.is_empty() {
            out.push_str(&format!("\nCurrent goal: {}", self.current_goal));
        }
        push_list(&mut out, "Open loops", &self.open_loops);
        push_list(&mut out, "Important facts", &self.important_facts);
        if !self.last_decision.is_empty() {
            out.push_str(&format!("\nLast decision: {}", self.last_decision));
        }
        Some(out)
    }
}

fn push_list(out: &mut String, title: &str, items: &[String]) {
    if !items.is_empty() {
        out.push_str(&format!("\n{title}:"));
        for item in items {
            out.push_str(&format!("\n- {item}"));
        }
    }
}

/// Where a piece of work stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecStatus {
    Running,
    WaitingUser,
    Completed,
    Failed,
}

/// One tool step of the work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub tool: String,
    pub detail: String,
    /// `None` until its result arrived.
    pub ok: Option<bool>,
}

/// The work of the latest turn(s): goal, steps, observations, status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionState {
    pub goal: String,
    pub status: ExecStatus,
    pub steps: Vec<Step>,
    /// Index of the next step (= steps done).
    pub current_step: usize,
    pub observations: Vec<String>,
    /// The question the work waits on (`waiting_user`).
    pub question: Option<String>,
    pub last_error: Option<String>,
}

impl ExecutionState {
    /// The state after a turn on `input` that produced `new_messages` and
    /// stopped for `stop`. A turn answering a question continues the paused work.
    pub fn after_turn(
        previous: Option<&ExecutionState>,
        input: &str,
        new_messages: &[Message],
        stop: &StopReason,
        answer: &str,
    ) -> ExecutionState {
        let mut state = match previous.filter(|p| p.status == ExecStatus::WaitingUser) {
            Some(p) => {
                let mut s = p.clone();
                s.observations
                    .push(format!("user replied: {}", clip(input.trim(), ITEM_CHARS)));
                s
            }
            None => ExecutionState {
                goal: clip(input.trim(), ITEM_CHARS),
                status: ExecStatus::Running,
                steps: Vec::new(),
                current_step: 0,
                observations: Vec::new(),
                question: None,
                last_error: None,
            },
        };
        state.record(new_messages);
        let drop = state.steps.len().saturating_sub(MAX_STEPS);
        state.steps.drain(..drop);
        let drop = state.observations.len().saturating_sub(MAX_OBSERVATIONS);
        state.observations.drain(..drop);
        state.current_step = state.steps.len();
        state.question = None;
        state.last_error = None;
        state.status = match stop {
            StopReason::Answered => ExecStatus::Completed,
            StopReason::WaitingForUser => {
                state.question = Some(clip(answer.trim(), ITEM_CHARS * 2));
                ExecStatus::WaitingUser
            }
            StopReason::Cancelled => {
                state.last_error = Some("cancelled".into());
                ExecStatus::Failed
            }
            _ => {
                state.last_error = Some(clip(answer.trim(), ITEM_CHARS));
                ExecStatus::Failed
            }
        };
        state
    }

    /// A step per tool call of the turn, each marked by its result, and an
    /// observation per result's first line.
    fn record(&mut self, new_messages: &[Message]) {
        let mut by_call: HashMap<&str, usize> = HashMap::new();
        for m in new_messages {
            match m.role {
                Role::Assistant => {
                    for call in &m.tool_calls {
                        by_call.insert(call.id.as_str(), self.steps.len());
                        self.steps.push(Step {
                            tool: call.name.clone(),
                            detail: clip(&call.arguments, 120),
                            ok: None,
                        });
                    }
                }
                Role::Tool => {
                    let step = m
                        .tool_call_id
                        .as_deref()
                        .and_then(|id| by_call.get(id))
                        .and_then(|&i| self.steps.get_mut(i));
                    if let Some(step) = step {
                        step.ok = Some(!m.content.starts_with("error:"));
                        let first_line = m.content.lines().next().unwrap_or_default();
                        self.observations
                            .push(format!("{}: {}", step.tool, clip(first_line, 160)));
                    }
                }
                _ => {}
            }
        }
    }

    /// The system-context section: only paused or failed work is worth the tokens.
    pub fn render(&self) -> Option<String> {
        let steps = self
            .steps
            .iter()
            .map(|s| {
                format!(
                    "{} {}",
                    s.tool,
                    match s.ok {
                        Some(true) => "✓",
                        Some(false) => "✗",
                        None => "…",
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let mut out = match self.status {
            ExecStatus::WaitingUser => format!(
                "[Execution state — paused work in this conversation]\nGoal: {}\nYou asked the user: {}\n\
                 The user's message in this turn answers that question: resume the paused work from where it stopped \
                 instead of starting over.",
                self.goal,
                self.question.as_deref().unwrap_or("(question not recorded)")
            ),
            ExecStatus::Failed => format!(
                "[Execution state — the last attempt did not finish ({})]\nGoal: {}\nIf the user asks to retry or continue, \
                 pick up from the steps below rather than repeating them blindly.",
                self.last_error.as_deref().unwrap_or("unknown error"),
                self.goal
            ),
            ExecStatus::Running | ExecStatus::Completed => return None,
        };
        if !steps.is_empty() {
            out.push_str(&format!("\nSteps so far: {steps}"));
        }
        push_list(&mut out, "Observations", &self.observations);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;
    use serde_json::json;

    #[test]
    fn task_state_drops_dynamic_facts_and_renders() {
        let v = json!({
            "current_goal": "Migrate billing to Rust",
            "open_loops": ["choose the queue"],
            "important_facts": ["The team has 3 engineers", "Account balance is 1,200 USD"],
            "last_decision": "Use sqlx",
            "extra": 1
        });
        let state = TaskState::from_value(&v).unwrap();
        assert_eq!(state.important_facts, ["The team has 3 engineers"]);
        let text = state.render().unwrap();
        assert!(
            text.contains("Current goal: Migrate billing to Rust")
                && text.contains("- choose the queue")
        );
        assert!(TaskState::from_value(&json!({})).is_none());
    }

    fn call(id: &str, name: &str) -> Message {
        let mut m = Message::assistant("");
        m.tool_calls.push(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        });
        m
    }

    #[test]
    fn a_question_pauses_the_work_and_the_reply_resumes_it() {
        let turn = [
            Message::user("deploy the site"),
            call("c1", "read_file"),
            Message::tool_result("c1", "config ok"),
            call("c2", "ask_user"),
            Message::tool_result("c2", "shown"),
            Message::assistant("Which environment?"),
        ];
        let paused = ExecutionState::after_turn(
            None,
            "deploy the site",
            &turn,
            &StopReason::WaitingForUser,
            "Which environment?",
        );
        assert_eq!(paused.status, ExecStatus::WaitingUser);
        assert_eq!(
            paused
                .steps
                .iter()
                .map(|s| (s.tool.as_str(), s.ok))
                .collect::<Vec<_>>(),
            [("read_file", Some(true)), ("ask_user", Some(true))]
        );
        let shown = paused.render().unwrap();
        assert!(
            shown.contains("Which environment?") && shown.contains("resume the paused work"),
            "{shown}"
        );

        let reply = [
            Message::user("staging"),
            Message::assistant("Deployed to staging."),
        ];
        let done = ExecutionState::after_turn(
            Some(&paused),
            "staging",
            &reply,
            &StopReason::Answered,
            "Deployed to staging.",
        );
        assert_eq!(
            (done.goal.as_str(), done.status),
            ("deploy the site", ExecStatus::Completed)
        );
        assert!(done
            .observations
            .iter()
            .any(|o| o == "user replied: staging"));
        assert!(done.render().is_none());

        let fresh = ExecutionState::after_turn(
            Some(&done),
            "new thing",
            &[],
            &StopReason::ModelError,
            "⚠️ failed",
        );
        assert_eq!(
            (fresh.goal.as_str(), fresh.status),
            ("new thing", ExecStatus::Failed)
        );
        assert!(fresh.render().unwrap().contains("did not finish"));
    }
}
