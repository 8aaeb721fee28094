//! Tool-call ids for Gemini function calls, carrying the `thoughtSignature`.
//!
//! Gemini's function calls often have no id, and thinking models (2.5, 3) attach
//! a `thoughtSignature` to a `functionCall` part that must come back on that part
//! in the next request (Gemini 3 rejects the history otherwise). [`ToolCall`]
//! has no field for it, but its id is opaque to the runtime, stored with the
//! message and returned verbatim — so the signature travels inside the id:
//!
//! ```text
//! gc_<32 hex>[.<signature>]   Gemini sent no id: a generated base, never sent
//! <gemini id>.[<signature>]    Gemini's id, sent back on the functionCall and
//!                              functionResponse parts
//! ```
//!
//! Signatures are base64 (never a `.`); a Gemini id containing a `.` is replaced
//! by a generated one. Ids of other providers (no `.`) carry neither part.
//!
//! [`ToolCall`]: crate::llm::ToolCall

/// Prefix of generated bases (they stay on our side).
const GENERATED: &str = "gc_";

/// The signature Google documents for function calls another model made (a
/// fallback continuing a turn on Gemini): Gemini 3 refuses a call without one.
pub(crate) const FOREIGN_SIGNATURE: &str = "skip_thought_signature_validator";

/// A call id taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallId<'a> {
    /// Gemini's own id of the call, if it sent one.
    pub(crate) gemini_id: Option<&'a str>,
    pub(crate) signature: Option<&'a str>,
    /// Another provider made the call (Gemini never did).
    pub(crate) foreign: bool,
}

/// The tool-call id of a streamed `functionCall` part.
pub(crate) fn encode(gemini_id: Option<&str>, signature: Option<&str>) -> String {
    let base = match gemini_id.filter(|id| !id.is_empty() && !id.contains('.')) {
        Some(id) if !id.starts_with(GENERATED) => id.to_owned(),
        _ => format!("{GENERATED}{}", uuid::Uuid::new_v4().simple()),
    };
    let signature = signature.unwrap_or_default();
    if signature.is_empty() && base.starts_with(GENERATED) {
        base
    } else {
        format!("{base}.{signature}")
    }
}

/// Splits an id produced by [`encode`]; ids from other providers come back with
/// neither part (their base is not Gemini's, so it is not sent).
pub(crate) fn decode(id: &str) -> CallId<'_> {
    let Some((base, signature)) = id.split_once('.') else {
        return CallId {
            gemini_id: None,
            signature: None,
            foreign: !id.starts_with(GENERATED),
        };
    };
    let gemini_id = Some(base).filter(|b| !b.is_empty() && !b.starts_with(GENERATED));
    let signature = Some(signature).filter(|s| !s.is_empty());
    CallId {
        gemini_id,
        signature,
        foreign: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_and_ids_round_trip() {
        let id = encode(None, Some("c2lnbmF0dXJl+/=="));
        assert!(id.starts_with("gc_"), "{id}");
        assert_eq!(
            decode(&id),
            CallId {
                gemini_id: None,
                signature: Some("c2lnbmF0dXJl+/=="),
                foreign: false,
            }
        );
        let id = encode(Some("fc-17"), Some("sig"));
        assert_eq!(id, "fc-17.sig");
        assert_eq!(
            decode(&id),
            CallId {
                gemini_id: Some("fc-17"),
                signature: Some("sig"),
                foreign: false,
            }
        );
        assert_eq!(encode(Some("fc-18"), None), "fc-18.");
        assert_eq!(decode("fc-18.").gemini_id, Some("fc-18"));
        let plain = encode(None, None);
        assert!(!plain.contains('.'), "{plain}");
        assert_eq!(
            decode(&plain),
            CallId {
                gemini_id: None,
                signature: None,
                foreign: false,
            }
        );
    }

    #[test]
    fn foreign_ids_carry_nothing() {
        assert_eq!(
            decode("call_abc"),
            CallId {
                gemini_id: None,
                signature: None,
                foreign: true,
            }
        );
    }
}
