//! Parsing `<tool_call>{…}</tool_call>` text from weak models into tool calls, without
//! letting the markup leak into the streamed text.

use serde_json::Value;

use super::types::ToolCall;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// A streaming filter over assistant text: passes ordinary text through, holds back
/// anything that may be the start of a `<tool_call>` tag, and turns complete
/// `<tool_call>…</tool_call>` blocks into [`ToolCall`]s.
#[derive(Debug, Default)]
pub(crate) struct ToolCallTextFilter {
    /// Text not yet emitted: a possible tag prefix, or the body of an open call.
    held: String,
    in_call: bool,
    calls: Vec<ToolCall>,
}

impl ToolCallTextFilter {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Feeds a text delta; returns the text that is safe to show now.
    pub(crate) fn push(&mut self, text: &str) -> String {
        self.held.push_str(text);
        let mut out = String::new();
        loop {
            if self.in_call {
                let Some(end) = self.held.find(CLOSE) else {
                    return out;
                };
                let body: String = self.held.drain(..end).collect();
                self.held.drain(..CLOSE.len());
                self.in_call = false;
                self.take_block(&body, true, &mut out);
            } else if let Some(start) = self.held.find(OPEN) {
                out.extend(self.held.drain(..start));
                self.held.drain(..OPEN.len());
                self.in_call = true;
            } else {
                // Only an ASCII suffix is held back, so the cut is a char boundary.
                let emit = self.held.len() - partial_tag_len(&self.held);
                out.extend(self.held.drain(..emit));
                return out;
            }
        }
    }

    /// Ends the stream: returns the remaining text and every parsed call. An
    /// unterminated `<tool_call>` whose body parses is still accepted.
    pub(crate) fn finish(&mut self) -> (String, Vec<ToolCall>) {
        let mut out = String::new();
        let held = std::mem::take(&mut self.held);
        if self.in_call {
            self.in_call = false;
            self.take_block(&held, false, &mut out);
        } else {
            out.push_str(&held);
        }
        (out, std::mem::take(&mut self.calls))
    }

    /// Parses one block body; on failure the block goes back to the text verbatim.
    fn take_block(&mut self, body: &str, closed: bool, out: &mut String) {
        let calls = parse_block(body);
        if calls.is_empty() {
            tracing::debug!(
                len = body.len(),
                "unparseable <tool_call> block kept as text"
            );
            out.push_str(OPEN);
            out.push_str(body);
            if closed {
                out.push_str(CLOSE);
            }
        } else {
            self.calls.extend(calls);
        }
    }
}

/// Length of the longest proper prefix of `<tool_call>` that `text` ends with.
fn partial_tag_len(text: &str) -> usize {
    (1..OPEN.len())
        .rev()
        .find(|&k| text.ends_with(&OPEN[..k]))
        .unwrap_or(0)
}

/// Parses a block body: `{"name":…,"arguments":…}`, the OpenAI
/// `{"function":{…}}` shape, or an array of either. Empty when it is none of these.
fn parse_block(body: &str) -> Vec<ToolCall> {
    let trimmed = strip_code_fence(body.trim());
    let Ok(value) = serde_json::from_str::<Value>(trimmed) else {
        return Vec::new();
    };
    let items = match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    let calls: Option<Vec<ToolCall>> = items.iter().map(parse_call).collect();
    calls.unwrap_or_default()
}

fn parse_call(value: &Value) -> Option<ToolCall> {
    let obj = value.get("function").unwrap_or(value);
    let name = obj.get("name")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    let arguments = match obj.get("arguments").or_else(|| obj.get("parameters")) {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    let id = value
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map_or_else(generate_call_id, str::to_owned);
    Some(ToolCall {
        id,
        name: name.to_owned(),
        arguments,
    })
}

fn strip_code_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// A fresh id for a tool call whose id the model did not supply.
pub(crate) fn generate_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pieces: &[&str]) -> (String, Vec<ToolCall>) {
        let mut filter = ToolCallTextFilter::new();
        let mut text = String::new();
        for piece in pieces {
            let shown = filter.push(piece);
            assert!(!shown.contains('<'), "markup leaked: {shown:?}");
            text.push_str(&shown);
        }
        let (rest, calls) = filter.finish();
        text.push_str(&rest);
        (text, calls)
    }

    #[test]
    fn plain_text_passes_through() {
        let (text, calls) = run(&["Hello ", "world"]);
        assert_eq!(text, "Hello world");
        assert!(calls.is_empty());
    }

    #[test]
    fn a_call_split_across_deltas_is_parsed_and_hidden() {
        let (text, calls) = run(&[
            "Let me look.\n<to",
            "ol_call>{\"name\": \"read_file\", \"argu",
            "ments\": {\"path\": \"a.txt\"}}</tool_",
            "call>\nDone",
        ]);
        assert_eq!(text, "Let me look.\n\nDone");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "read_file");
        assert_eq!(calls[0].arguments, r#"{"path":"a.txt"}"#);
        assert!(calls[0].id.starts_with("call_"));
    }

    #[test]
    fn two_calls_and_string_arguments() {
        let (text, calls) = run(&[
            "<tool_call>{\"name\":\"a\",\"arguments\":\"{\\\"x\\\":1}\"}</tool_call>",
            "<tool_call>\n{\"function\":{\"name\":\"b\"}}\n</tool_call>",
        ]);
        assert_eq!(text, "");
        assert_eq!(calls[0].name, "a");
        assert_eq!(calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(calls[1].name, "b");
        assert_eq!(calls[1].arguments, "{}");
    }

    #[test]
    fn a_lone_angle_bracket_is_released_when_it_is_not_a_tag() {
        let mut filter = ToolCallTextFilter::new();
        assert_eq!(filter.push("a <"), "a ");
        assert_eq!(filter.push(" b"), "< b");
        assert_eq!(filter.push("x<tool"), "x");
        assert_eq!(filter.finish(), ("<tool".to_owned(), Vec::new()));
    }

    #[test]
    fn unparseable_block_is_returned_as_text() {
        let mut filter = ToolCallTextFilter::new();
        let shown = filter.push("<tool_call>not json</tool_call>!");
        assert_eq!(shown, "<tool_call>not json</tool_call>!");
        assert!(filter.finish().1.is_empty());
    }

    #[test]
    fn unterminated_call_at_end_of_stream() {
        let (text, calls) = run(&["ok <tool_call>{\"name\":\"ls\",\"arguments\":{}}"]);
        assert_eq!(text, "ok ");
        assert_eq!(calls[0].name, "ls");

        let mut filter = ToolCallTextFilter::new();
        filter.push("<tool_call>{\"name\":");
        assert_eq!(filter.finish().0, "<tool_call>{\"name\":");
    }

    #[test]
    fn fenced_body_and_array() {
        let calls = parse_block("```json\n[{\"name\":\"a\"},{\"name\":\"b\",\"id\":\"x\"}]\n```");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].id, "x");
    }
}
