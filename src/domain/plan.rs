//! The planner's plan: a goal and steps with status, kept in the session's
//! execution state, changed only through the `plan` tool (create, mark done,
//! fail, replan with a reason), shown to the model each round and to the user
//! by `/plan`; "retry" / "continue" / "再试" / "继续" resume its current step.

use serde::{Deserialize, Serialize};

/// Steps a plan holds at most.
pub const MAX_PLAN_STEPS: usize = 12;
/// Characters of a step, a goal or a reason at most.
pub const PLAN_TEXT_CHARS: usize = 200;
/// Replan reasons kept (the latest).
const MAX_REASONS: usize = 5;

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    Done,
    Failed,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanStep {
    pub text: String,
    pub status: StepStatus,
    /// What came of it: the result of a done step, the reason of a failed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// An explicit plan: the goal, its steps, and why it changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub goal: String,
    pub steps: Vec<PlanStep>,
    /// 1 when created, one more per replan.
    pub revision: u32,
    /// The latest replan reasons, oldest first.
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// A plan change refused: the text says why, for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

fn clean(text: &str) -> String {
    crate::text::clip(
        &text.split_whitespace().collect::<Vec<_>>().join(" "),
        PLAN_TEXT_CHARS,
    )
}

fn steps_of(texts: &[String]) -> Result<Vec<PlanStep>, PlanError> {
    let steps: Vec<PlanStep> = texts
        .iter()
        .map(|t| clean(t))
        .filter(|t| !t.is_empty())
        .map(|text| PlanStep {
            text,
            status: StepStatus::Pending,
            note: None,
        })
        .collect();
    if steps.is_empty() {
        return Err(PlanError("give at least one step".into()));
    }
    Ok(steps)
}

impl Plan {
    /// A new plan for `goal`.
    pub fn create(goal: &str, steps: &[String]) -> Result<Plan, PlanError> {
        let goal = clean(goal);
        if goal.is_empty() {
            return Err(PlanError("give the plan a goal".into()));
        }
        let steps = steps_of(steps)?;
        if steps.len() > MAX_PLAN_STEPS {
            return Err(PlanError(format!("at most {MAX_PLAN_STEPS} steps")));
        }
        Ok(Plan {
            goal,
            steps,
            revision: 1,
            reasons: Vec::new(),
        })
    }

    /// Index of the current step: the first one not done.
    pub fn current(&self) -> Option<usize> {
        self.steps.iter().position(|s| s.status != StepStatus::Done)
    }

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
                .ok_or_else(|| PlanError("every step is already done".into())),
        }
    }

    /// Marks a step done (the current one by default).
    pub fn mark_done(
        &mut self,
        step: Option<usize>,
        note: Option<&str>,
    ) -> Result<usize, PlanError> {
        let i = self.target(step)?;
        self.steps[i].status = StepStatus::Done;
        self.steps[i].note = note.map(clean).filter(|n| !n.is_empty());
        Ok(i)
    }

    /// Marks a step failed with its reason (the current one by default).
    pub fn mark_failed(&mut self, step: Option<usize>, reason: &str) -> Result<usize, PlanError> {
        let reason = clean(reason);
        if reason.is_empty() {
            return Err(PlanError("say why the step failed".into()));
        }
        let i = self.target(step)?;
        self.steps[i].status = StepStatus::Failed;
        self.steps[i].note = Some(reason);
        Ok(i)
    }

    /// Replaces the steps not done yet with `steps`, for `reason`.
    pub fn replan(&mut self, reason: &str, steps: &[String]) -> Result<(), PlanError> {
        let reason = clean(reason);
        if reason.is_empty() {
            return Err(PlanError("say why the plan changes".into()));
        }
        let new = steps_of(steps)?;
        self.steps.retain(|s| s.status == StepStatus::Done);
        if self.steps.len() + new.len() > MAX_PLAN_STEPS {
            return Err(PlanError(format!("at most {MAX_PLAN_STEPS} steps")));
        }
        self.steps.extend(new);
        self.revision = self.revision.saturating_add(1);
        self.reasons.push(reason);
        let drop = self.reasons.len().saturating_sub(MAX_REASONS);
        self.reasons.drain(..drop);
        Ok(())
    }

    /// The plan, one line per step (✓ done, ✗ failed, ▶ current, · later).
    pub fn render(&self) -> String {
        let current = self.current();
        let mut out = format!("Goal: {} (revision {})", self.goal, self.revision);
        for (i, s) in self.steps.iter().enumerate() {
            let mark = match s.status {
                StepStatus::Done => "✓",
                StepStatus::Failed => "✗",
                StepStatus::Pending if Some(i) == current => "▶",
                StepStatus::Pending => "·",
            };
            out.push_str(&format!("\n{mark} {}. {}", i + 1, s.text));
            if let Some(note) = &s.note {
                out.push_str(&format!(" — {note}"));
            }
        }
        if let Some(reason) = self.reasons.last() {
            out.push_str(&format!("\nLast replan: {reason}"));
        }
        out
    }

    /// What the model is shown each round while the plan is open.
    pub fn context(&self) -> Option<String> {
        let i = self.current()?;
        let step = &self.steps[i];
        let now = match step.status {
            StepStatus::Failed => format!(
                "Current step {}: {} — it FAILED ({}). Retry it differently, or replan with a reason.",
                i + 1,
                step.text,
                step.note.as_deref().unwrap_or("no reason given")
            ),
            _ => format!("Current step {}: {}", i + 1, step.text),
        };
        Some(format!(
            "[Plan — keep it current with the `plan` tool: mark each step done or failed as you go; replan with a reason when it no longer fits]\n{}\n{now}",
            self.render()
        ))
    }

    /// The instruction for a turn whose message asks to resume the plan.
    pub fn resume_context(&self) -> Option<String> {
        let i = self.current()?;
        Some(format!(
            "[Plan — the user asks to resume] Resume the plan at step {}: {} — do not start over and do not repeat the steps marked done.",
            i + 1,
            self.steps[i].text
        ))
    }
}

/// Whether a message only asks to go on: "retry", "continue", "go on",
/// "再试", "继续", … (a few words at most, any case and punctuation).
pub fn is_resume(message: &str) -> bool {
    const WORDS: &[&str] = &[
        "retry",
        "try again",
        "continue",
        "go on",
        "resume",
        "keep going",
        "carry on",
        "再试",
        "再试一次",
        "重试",
        "继续",
        "接着",
        "继续吧",
        "接着做",
    ];
    let text: String = message
        .trim()
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    let text = text.strip_prefix("please ").unwrap_or(&text);
    let text = text.strip_suffix(" please").unwrap_or(text);
    let text = text.strip_prefix("请").unwrap_or(text);
    WORDS.contains(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_plan_moves_through_done_failed_and_replan() {
        let mut p =
            Plan::create("ship the report", &steps(&["gather data", "draft", "send"])).unwrap();
        assert_eq!(p.current(), Some(0));
        p.mark_done(None, Some("12 rows")).unwrap();
        assert_eq!(p.current(), Some(1));
        p.mark_failed(None, "the template is missing").unwrap();
        assert_eq!(p.current(), Some(1));
        assert!(p
            .context()
            .unwrap()
            .contains("FAILED (the template is missing)"));
        assert!(p.resume_context().unwrap().contains("step 2: draft"));
        p.replan(
            "no template: write plain text",
            &steps(&["draft in plain text", "send"]),
        )
        .unwrap();
        assert_eq!(p.revision, 2);
        assert_eq!(p.steps.len(), 3);
        assert_eq!(p.steps[0].status, StepStatus::Done);
        assert_eq!(p.current(), Some(1));
        assert!(p.render().contains("▶ 2. draft in plain text"));
        p.mark_done(Some(2), None).unwrap();
        p.mark_done(None, None).unwrap();
        assert!(p.is_complete() && p.context().is_none());
        assert!(p.mark_done(None, None).is_err());
        assert!(p.mark_done(Some(9), None).is_err());
        assert!(p.replan("", &steps(&["x"])).is_err());
        assert!(Plan::create("goal", &[]).is_err());
    }

    #[test]
    fn resume_words_in_english_and_chinese() {
        for m in [
            "retry",
            "Continue.",
            "继续",
            "再试",
            "please try again",
            "继续！",
            "请重试",
        ] {
            assert!(is_resume(m), "{m}");
        }
        for m in [
            "continue with the weather in Paris",
            "继续写一首诗然后翻译",
            "hello",
        ] {
            assert!(!is_resume(m), "{m}");
        }
    }
}
