//! A failed model call as the operator sees it: the cause in the audit log and,
//! in the local console (where the user is the operator), in the answer.

use switchboard_platform::Platform;

/// The answer to show for a turn that ended on a model error: remote users get
/// `text` alone (no internal URLs); the console gets the cause (which names the
/// endpoint URL) and where to look next.
pub(crate) fn shown_text(platform: Platform, text: &str, cause: Option<&str>) -> String {
    match (platform, cause) {
        (Platform::Console, Some(cause)) => format!(
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
        let console = shown_text(Platform::Console, "⚠️ unreachable", Some(cause));
        assert!(console.starts_with("⚠️ unreachable\n"), "{console}");
        assert!(
            console.contains("http://127.0.0.1:9/v1/chat/completions"),
            "{console}"
        );
        assert!(console.contains("switchboard doctor"), "{console}");
        for platform in [Platform::Telegram, Platform::Discord] {
            assert_eq!(
                shown_text(platform, "⚠️ unreachable", Some(cause)),
                "⚠️ unreachable"
            );
        }
        assert_eq!(
            shown_text(Platform::Console, "Cancelled.", None),
            "Cancelled."
        );
    }
}
