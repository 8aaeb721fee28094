//! The fields a tool names in its spec ([`crate::tools::ToolSpec::key_fields`])
//! found in its results: what compaction carries over word for word — of a
//! JSON object, those keys' values; of text, the lines naming one of them.

use crate::llm::{Message, Role};
use serde_json::Value;
use std::collections::HashMap;

/// Tool name → the fields its results keep.
pub type KeyFields = HashMap<String, Vec<String>>;

/// Values kept of one result at most.
const MAX_VALUES: usize = 8;

/// For each tool result in `messages`, the name of the tool that produced it
/// (by its call id, from the assistant's calls before it).
pub(crate) fn result_tools(messages: &[Message]) -> HashMap<&str, &str> {
    messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.tool_calls)
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect()
}

/// The declaring tool's name and its fields, for a tool result `m`.
pub(crate) fn declared<'a>(
    m: &Message,
    tools: &HashMap<&str, &'a str>,
    key_fields: &'a KeyFields,
) -> Option<(&'a str, &'a [String])> {
    if m.role != Role::Tool {
        return None;
    }
    let name = *tools.get(m.tool_call_id.as_deref()?)?;
    let fields = key_fields.get(name)?;
    Some((name, fields.as_slice()))
}

/// The named fields of `content`, verbatim, in the result's order, at most
/// [`MAX_VALUES`]: `key: value` of a JSON object, else the lines naming a field.
pub fn field_values(content: &str, fields: &[String]) -> Vec<String> {
    match serde_json::from_str::<Value>(content.trim()) {
        Ok(Value::Object(map)) => fields
            .iter()
            .filter_map(|k| map.get(k).map(|v| format!("{k}: {}", verbatim(v))))
            .take(MAX_VALUES)
            .collect(),
        _ => {
            let lowered: Vec<String> = fields.iter().map(|f| f.to_lowercase()).collect();
            content
                .lines()
                .map(str::trim)
                .filter(|line| {
                    let line = line.to_lowercase();
                    !line.is_empty() && lowered.iter().any(|f| line.contains(f.as_str()))
                })
                .take(MAX_VALUES)
                .map(str::to_owned)
                .collect()
        }
    }
}

fn verbatim(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn fields(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn json_keeps_the_named_keys_and_text_the_lines_naming_them() {
        let json = r#"{"symbol":"AAPL","units":"10.5","note":"x","cost_basis":1502.25}"#;
        assert_eq!(
            field_values(json, &fields(&["cost_basis", "units", "missing"])),
            ["cost_basis: 1502.25", "units: 10.5"]
        );
        let text = "USD — cost basis 3000\n- AAPL: 10 units, average cost 150\n(prices unknown)";
        assert_eq!(
            field_values(text, &fields(&["Cost Basis", "units"])),
            [
                "USD — cost basis 3000",
                "- AAPL: 10 units, average cost 150"
            ]
        );
        let many = "units\n".repeat(20);
        assert_eq!(field_values(&many, &fields(&["units"])).len(), MAX_VALUES);
    }

    #[test]
    fn a_result_is_matched_to_its_tool_by_call_id() {
        let messages = [
            Message {
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "portfolio".into(),
                    arguments: "{}".into(),
                }],
                ..Message::assistant("")
            },
            Message::tool_result("c1", "- AAPL: 10 units"),
            Message::tool_result("c9", "- MSFT: 1 units"),
        ];
        let tools = result_tools(&messages);
        let key_fields = KeyFields::from([("portfolio".to_owned(), fields(&["units"]))]);
        let (name, f) = declared(&messages[1], &tools, &key_fields).unwrap();
        assert_eq!((name, f), ("portfolio", fields(&["units"]).as_slice()));
        assert!(declared(&messages[2], &tools, &key_fields).is_none());
        assert!(declared(&messages[0], &tools, &key_fields).is_none());
    }
}
