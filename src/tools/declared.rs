//! What operator-declared tools (HTTP API tools, script tools) share: the
//! name rule and the arguments schema, checked on every call.

use super::ToolError;
use serde_json::{Map, Value};

/// 1–64 lowercase letters, digits or underscores.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// An object JSON Schema as declared, with its property and required names.
#[derive(Debug, Clone)]
pub struct DeclaredSchema {
    /// Shown to the model as is.
    pub schema: Value,
    pub properties: Vec<String>,
    pub required: Vec<String>,
}

impl DeclaredSchema {
    /// Reads `{"type": "object", "properties": {...}, "required": [...]}`.
    pub(crate) fn parse(schema: Value) -> Result<DeclaredSchema, String> {
        let obj = schema
            .as_object()
            .filter(|o| o.get("type").and_then(Value::as_str) == Some("object"))
            .ok_or("parameters must be a JSON Schema object with \"type\": \"object\"")?;
        let properties: Vec<String> = obj
            .get("properties")
            .and_then(Value::as_object)
            .map(Map::keys)
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        let required: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        if let Some(r) = required.iter().find(|r| !properties.contains(r)) {
            return Err(format!(
                "required parameter {r} is not among the properties"
            ));
        }
        Ok(DeclaredSchema {
            schema,
            properties,
            required,
        })
    }

    /// The call's arguments as an object with only declared names and every
    /// required one.
    pub(crate) fn check(&self, args: Value) -> Result<Map<String, Value>, ToolError> {
        let args = match args {
            // Models often wrap the arguments as {"params": {...}}: accepted
            // unless `params` is a parameter of the tool itself.
            Value::Object(mut map)
                if map.len() == 1
                    && !self.properties.iter().any(|p| p == "params")
                    && matches!(map.get("params"), Some(Value::Object(_))) =>
            {
                match map.remove("params") {
                    Some(Value::Object(inner)) => inner,
                    _ => Map::new(),
                }
            }
            Value::Object(map) => map,
            Value::Null => Map::new(),
            _ => {
                return Err(ToolError::InvalidArguments(
                    "arguments must be a JSON object".into(),
                ))
            }
        };
        if let Some(unknown) = args.keys().find(|k| !self.properties.contains(k)) {
            return Err(ToolError::InvalidArguments(format!(
                "unknown parameter `{unknown}`; the parameters are: {}",
                self.properties.join(", ")
            )));
        }
        if let Some(missing) = self.required.iter().find(|r| !args.contains_key(*r)) {
            return Err(ToolError::InvalidArguments(format!(
                "missing required parameter `{missing}`"
            )));
        }
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_checked_against_the_declaration() {
        let s = DeclaredSchema::parse(json!({"type": "object",
            "properties": {"a": {}, "b": {}}, "required": ["a"]}))
        .unwrap();
        assert!(s.check(json!({"a": 1})).is_ok());
        let e = s.check(json!({"a": 1, "c": 2})).unwrap_err().to_string();
        assert!(e.contains("unknown parameter `c`"), "{e}");
        let e = s.check(json!({"b": 1})).unwrap_err().to_string();
        assert!(e.contains("missing required parameter `a`"), "{e}");
        assert!(s.check(json!("x")).is_err());
        assert!(DeclaredSchema::parse(json!({"type": "string"})).is_err());
        assert!(DeclaredSchema::parse(json!({"type": "object", "required": ["z"]})).is_err());
    }

    #[test]
    fn arguments_wrapped_in_params_are_accepted() {
        let s = DeclaredSchema::parse(json!({"type": "object",
            "properties": {"city": {}}, "required": ["city"]}))
        .unwrap();
        let args = s.check(json!({"params": {"city": "Oslo"}})).unwrap();
        assert_eq!(args.get("city"), Some(&json!("Oslo")));
        // Still checked once unwrapped.
        assert!(s.check(json!({"params": {"town": "Oslo"}})).is_err());
        assert!(s.check(json!({"params": "Oslo"})).is_err());
        // A tool with its own `params` parameter gets it as given.
        let own = DeclaredSchema::parse(json!({"type": "object",
            "properties": {"params": {}}}))
        .unwrap();
        let args = own.check(json!({"params": {"x": 1}})).unwrap();
        assert_eq!(args.get("params"), Some(&json!({"x": 1})));
    }

    #[test]
    fn names() {
        assert!(valid_tool_name("disk_report2"));
        assert!(!valid_tool_name("Disk") && !valid_tool_name("") && !valid_tool_name("a-b"));
    }
}
