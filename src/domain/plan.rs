//! The planner's plan: a goal and typed steps (the tool a step uses, its
//! inputs, the result it should give, its state, what came of it and how
//! often it was retried) and the execution phase. The runtime records each
//! tool result on the current step; the model changes the plan only through
//! the `plan` tool (create, update, retry / continue / skip a failed step,
//! close). How it is shown lives in `plan_view`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Steps a plan holds at most.
pub const MAX_PLAN_STEPS: usize = 12;
/// Characters of a step, a goal, an expected result or a reason at most.
pub const PLAN_TEXT_CHARS: usize = 200;
/// Characters of a step's observation at most.
pub const OBSERVATION_CHARS: usize = 300;
/// Times a failed step may be retried.
pub const MAX_RETRIES: u32 = 3;
/// Bytes of a step's inputs (as JSON) at most.
const INPUT_BYTES: usize = 1_000;
/// Replan reasons kept (the latest).
const MAX_REASONS: usize = 5;
/// The tool that changes the plan: its own calls are never a step's result.
pub const PLAN_TOOL: &str = "plan";

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    Pending,
    Running,
    Done,
    Failed,
    Skipped,
}

impl StepState {
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Pending => "pending",
            StepState::Running => "running",
            StepState::Done => "done",
            StepState::Failed => "failed",
            StepState::Skipped => "skipped",
        }
    }
}

/// Where the plan as a whole stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Made (or re-made), no step carried out since.
    Planning,
    Executing,
    /// A question to the user is open (a failed step, an `ask_user`).
    WaitingUser,
    /// Closed with the final answer.
    FinalAnswer,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Planning => "planning",
            Phase::Executing => "executing",
            Phase::WaitingUser => "waiting_user",
            Phase::FinalAnswer => "final_answer",
        }
    }
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanStep {
    pub text: String,
    /// The tool the step calls; `None` for a step of thought or of answering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Value>,
    /// The result the step should give.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    pub state: StepState,
    /// What came of it (bounded): the result or the failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<String>,
    #[serde(default)]
    pub retries: u32,
    /// A failed step the user chose to go on past (it stays failed).
    #[serde(default)]
    pub passed: bool,
}

/// A step as the model proposes it: a sentence, or an object.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum StepDraft {
    Text(String),
    Typed {
        text: String,
        #[serde(default)]
        tool: Option<String>,
        #[serde(default)]
        inputs: Option<Value>,
        #[serde(default)]
        expected: Option<String>,
    },
}

/// What the latest recorded tool result did to a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutcome {
    /// 0-based index of the step.
    pub step: usize,
    pub tool: String,
    pub ok: bool,
    pub observation: String,
}

/// An explicit plan: the goal, its steps, its phase and why it changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub goal: String,
    pub steps: Vec<PlanStep>,
    /// 1 when created, one more per update.
    pub revision: u32,
    /// The latest update reasons, oldest first.
    #[serde(default)]
    pub reasons: Vec<String>,
    pub phase: Phase,
    /// The question the plan waits on (`waiting_user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The user's latest reply to that question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_outcome: Option<StepOutcome>,
    /// The final answer's gist, once closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// A plan change refused: the text says why, for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

pub(crate) fn clean(text: &str, max: usize) -> String {
    crate::text::clip(&text.split_whitespace().collect::<Vec<_>>().join(" "), max)
}

fn opt(text: Option<&str>, max: usize) -> Option<String> {
    text.map(|t| clean(t, max)).filter(|t| !t.is_empty())
}

fn step_of(draft: &StepDraft) -> Result<Option<PlanStep>, PlanError> {
    let (text, tool, inputs, expected) = match draft {
        StepDraft::Text(t) => (t.as_str(), None, None, None),
        StepDraft::Typed {
            text,
            tool,
            inputs,
            expected,
        } => (
            text.as_str(),
            tool.as_deref(),
            inputs.clone(),
            expected.as_deref(),
        ),
    };
    let text = clean(text, PLAN_TEXT_CHARS);
    if text.is_empty() {
        return Ok(None);
    }
    if inputs
        .as_ref()
        .is_some_and(|v| v.to_string().len() > INPUT_BYTES)
    {
        return Err(PlanError(format!(
            "a step's inputs take at most {INPUT_BYTES} bytes"
        )));
    }
    Ok(Some(PlanStep {
        text,
        tool: opt(tool, 64),
        inputs,
        expected: opt(expected, PLAN_TEXT_CHARS),
        state: StepState::Pending,
        observation: None,
        retries: 0,
        passed: false,
    }))
}

fn steps_of(drafts: &[StepDraft]) -> Result<Vec<PlanStep>, PlanError> {
    let mut steps = Vec::with_capacity(drafts.len());
    for d in drafts {
        steps.extend(step_of(d)?);
    }
    if steps.is_empty() {
        return Err(PlanError("give at least one step".into()));
    }
    Ok(steps)
}

/// The first line of a result (without the `error:` mark), bounded.
fn observe(text: &str) -> String {
    let text = text.trim().strip_prefix("error:").unwrap_or(text).trim();
    clean(
        text.lines().find(|l| !l.trim().is_empty()).unwrap_or(text),
        OBSERVATION_CHARS,
    )
}

impl Plan {
    /// A new plan for `goal`.
    pub fn create(goal: &str, drafts: &[StepDraft]) -> Result<Plan, PlanError> {
        let goal = clean(goal, PLAN_TEXT_CHARS);
        if goal.is_empty() {
            return Err(PlanError("give the plan a goal".into()));
        }
        let steps = steps_of(drafts)?;
        if steps.len() > MAX_PLAN_STEPS {
            return Err(PlanError(format!("at most {MAX_PLAN_STEPS} steps")));
        }
        Ok(Plan {
            goal,
            steps,
            revision: 1,
            reasons: Vec::new(),
            phase: Phase::Planning,
            question: None,
            reply: None,
            last_outcome: None,
            answer: None,
        })
    }

    pub fn is_open(&self) -> bool {
        self.phase != Phase::FinalAnswer
    }

    /// Index of the current step: the first one pending, running, or failed
    /// and not gone past.
    pub fn current(&self) -> Option<usize> {
        self.steps.iter().position(|s| match s.state {
            StepState::Pending | StepState::Running => true,
            StepState::Failed => !s.passed,
            StepState::Done | StepState::Skipped => false,
        })
    }

    /// Whether every step is done, skipped or gone past.
    pub fn is_complete(&self) -> bool {
        self.current().is_none()
    }

    /// The step a call names (1-based), or the current one.
    fn target(&self, step: Option<usize>) -> Result<usize, PlanError> {
        match step {
            Some(n) if (1..=self.steps.len()).contains(&n) => Ok(n - 1),
            Some(n) => Err(PlanError(format!(
                "there is no step {n}; the plan has {} steps",
                self.steps.len()
            ))),
            None => self
                .current()
                .ok_or_else(|| PlanError("every step is already finished".into())),
        }
    }

    fn failed(&self, step: Option<usize>) -> Result<usize, PlanError> {
        let i = self.target(step)?;
        if self.steps[i].state != StepState::Failed {
            return Err(PlanError(format!(
                "step {} has not failed (it is {})",
                i + 1,
                self.steps[i].state.as_str()
            )));
        }
        Ok(i)
    }

    /// The current step is starting `tool`: it is running now, when it is
    /// pending and names no tool or this one. `true` when it changed.
    pub fn start(&mut self, tool: &str) -> bool {
        if tool == PLAN_TOOL || !self.is_open() {
            return false;
        }
        let Some(i) = self.current() else {
            return false;
        };
        let step = &mut self.steps[i];
        let fits = step.tool.as_deref().is_none_or(|t| t == tool);
        if step.state != StepState::Pending || !fits {
            return false;
        }
        step.state = StepState::Running;
        self.phase = Phase::Executing;
        true
    }

    /// Records a tool's result on the step it belongs to: the current step
    /// when it names no tool or this one. Calls of the `plan` tool, and of
    /// tools the current step does not name, are no step's result.
    pub fn record(&mut self, tool: &str, result: &str) -> Option<StepOutcome> {
        if tool == PLAN_TOOL || !self.is_open() {
            return None;
        }
        let i = self.current()?;
        let step = &mut self.steps[i];
        if step.tool.as_deref().is_some_and(|t| t != tool) {
            return None;
        }
        if step.state == StepState::Failed {
            // The model tried the step again on its own.
            step.retries = step.retries.saturating_add(1);
        }
        let ok = !result.trim_start().starts_with("error:");
        step.state = if ok {
            StepState::Done
        } else {
            StepState::Failed
        };
        step.observation = Some(observe(result)).filter(|o| !o.is_empty());
        let outcome = StepOutcome {
            step: i,
            tool: tool.to_owned(),
            ok,
            observation: step.observation.clone().unwrap_or_default(),
        };
        self.phase = Phase::Executing;
        self.question = None;
        self.reply = None;
        self.last_outcome = Some(outcome.clone());
        Some(outcome)
    }

    /// Marks a step without a tool result done (the current one by default).
    pub fn mark_done(
        &mut self,
        step: Option<usize>,
        note: Option<&str>,
    ) -> Result<usize, PlanError> {
        let i = self.target(step)?;
        let s = &mut self.steps[i];
        s.state = StepState::Done;
        s.observation = opt(note, OBSERVATION_CHARS).or(s.observation.take());
        self.phase = Phase::Executing;
        self.last_outcome = Some(StepOutcome {
            step: i,
            tool: PLAN_TOOL.into(),
            ok: true,
            observation: s.observation.clone().unwrap_or_default(),
        });
        Ok(i)
    }

    /// A failed step runs again (at most [`MAX_RETRIES`] times).
    pub fn retry(&mut self, step: Option<usize>) -> Result<usize, PlanError> {
        let i = self.failed(step)?;
        let s = &mut self.steps[i];
        if s.retries >= MAX_RETRIES {
            return Err(PlanError(format!(
                "step {} was retried {MAX_RETRIES} times already: skip it, continue without it, or update the plan",
                i + 1
            )));
        }
        s.retries += 1;
        s.state = StepState::Pending;
        s.passed = false;
        self.resume_executing();
        Ok(i)
    }

    /// The plan goes on past a failed step, which stays failed.
    pub fn continue_past(&mut self, step: Option<usize>) -> Result<usize, PlanError> {
        let i = self.failed(step)?;
        self.steps[i].passed = true;
        self.resume_executing();
        Ok(i)
    }

    /// A pending or failed step is left out.
    pub fn skip(&mut self, step: Option<usize>) -> Result<usize, PlanError> {
        let i = self.target(step)?;
        if self.steps[i].state == StepState::Done {
            return Err(PlanError(format!("step {} is already done", i + 1)));
        }
        self.steps[i].state = StepState::Skipped;
        self.resume_executing();
        Ok(i)
    }

    fn resume_executing(&mut self) {
        self.phase = Phase::Executing;
        self.question = None;
        self.reply = None;
    }

    /// Replaces the steps not finished with `drafts`, for `reason`. Failed
    /// steps stay visible, gone past.
    pub fn update(&mut self, reason: &str, drafts: &[StepDraft]) -> Result<(), PlanError> {
        let reason = clean(reason, PLAN_TEXT_CHARS);
        if reason.is_empty() {
            return Err(PlanError("say why the plan changes".into()));
        }
        let new = steps_of(drafts)?;
        let kept = self
            .steps
            .iter()
            .filter(|s| !matches!(s.state, StepState::Pending | StepState::Running))
            .count();
        if kept + new.len() > MAX_PLAN_STEPS {
            return Err(PlanError(format!("at most {MAX_PLAN_STEPS} steps")));
        }
        self.steps
            .retain(|s| !matches!(s.state, StepState::Pending | StepState::Running));
        for s in &mut self.steps {
            s.passed |= s.state == StepState::Failed;
        }
        self.steps.extend(new);
        self.revision = self.revision.saturating_add(1);
        self.reasons.push(reason);
        let drop = self.reasons.len().saturating_sub(MAX_REASONS);
        self.reasons.drain(..drop);
        self.phase = Phase::Planning;
        self.question = None;
        self.reply = None;
        Ok(())
    }

    /// Closes the plan with the final answer's gist; steps left are skipped.
    pub fn close(&mut self, answer: Option<&str>) {
        for s in &mut self.steps {
            if matches!(s.state, StepState::Pending | StepState::Running) {
                s.state = StepState::Skipped;
            }
        }
        self.phase = Phase::FinalAnswer;
        self.question = None;
        self.answer = opt(answer, OBSERVATION_CHARS);
    }

    /// The turn ended on a question to the user: the plan waits on them.
    pub fn wait_for_user(&mut self, question: &str) {
        if self.is_open() {
            self.phase = Phase::WaitingUser;
            self.question = opt(Some(question), PLAN_TEXT_CHARS * 2);
            self.reply = None;
        }
    }

    /// The user answered the plan's question with `reply` (kept with the
    /// question until the plan moves on).
    pub fn user_replied(&mut self, reply: &str) {
        if self.phase == Phase::WaitingUser {
            self.phase = Phase::Executing;
            self.reply = opt(Some(reply), PLAN_TEXT_CHARS);
        }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
