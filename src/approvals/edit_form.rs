//! The form an approval card's Edit opens where the platform has forms (a
//! Discord modal): one text field per argument when there are at most
//! [`Form::MAX_FIELDS`] and all are text, else one field holding the
//! arguments as JSON — each prefilled with what the card asks about — and
//! reading the arguments back from what was sent.

use super::card::{action_id, Choice};
use crate::store::ApprovalRecord;
use serde_json::{Map, Value};
use switchboard_platform::{FieldValue, Form, FormField};

/// The id of the one field holding the arguments as JSON.
const JSON_FIELD: &str = "arguments";
/// A text value longer than this gets a paragraph rather than a line.
const ONE_LINE_CHARS: usize = 100;

/// How a card's arguments are laid out in its form.
#[derive(Debug, PartialEq, Eq)]
enum Layout {
    /// One field per argument: its name and whether the schema requires it.
    Fields(Vec<(String, bool)>),
    /// One field holding the whole arguments as JSON.
    Json,
}

/// The layout of `arguments` (the call's current ones) under `schema`;
/// `None` when even the JSON does not fit a field.
fn layout(arguments: &Value, schema: Option<&Value>) -> Option<Layout> {
    let object = arguments.as_object()?;
    // Without the tool's schema every argument is taken as required.
    let required = |name: &str| match schema {
        None => true,
        Some(schema) => schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|n| n.as_str() == Some(name))),
    };
    let fits = |name: &String, value: &Value| {
        let id = name.chars().count();
        (1..=Form::MAX_ID_CHARS).contains(&id)
            && value
                .as_str()
                .is_some_and(|v| v.chars().count() <= Form::MAX_VALUE_CHARS)
    };
    if (1..=Form::MAX_FIELDS).contains(&object.len()) && object.iter().all(|(n, v)| fits(n, v)) {
        let fields = object.keys().map(|n| (n.clone(), required(n))).collect();
        return Some(Layout::Fields(fields));
    }
    (pretty(arguments).chars().count() <= Form::MAX_VALUE_CHARS).then_some(Layout::Json)
}

fn pretty(arguments: &Value) -> String {
    serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string())
}

/// The form that edits `record`'s arguments (`schema`: its tool's, when
/// known), submitted as the card's Edit action; `None` when they do not fit
/// one (the requester then types them, as on platforms without forms).
pub(crate) fn form_for(record: &ApprovalRecord, schema: Option<&Value>) -> Option<Form> {
    let arguments: Value = serde_json::from_str(&record.arguments).ok()?;
    let fields = match layout(&arguments, schema)? {
        Layout::Fields(names) => names
            .into_iter()
            .map(|(name, required)| {
                let value = arguments[&name].as_str().unwrap_or_default().to_owned();
                FormField {
                    id: name.clone(),
                    label: name,
                    multiline: value.contains('\n') || value.chars().count() > ONE_LINE_CHARS,
                    value,
                    required,
                }
            })
            .collect(),
        Layout::Json => vec![FormField {
            id: JSON_FIELD.into(),
            label: "Arguments (JSON)".into(),
            value: pretty(&arguments),
            multiline: true,
            required: true,
        }],
    };
    Some(Form {
        action: action_id(&record.id, Choice::Edit)?,
        title: record.tool_name.clone(),
        fields,
    })
}

/// The new arguments `sent` (a submission of [`form_for`]'s form) gives
/// `record`'s call: each field replaces its argument (an optional one left
/// empty is dropped), or the JSON replaces them all. `Err` says why not.
pub(crate) fn arguments_from(
    record: &ApprovalRecord,
    schema: Option<&Value>,
    sent: &[FieldValue],
) -> Result<Value, String> {
    const STALE: &str = "the form does not match this card any more; press Edit again";
    let old: Value = serde_json::from_str(&record.arguments).map_err(|_| STALE.to_owned())?;
    let value_of = |id: &str| sent.iter().find(|f| f.id == id).map(|f| f.value.as_str());
    match layout(&old, schema).ok_or(STALE)? {
        Layout::Json => {
            let [only] = sent else {
                return Err(STALE.into());
            };
            let text = value_of(JSON_FIELD).ok_or(STALE)?;
            match serde_json::from_str::<Value>(text.trim()) {
                Ok(object @ Value::Object(_)) => Ok(object),
                Ok(_) => Err("the arguments must be a JSON object".into()),
                Err(e) => Err(format!("`{}` is not JSON: {e}", only.id)),
            }
        }
        Layout::Fields(names) => {
            if sent.len() != names.len() {
                return Err(STALE.into());
            }
            let mut new = Map::new();
            for (name, required) in names {
                let value = value_of(&name).ok_or(STALE)?;
                if value.trim().is_empty() && !required {
                    continue;
                }
                new.insert(name, Value::String(value.to_owned()));
            }
            Ok(Value::Object(new))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(arguments: Value) -> ApprovalRecord {
        let mut record = crate::store::test_approval("0123456789abcdef", 600);
        record.arguments = arguments.to_string();
        record
    }

    fn sent(fields: &[(&str, &str)]) -> Vec<FieldValue> {
        fields
            .iter()
            .map(|(id, value)| FieldValue {
                id: (*id).into(),
                value: (*value).into(),
            })
            .collect()
    }

    #[test]
    fn text_arguments_get_a_field_each_prefilled() {
        let schema = json!({"required": ["path"]});
        let r = record(json!({"path": "a.txt", "content": "line 1\nline 2"}));
        let form = form_for(&r, Some(&schema)).unwrap();
        assert_eq!(form.title, r.tool_name);
        assert_eq!(form.action.as_str(), format!("ap:{}:e", r.id));
        let shown: Vec<(&str, &str, bool, bool)> = form
            .fields
            .iter()
            .map(|f| (f.id.as_str(), f.value.as_str(), f.multiline, f.required))
            .collect();
        assert_eq!(
            shown,
            [
                ("content", "line 1\nline 2", true, false),
                ("path", "a.txt", false, true)
            ]
        );
        let args = arguments_from(
            &r,
            Some(&schema),
            &sent(&[("content", ""), ("path", "b.txt")]),
        );
        assert_eq!(
            args,
            Ok(json!({"path": "b.txt"})),
            "an emptied optional argument is dropped"
        );
    }

    #[test]
    fn other_arguments_are_edited_as_json() {
        let r = record(json!({"command": "ls", "timeout_secs": 5}));
        let form = form_for(&r, None).unwrap();
        assert_eq!(form.fields.len(), 1);
        assert_eq!(form.fields[0].id, "arguments");
        assert!(form.fields[0].value.contains("\"timeout_secs\": 5"));
        let six: Map<String, Value> = (0..6).map(|i| (format!("k{i}"), json!("v"))).collect();
        let form = form_for(&record(Value::Object(six)), None).unwrap();
        assert_eq!(form.fields[0].id, "arguments");
        let sent_json = |text: &str| arguments_from(&r, None, &sent(&[("arguments", text)]));
        assert_eq!(
            sent_json(r#"{"command":"pwd"}"#),
            Ok(json!({"command": "pwd"}))
        );
        assert_eq!(
            sent_json("[1]"),
            Err("the arguments must be a JSON object".into())
        );
        assert!(sent_json("{oops")
            .unwrap_err()
            .starts_with("`arguments` is not JSON"));
    }

    #[test]
    fn what_does_not_fit_gets_no_form_and_stale_forms_are_refused() {
        let huge = record(json!({"content": "x".repeat(5000), "n": 1}));
        assert_eq!(form_for(&huge, None), None);
        let r = record(json!({"command": "ls"}));
        let stale = arguments_from(&r, None, &sent(&[("path", "x")]));
        assert!(stale.unwrap_err().contains("press Edit again"));
        assert!(arguments_from(&r, None, &[]).is_err());
    }
}
