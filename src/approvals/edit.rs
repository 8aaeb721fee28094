//! Editing an action sent back from its card: what to type, reading what
//! was typed as the new arguments, and checking new arguments the way
//! every edit is checked (typed or sent in a form).

use crate::domain::Conversation;
use crate::tools::Tool;
use crate::visible::visible;
use serde_json::Value;

/// Longest current value quoted in the edit prompt.
const SHOWN_CHARS: usize = 300;

/// The one field plain text replaces: `command` of a command-like tool, else
/// the only string field of the arguments.
fn text_field(args: &Value) -> Option<&str> {
    let object = args.as_object()?;
    if matches!(object.get("command"), Some(Value::String(_))) {
        return Some("command");
    }
    let mut strings = object.iter().filter(|(_, v)| v.is_string());
    match (strings.next(), strings.next()) {
        (Some((name, _)), None) => Some(name.as_str()),
        _ => None,
    }
}

/// New arguments from an edit: a JSON object replaces them; plain text
/// replaces the text field (see [`text_field`]). `None`: neither fits.
pub(crate) fn edited_arguments(old: &Value, text: &str) -> Option<Value> {
    let text = text.trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
        return Some(v);
    }
    let field = text_field(old)?.to_owned();
    if text.is_empty() {
        return None;
    }
    let mut new = old.clone();
    if let Some(slot) = new.get_mut(&field) {
        *slot = Value::String(text.to_owned());
    }
    Some(new)
}

/// Whether `args` may replace a call's arguments: they fit the tool's
/// argument schema and pass the tool's own checks for `caller` (the paused
/// turn's conversation). Without the tool (gone since), only that they are
/// an object. `Err` says why not, for the person who edited them.
pub(crate) fn check(
    tool: Option<&dyn Tool>,
    args: &Value,
    caller: Option<&Conversation>,
) -> Result<(), String> {
    let Some(tool) = tool else {
        return match args {
            Value::Object(_) => Ok(()),
            _ => Err("the arguments must be a JSON object".into()),
        };
    };
    super::edit_schema::check(&tool.spec().parameters, args)?;
    tool.validate_for(args, caller).map_err(|e| e.to_string())
}

/// What to send as the next message, with the current arguments (`arguments`
/// is their JSON text) so they can be copied and changed.
pub(crate) fn prompt(arguments: &str) -> String {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    match text_field(&args) {
        Some(field) => {
            let now = args.get(field).and_then(Value::as_str).unwrap_or_default();
            format!(
                "send the new arguments as your next message: the new {field} as plain text (now `{}`), or a JSON object",
                shown(now)
            )
        }
        None => format!(
            "send the new arguments as your next message: a JSON object like `{}`",
            shown(arguments)
        ),
    }
}

/// `text` for one line of a card: controls visible, no backticks or line
/// breaks to break out of the code span, clipped.
fn shown(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| match c {
            '`' => '\'',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect();
    let seen = visible(&one_line).text;
    match seen.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &seen[..cut]),
        None => seen,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edits_replace_json_the_command_or_the_only_text_field() {
        let old = json!({"command": "rm -rf build", "timeout_secs": 5});
        assert_eq!(
            edited_arguments(&old, "ls build"),
            Some(json!({"command": "ls build", "timeout_secs": 5}))
        );
        assert_eq!(
            edited_arguments(&old, r#"{"command":"ls"}"#),
            Some(json!({"command": "ls"}))
        );
        assert_eq!(
            edited_arguments(&json!({"path": "a", "max_bytes": 10}), "b.txt"),
            Some(json!({"path": "b.txt", "max_bytes": 10}))
        );
        // Two text fields: only JSON says which is which.
        let write = json!({"path": "a", "content": "x"});
        assert_eq!(edited_arguments(&write, "b"), None);
        assert_eq!(edited_arguments(&old, "  "), None);
    }

    #[test]
    fn the_prompt_shows_the_current_arguments_and_what_to_type() {
        let p = prompt(r#"{"command":"ls `x`\nrm y"}"#);
        assert!(
            p.contains("the new command as plain text (now `ls 'x' rm y`)"),
            "{p}"
        );
        let p = prompt(r#"{"path":"a.txt","content":"hi"}"#);
        assert!(
            p.contains(r#"a JSON object like `{"path":"a.txt","content":"hi"}`"#),
            "{p}"
        );
        assert!(prompt(&format!(r#"{{"path":"{}"}}"#, "x".repeat(900))).contains("x…`"));
    }
}
