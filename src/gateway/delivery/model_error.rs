//! A failed model call as the operator sees it: the cause in the audit log and,
//! on a channel where the user is the operator at the machine (the console),
//! in the answer.

/// The answer to show for a turn that ended on a model error: remote users get
/// `text` alone (no internal URLs); the local operator gets the cause (which
/// names the endpoint URL) and where to look next.
pub(crate) fn shown_text(local_operator: bool, text: &str, cause: Option<&str>) -> String {
    match (local_operator, cause) {
        (true, Some(cause)) => format!(
            "{text}\nCause: {cause}\nRun `switchboard doctor` to check the model endpoint (LLM_BASE_URL)."
        ),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_console_sees_the_cause_and_the_doctor_hint() {
        let cause = "network error reaching the model endpoint: error sending request for url (http://127.0.0.1:9/v1/chat/completions)";
        let console = shown_text(true, "⚠️ unreachable", Some(cause));
        assert!(console.starts_with("⚠️ unreachable\n"), "{console}");
        assert!(
            console.contains("http://127.0.0.1:9/v1/chat/completions"),
            "{console}"
        );
        assert!(console.contains("switchboard doctor"), "{console}");
        assert_eq!(
            shown_text(false, "⚠️ unreachable", Some(cause)),
            "⚠️ unreachable"
        );
        assert_eq!(shown_text(true, "Cancelled.", None), "Cancelled.");
    }
}
