//! Side calls to the model (extraction, layer refresh, rule distillation):
//! one prompt in, the whole text out, and the strict JSON reading of it.

use super::MemoryError;
use crate::llm::Provider;
use serde_json::Value;
use std::time::Duration;

/// How long a side call may take before it is abandoned.
pub(crate) const SIDE_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs one model call without tools and returns its text.
pub(crate) async fn complete(
    provider: &dyn Provider,
    system: &str,
    user: String,
) -> Result<String, MemoryError> {
    Ok(crate::llm::complete(provider, system, user, SIDE_CALL_TIMEOUT).await?)
}

/// The JSON object of a reply: the whole text, or the body of one ```json fence
/// around it. Anything else breaks the contract.
pub(crate) fn json_object(reply: &str) -> Result<serde_json::Map<String, Value>, MemoryError> {
    let text = reply.trim();
    let body = match text.strip_prefix("```") {
        Some(rest) => {
            let rest = rest.strip_prefix("json").unwrap_or(rest);
            rest.strip_suffix("```")
                .ok_or_else(|| MemoryError::Contract("unterminated code fence".into()))?
                .trim()
        }
        None => text,
    };
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(MemoryError::Contract(
            "the reply is not a JSON object".into(),
        )),
        Err(e) => Err(MemoryError::Contract(format!("the reply is not JSON: {e}"))),
    }
}

/// Clips `s` to `max` characters.
pub(crate) use crate::text::clip;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_bare_or_fenced_objects_only() {
        assert!(json_object(r#"{"memories": []}"#).is_ok());
        assert!(json_object("```json\n{\"memories\": []}\n```").is_ok());
        assert!(json_object("Sure! {\"memories\": []}").is_err());
        assert!(json_object("[1, 2]").is_err());
        assert!(json_object("```json\n{}").is_err());
    }

    #[test]
    fn clipping_respects_characters() {
        assert_eq!(clip("咖啡很好喝", 2), "咖啡…");
        assert_eq!(clip("ok", 5), "ok");
    }
}
