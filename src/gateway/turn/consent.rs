//! Consent carries: when the user's message answers the agent's `ask_user`
//! question with an explicit yes, the approval cards of that turn show "you
//! agreed: …" — the card is still required; consent never bypasses approval.

use crate::memory::{ExecStatus, ExecutionState};
use crate::store::SessionState;

/// Characters of the answer and the question quoted on a card at most.
const QUOTE_CHARS: usize = 160;

/// Whether `answer` is an explicit yes ("yes", "ok, go ahead", "好的", "同意"…)
/// and not a no or a question.
pub(crate) fn is_affirmative(answer: &str) -> bool {
    let text = answer.trim().to_lowercase();
    if text.is_empty() || text.ends_with('?') || text.ends_with('？') {
        return false;
    }
    const NO: &[&str] = &[
        "no", "not", "don't", "dont", "never", "wait", "cancel", "stop", "不", "别", "先别", "取消",
    ];
    const YES: &[&str] = &[
        "yes",
        "yep",
        "yeah",
        "y",
        "ok",
        "okay",
        "sure",
        "go ahead",
        "do it",
        "confirm",
        "confirmed",
        "approve",
        "approved",
        "agree",
        "agreed",
        "proceed",
        "please do",
        "是",
        "好",
        "好的",
        "可以",
        "同意",
        "确认",
        "行",
        "没问题",
        "对",
        "嗯",
    ];
    let first: String = text
        .split(|c: char| c.is_whitespace() || ",.!，。！、".contains(c))
        .find(|w| !w.is_empty())
        .unwrap_or_default()
        .to_owned();
    if NO
        .iter()
        .any(|n| first == *n || (!n.is_ascii() && text.starts_with(n)))
    {
        return false;
    }
    YES.iter().any(|y| {
        if y.is_ascii() {
            first == *y || (y.contains(' ') && text.starts_with(y))
        } else {
            text.starts_with(y)
        }
    })
}

/// The consent a turn carries: the user's explicit yes to the question the
/// paused work asked (`state`), quoted.
pub(crate) fn consent_for(state: &SessionState, input: Option<&str>) -> Option<String> {
    let input = input?;
    let exec: ExecutionState = serde_json::from_str(state.execution_state.as_deref()?).ok()?;
    if exec.status != ExecStatus::WaitingUser || !is_affirmative(input) {
        return None;
    }
    let question = exec.question.unwrap_or_default();
    let clip = |s: &str| crate::text::clip(&s.replace('\n', " "), QUOTE_CHARS);
    Some(format!(
        "“{}” (asked: {})",
        clip(input.trim()),
        clip(question.trim())
    ))
}

/// A card's summary with the consent shown first.
pub(crate) fn on_card(summary: String, consent: Option<&str>) -> String {
    match consent {
        Some(c) => format!("you agreed: {c}\n{summary}"),
        None => summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_yes_only() {
        for yes in [
            "yes",
            "Yes, sell them",
            "ok go ahead",
            "Go ahead.",
            "好的，卖吧",
            "同意",
            "confirm",
        ] {
            assert!(is_affirmative(yes), "{yes}");
        }
        for no in [
            "no",
            "No, wait",
            "not now",
            "yes?",
            "不要卖",
            "别卖",
            "maybe later",
            "why?",
            "yesterday was fine",
        ] {
            assert!(!is_affirmative(no), "{no}");
        }
    }

    #[test]
    fn only_an_answer_to_a_waiting_question_carries_consent() {
        let waiting = r#"{"goal":"sell","status":"waiting_user","steps":[],"current_step":0,"observations":[],"question":"Sell 100 shares of ACME?","last_error":null}"#;
        let state = SessionState {
            execution_state: Some(waiting.into()),
            ..SessionState::default()
        };
        assert_eq!(
            consent_for(&state, Some("yes, sell")).as_deref(),
            Some("“yes, sell” (asked: Sell 100 shares of ACME?)")
        );
        assert_eq!(consent_for(&state, Some("no")), None);
        let done = waiting.replace("waiting_user", "completed");
        let state = SessionState {
            execution_state: Some(done),
            ..SessionState::default()
        };
        assert_eq!(consent_for(&state, Some("yes")), None);
        assert_eq!(
            on_card("Run ls".into(), Some("“yes”")),
            "you agreed: “yes”\nRun ls"
        );
    }
}
