//! The intent guard inside one turn: which required tools the model has called,
//! how many answers were sent back, and what to do after each answer. The
//! refused answers and corrections stay in the turn while it runs (the model
//! needs them) and are stripped when it ends ([`super::intent::strip_corrections`]).

use super::intent::{correction, warning, IntentRules, Requirement, MAX_CORRECTIONS};
use crate::llm::{Message, Role};

/// What the turn does after an answer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Nothing to do (no rule applies, or the tools were called).
    Fine,
    /// The answer lacked these tools: a correction was appended; ask again.
    Correct(Vec<Requirement>),
    /// Still lacking them with no correction left (or no round left): the
    /// answer now carries the warning in front.
    Unmet(Vec<Requirement>),
}

/// The guard's state in one turn.
#[derive(Debug, Default)]
pub(super) struct IntentCheck {
    required: Vec<Requirement>,
    /// The calls made so far: name and JSON arguments.
    called: Vec<(String, String)>,
    corrections: usize,
}

impl IntentCheck {
    /// The check for a turn on `input` after the conversation `recent`
    /// (resumed turns already acted on theirs).
    pub(super) fn for_turn(
        rules: &IntentRules,
        input: Option<&Message>,
        recent: &[Message],
        resumed: bool,
        available: impl Fn(&str) -> bool,
    ) -> IntentCheck {
        match input {
            Some(m) if m.role == Role::User && !resumed => IntentCheck {
                required: rules.required(crate::memory::unwrap(&m.content), recent, available),
                ..IntentCheck::default()
            },
            _ => IntentCheck::default(),
        }
    }

    /// Whether the next answer's text is held back (it may be sent back).
    pub(super) fn holds_text(&self) -> bool {
        !self.missing().is_empty()
    }

    fn missing(&self) -> Vec<Requirement> {
        self.required
            .iter()
            .filter(|r| !r.met_by(&self.called))
            .cloned()
            .collect()
    }

    /// Judges the model's reply, the last of `messages`; `last_round` when no
    /// round is left to ask again in.
    pub(super) fn after_reply(&mut self, messages: &mut Vec<Message>, last_round: bool) -> Verdict {
        let Some(reply) = messages.last() else {
            return Verdict::Fine;
        };
        self.called.extend(
            reply
                .tool_calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone())),
        );
        let missing = self.missing();
        if !reply.tool_calls.is_empty() || missing.is_empty() {
            return Verdict::Fine;
        }
        if self.corrections < MAX_CORRECTIONS && !last_round {
            self.corrections += 1;
            messages.push(Message::user(correction(&missing)));
            return Verdict::Correct(missing);
        }
        if let Some(last) = messages.last_mut() {
            last.content = format!("{}{}", warning(&missing), last.content);
        }
        Verdict::Unmet(missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::intent::strip_corrections;
    use crate::llm::ToolCall;

    fn check() -> IntentCheck {
        IntentCheck::for_turn(
            &IntentRules::builtin(),
            Some(&Message::user("show my portfolio")),
            &[],
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
    fn a_correction_then_compliance_leaves_a_clean_history() {
        let mut c = check();
        assert!(c.holds_text());
        let mut messages = vec![
            Message::user("show my portfolio"),
            Message::assistant("100 AAPL"),
        ];
        assert!(matches!(
            c.after_reply(&mut messages, false),
            Verdict::Correct(_)
        ));
        assert_eq!(messages.len(), 3);
        messages.push(calling("portfolio"));
        assert_eq!(c.after_reply(&mut messages, false), Verdict::Fine);
        assert!(!c.holds_text());
        strip_corrections(&mut messages);
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert_eq!(messages[1].tool_calls[0].name, "portfolio");
    }

    #[test]
    fn updating_the_portfolio_meets_the_rule_too() {
        let mut c = check();
        let mut messages = vec![
            Message::user("add 10 AAPL to my portfolio"),
            calling("update_portfolio"),
        ];
        assert_eq!(c.after_reply(&mut messages, false), Verdict::Fine);
        assert!(!c.holds_text());
    }

    #[test]
    fn after_the_last_correction_or_round_the_answer_is_warned() {
        let mut c = check();
        let mut messages = vec![Message::user("show my portfolio")];
        for _ in 0..MAX_CORRECTIONS {
            messages.push(Message::assistant("guess"));
            assert!(matches!(
                c.after_reply(&mut messages, false),
                Verdict::Correct(_)
            ));
        }
        messages.push(Message::assistant("guess"));
        assert!(matches!(
            c.after_reply(&mut messages, false),
            Verdict::Unmet(_)
        ));
        strip_corrections(&mut messages);
        assert_eq!(messages.len(), 2);
        assert!(messages[1]
            .content
            .starts_with("⚠️ Not checked with `portfolio`"));

        let mut c = check();
        let mut messages = vec![
            Message::user("show my portfolio"),
            Message::assistant("guess"),
        ];
        assert!(
            matches!(c.after_reply(&mut messages, true), Verdict::Unmet(_)),
            "no round left to ask again in"
        );
    }

    #[test]
    fn other_tools_and_other_requests_are_not_judged() {
        let mut c = check();
        let mut messages = vec![Message::user("show my portfolio"), calling("recall")];
        assert_eq!(c.after_reply(&mut messages, false), Verdict::Fine);
        assert!(c.holds_text(), "still owed");
        let resumed = IntentCheck::for_turn(
            &IntentRules::builtin(),
            Some(&Message::user("show my portfolio")),
            &[],
            true,
            |_| true,
        );
        assert!(!resumed.holds_text());
        let unrelated = IntentCheck::for_turn(
            &IntentRules::builtin(),
            Some(&Message::user("hi")),
            &[],
            false,
            |_| true,
        );
        assert!(!unrelated.holds_text());
    }
}
