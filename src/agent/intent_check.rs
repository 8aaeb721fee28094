//! The intent guard inside one turn: which required tools the model has called,
//! where corrective messages went, and what to do after each answer.

use super::intent::{correction, warning, IntentRules, MAX_CORRECTIONS};
use crate::llm::{Message, Role};

/// What the turn does after an answer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Nothing to do (no rule applies, or the tools were called).
    Fine,
    /// The answer lacked these tools: a correction was appended; ask again.
    Correct(Vec<String>),
    /// Still lacking them after every correction: the answer now carries the
    /// warning in front (see [`warning`]).
    Unmet(Vec<String>),
}

/// The guard's state in one turn.
#[derive(Debug, Default)]
pub(super) struct IntentCheck {
    required: Vec<String>,
    called: Vec<String>,
    /// Index of each refused answer; its correction follows it.
    corrections: Vec<usize>,
}

impl IntentCheck {
    /// The check for a turn on `input` (resumed turns already acted on theirs).
    pub(super) fn for_turn(
        rules: &IntentRules,
        input: Option<&Message>,
        resumed: bool,
        available: impl Fn(&str) -> bool,
    ) -> IntentCheck {
        match input {
            Some(m) if m.role == Role::User && !resumed => IntentCheck {
                required: rules
                    .required(crate::memory::unwrap(&m.content), available)
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
                ..IntentCheck::default()
            },
            _ => IntentCheck::default(),
        }
    }

    /// Whether the next answer's text is held back (it may be sent back).
    pub(super) fn holds_text(&self) -> bool {
        !self.missing().is_empty()
    }

    fn missing(&self) -> Vec<String> {
        self.required
            .iter()
            .filter(|t| !self.called.contains(t))
            .cloned()
            .collect()
    }

    /// Judges the model's reply, the last of `messages`. `folded` messages
    /// at the start are summarized by compaction and stay as they are.
    pub(super) fn after_reply(&mut self, messages: &mut Vec<Message>, folded: usize) -> Verdict {
        let Some(reply) = messages.last() else {
            return Verdict::Fine;
        };
        self.called
            .extend(reply.tool_calls.iter().map(|c| c.name.clone()));
        let answered = reply.tool_calls.is_empty();
        let missing = self.missing();
        if answered && !missing.is_empty() {
            if self.corrections.len() < MAX_CORRECTIONS {
                self.corrections.push(messages.len() - 1);
                messages.push(Message::user(correction(&missing)));
                return Verdict::Correct(missing);
            }
            self.drop_corrections(messages, folded);
            if let Some(last) = messages.last_mut() {
                last.content = format!("{}{}", warning(&missing), last.content);
            }
            return Verdict::Unmet(missing);
        }
        if missing.is_empty() {
            // The model complied: the refused answers and the corrections
            // are not part of the conversation.
            self.drop_corrections(messages, folded);
        }
        Verdict::Fine
    }

    fn drop_corrections(&mut self, messages: &mut Vec<Message>, folded: usize) {
        for index in self.corrections.drain(..).rev() {
            if index >= folded && index + 2 <= messages.len() {
                messages.drain(index..index + 2);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn check() -> IntentCheck {
        IntentCheck::for_turn(
            &IntentRules::builtin(),
            Some(&Message::user("show my portfolio")),
            false,
            |_| true,
        )
    }

    fn calling(tool: &str) -> Message {
        Message {
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: tool.into(),
                arguments: "{}".into(),
            }],
            ..Message::assistant("")
        }
    }

    #[test]
    fn corrections_then_compliance_leave_a_clean_history() {
        let mut c = check();
        assert!(c.holds_text());
        let mut messages = vec![
            Message::user("show my portfolio"),
            Message::assistant("100 AAPL"),
        ];
        assert_eq!(
            c.after_reply(&mut messages, 0),
            Verdict::Correct(vec!["portfolio".into()])
        );
        assert_eq!(messages.len(), 3);
        messages.push(calling("portfolio"));
        assert_eq!(c.after_reply(&mut messages, 0), Verdict::Fine);
        assert!(!c.holds_text());
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert_eq!(messages[1].tool_calls[0].name, "portfolio");
    }

    #[test]
    fn after_the_last_correction_the_answer_is_warned() {
        let mut c = check();
        let mut messages = vec![Message::user("show my portfolio")];
        for _ in 0..MAX_CORRECTIONS {
            messages.push(Message::assistant("guess"));
            assert!(matches!(
                c.after_reply(&mut messages, 0),
                Verdict::Correct(_)
            ));
        }
        messages.push(Message::assistant("guess"));
        assert_eq!(
            c.after_reply(&mut messages, 0),
            Verdict::Unmet(vec!["portfolio".into()])
        );
        assert_eq!(messages.len(), 2);
        assert!(messages[1]
            .content
            .starts_with("⚠️ Not checked with `portfolio`"));
    }

    #[test]
    fn other_tools_and_other_requests_are_not_judged() {
        let mut c = check();
        let mut messages = vec![Message::user("show my portfolio"), calling("recall")];
        assert_eq!(c.after_reply(&mut messages, 0), Verdict::Fine);
        let resumed = IntentCheck::for_turn(
            &IntentRules::builtin(),
            Some(&Message::user("show my portfolio")),
            true,
            |_| true,
        );
        assert!(!resumed.holds_text());
        let unrelated = IntentCheck::for_turn(
            &IntentRules::builtin(),
            Some(&Message::user("hi")),
            false,
            |_| true,
        );
        assert!(!unrelated.holds_text());
    }
}
