//! Typed parsing of tool arguments with errors the model can act on.

use super::ToolError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parses a tool's JSON arguments into `T` (which should `deny_unknown_fields`).
///
/// The error names the problem (`missing field \`path\``, `unknown field \`x\``,
/// wrong type) so the model can fix the call.
pub(crate) fn parse_args<T>(tool: &str, args: Value) -> Result<T, ToolError>
where
    T: DeserializeOwned,
{
    if !args.is_object() {
        return Err(ToolError::InvalidArguments(format!(
            "{tool} expects a JSON object of arguments, got {}",
            kind(&args)
        )));
    }
    serde_json::from_value(args)
        .map_err(|e| ToolError::InvalidArguments(format!("{tool}: {e}; see the tool's schema")))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct A {
        path: String,
        n: Option<u32>,
    }

    #[test]
    fn errors_name_the_problem() {
        let e = parse_args::<A>("t", json!({})).unwrap_err().for_model();
        assert!(e.contains("missing field `path`"), "{e}");
        let e = parse_args::<A>("t", json!({"path": "a", "x": 1}))
            .unwrap_err()
            .for_model();
        assert!(e.contains("unknown field `x`"), "{e}");
        let e = parse_args::<A>("t", json!({"path": 3}))
            .unwrap_err()
            .for_model();
        assert!(e.contains("invalid type"), "{e}");
        let e = parse_args::<A>("t", json!("a")).unwrap_err().for_model();
        assert!(e.contains("got a string"), "{e}");
        assert!(parse_args::<A>("t", json!({"path": "a", "n": 2})).is_ok());
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(crate::text::clip("héllo", 2), "hé…");
        assert_eq!(crate::text::clip("hi", 2), "hi");
    }
}
