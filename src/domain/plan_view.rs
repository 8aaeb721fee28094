//! How a plan is shown: to the user (`/plan`, the `plan` tool's answers) as
//! one line per step with its state and observation, and to the model before
//! each call with the latest step outcome and what to do next — re-plan after
//! a result, ask retry / continue / skip after a failure, close when done.

use super::plan::{Phase, Plan, StepState};

fn mark(state: StepState, current: bool) -> &'static str {
    match state {
        StepState::Done => "✓",
        StepState::Failed => "✗",
        StepState::Skipped => "↷",
        StepState::Running => "…",
        StepState::Pending if current => "▶",
        StepState::Pending => "·",
    }
}

impl Plan {
    /// The plan, one line per step: mark, number, text, `[tool]`, its
    /// state and observation.
    pub fn render(&self) -> String {
        let current = self.current();
        let mut out = format!(
            "Goal: {} (revision {}, {})",
            self.goal,
            self.revision,
            self.phase.as_str()
        );
        for (i, s) in self.steps.iter().enumerate() {
            out.push_str(&format!(
                "\n{} {}. {}",
                mark(s.state, Some(i) == current),
                i + 1,
                s.text
            ));
            if let Some(tool) = &s.tool {
                out.push_str(&format!(" [{tool}]"));
            }
            out.push_str(&format!(" ({}", s.state.as_str()));
            if s.retries > 0 {
                out.push_str(&format!(", retried {}", s.retries));
            }
            if s.passed {
                out.push_str(", gone past");
            }
            out.push(')');
            if let Some(note) = &s.observation {
                out.push_str(&format!(" — {note}"));
            }
        }
        if let Some(reason) = self.reasons.last() {
            out.push_str(&format!("\nLast update: {reason}"));
        }
        if let Some(q) = self
            .question
            .as_deref()
            .filter(|_| self.phase == Phase::WaitingUser)
        {
            out.push_str(&format!("\nWaiting on you: {q}"));
        }
        out
    }

    /// What the model is shown before each call while the plan is open:
    /// the plan, the latest step outcome and the next action.
    pub fn context(&self) -> Option<String> {
        if !self.is_open() {
            return None;
        }
        let mut out = format!(
            "[Plan — carried out step by step; each tool result is recorded on the current step; change the plan only with the `plan` tool]\n{}",
            self.render()
        );
        if let Some(o) = &self.last_outcome {
            let verdict = if o.ok { "done" } else { "FAILED" };
            out.push_str(&format!(
                "\nLatest outcome: step {} ({}) {verdict}: {}",
                o.step + 1,
                o.tool,
                if o.observation.is_empty() {
                    "no output"
                } else {
                    &o.observation
                }
            ));
        }
        out.push_str(&format!("\nNext: {}", self.guidance()));
        Some(out)
    }

    /// The next action, from the phase and where the steps stand.
    fn guidance(&self) -> String {
        let Some(i) = self.current() else {
            return "every step is finished: call `plan` with action=close and give the final answer.".into();
        };
        let step = &self.steps[i];
        let how = match (&step.tool, &step.inputs) {
            (Some(tool), Some(inputs)) => format!(" with `{tool}` ({inputs})"),
            (Some(tool), None) => format!(" with `{tool}`"),
            _ => String::new(),
        };
        let expect = step
            .expected
            .as_deref()
            .map(|e| format!("; it should give: {e}"))
            .unwrap_or_default();
        if let (Some(q), Some(r)) = (&self.question, &self.reply) {
            return format!(
                "you asked the user \"{q}\" and they replied \"{r}\": resume the plan at step {} — do not start over or repeat finished steps; on \"retry\", \"continue\" or \"skip\" call `plan` with that action.",
                i + 1
            );
        }
        if self.phase == Phase::WaitingUser {
            return format!(
                "the plan waits on the user ({}); resume it at step {} once they answer.",
                self.question.as_deref().unwrap_or("question not recorded"),
                i + 1
            );
        }
        if step.state == StepState::Failed {
            return format!(
                "step {} failed{}. Do not go on silently: ask the user whether to retry it, continue without it or skip it (then call `plan` with action=retry, continue or skip), or update the plan with a reason.",
                i + 1,
                step.observation.as_deref().map(|o| format!(" ({o})")).unwrap_or_default()
            );
        }
        match (&self.last_outcome, self.phase) {
            (Some(o), Phase::Executing) if o.ok => format!(
                "re-plan with this result: if it changes what comes next, call `plan` with action=update, a reason and the new remaining steps; otherwise carry out step {}: {}{how}{expect}.",
                i + 1,
                step.text
            ),
            _ => format!("carry out step {}: {}{how}{expect}.", i + 1, step.text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan::{Plan, StepDraft};

    #[test]
    fn the_model_is_told_the_outcome_and_the_next_action() {
        let drafts: Vec<StepDraft> = serde_json::from_value(serde_json::json!([
            {"text": "read the config", "tool": "read_file", "inputs": {"path": "a.toml"}},
            {"text": "apply it", "tool": "exec_command", "expected": "exit 0"},
        ]))
        .unwrap();
        let mut p = Plan::create("deploy", &drafts).unwrap();
        let first = p.context().unwrap();
        assert!(
            first.contains("carry out step 1: read the config with `read_file`"),
            "{first}"
        );
        p.record("read_file", "port = 80");
        let second = p.context().unwrap();
        assert!(
            second.contains("Latest outcome: step 1 (read_file) done: port = 80"),
            "{second}"
        );
        assert!(
            second.contains("re-plan with this result")
                && second.contains("it should give: exit 0")
        );
        p.record("exec_command", "error: permission denied");
        let third = p.context().unwrap();
        assert!(
            third.contains("ask the user whether to retry it, continue without it or skip it"),
            "{third}"
        );
        p.wait_for_user("Retry, continue or skip?");
        assert!(p
            .context()
            .unwrap()
            .contains("the plan waits on the user (Retry, continue or skip?)"));
        p.user_replied("skip");
        assert!(p
            .context()
            .unwrap()
            .contains("they replied \"skip\": resume the plan at step 2"));
        assert!(p
            .render()
            .contains("✗ 2. apply it [exec_command] (failed) — permission denied"));
        p.skip(None).unwrap();
        assert!(p.context().unwrap().contains("action=close"));
        p.close(Some("deployed without applying"));
        assert!(p.context().is_none());
    }
}
