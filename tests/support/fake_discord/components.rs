//! Discord's checks on the components the fake is sent beyond buttons:
//! string select menus in a message (alone in their action row, 1–25
//! options with labels, values and descriptions of at most 100 characters,
//! a placeholder of at most 150) and modals (type 9 callbacks: a custom id
//! of 1–100 characters, a title of 1–45, 1–5 action rows of exactly one
//! text input each with its own custom id, style 1 or 2, a label of 1–45
//! characters and lengths and a value within 0–4000).

use serde_json::Value;
use std::collections::HashSet;

/// A refused field and Discord's message for it.
pub(crate) type Refusal = (&'static str, &'static str);

fn chars(value: &Value) -> Option<usize> {
    value.as_str().map(|s| s.chars().count())
}

fn within(value: &Value, min: usize, max: usize) -> bool {
    chars(value).is_some_and(|n| (min..=max).contains(&n))
}

/// A string select (type 3); its custom id joins the message's `ids`.
pub(crate) fn select(select: &Value, ids: &mut HashSet<String>) -> Result<(), Refusal> {
    const FIELD: &str = "components";
    if !within(&select["custom_id"], 1, 100) {
        return Err((FIELD, "custom_id must be 1 to 100 characters."));
    }
    if !ids.insert(select["custom_id"].as_str().unwrap_or_default().to_owned()) {
        return Err((FIELD, "Component custom id cannot be duplicated"));
    }
    let options = select["options"].as_array().cloned().unwrap_or_default();
    if options.is_empty() || options.len() > 25 {
        return Err((FIELD, "A select menu has 1 to 25 options."));
    }
    let mut values = HashSet::new();
    for option in &options {
        if !within(&option["label"], 1, 100) || !within(&option["value"], 1, 100) {
            return Err((FIELD, "Option labels and values are 1 to 100 characters."));
        }
        if !option["description"].is_null() && !within(&option["description"], 0, 100) {
            return Err((FIELD, "Option descriptions are 100 or fewer in length."));
        }
        if !values.insert(option["value"].as_str().unwrap_or_default().to_owned()) {
            return Err((FIELD, "Option values must be unique."));
        }
    }
    if !select["placeholder"].is_null() && !within(&select["placeholder"], 0, 150) {
        return Err((FIELD, "A placeholder is 150 or fewer in length."));
    }
    let count = |key: &str, default: u64| select[key].as_u64().unwrap_or(default);
    let (min, max) = (count("min_values", 1), count("max_values", 1));
    if min > 25 || !(1..=25).contains(&max) || min > max || max as usize > options.len() {
        return Err((FIELD, "min_values and max_values do not fit the options."));
    }
    Ok(())
}

/// A modal's `data` (type 9 callback).
pub(crate) fn modal(data: &Value) -> Result<(), Refusal> {
    if !within(&data["custom_id"], 1, 100) {
        return Err(("data.custom_id", "Must be between 1 and 100 in length."));
    }
    if !within(&data["title"], 1, 45) {
        return Err(("data.title", "Must be between 1 and 45 in length."));
    }
    let rows = data["components"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() || rows.len() > 5 {
        return Err(("data.components", "Must be between 1 and 5 in length."));
    }
    let mut ids = HashSet::new();
    for row in &rows {
        let inputs = row["components"].as_array().cloned().unwrap_or_default();
        if row["type"] != 1 || inputs.len() != 1 {
            return Err((
                "data.components",
                "A modal row holds exactly one text input.",
            ));
        }
        text_input(&inputs[0], &mut ids)?;
    }
    Ok(())
}

fn text_input(input: &Value, ids: &mut HashSet<String>) -> Result<(), Refusal> {
    const FIELD: &str = "data.components";
    if input["type"] != 4 {
        return Err((FIELD, "Only text inputs are supported in modals."));
    }
    if !within(&input["custom_id"], 1, 100)
        || !ids.insert(input["custom_id"].as_str().unwrap_or_default().to_owned())
    {
        return Err((
            FIELD,
            "Text input custom ids are 1 to 100 characters and unique.",
        ));
    }
    if !matches!(input["style"].as_u64(), Some(1 | 2)) {
        return Err((FIELD, "Text input style must be 1 or 2."));
    }
    if !within(&input["label"], 1, 45) {
        return Err((FIELD, "Text input labels are 1 to 45 characters."));
    }
    let length = |key: &str, min: u64| match &input[key] {
        Value::Null => Ok(None),
        v => v
            .as_u64()
            .filter(|n| (min..=4000).contains(n))
            .map(Some)
            .ok_or((FIELD, "Text input lengths are within 0 to 4000.")),
    };
    let (min, max) = (length("min_length", 0)?, length("max_length", 1)?);
    if let (Some(min), Some(max)) = (min, max) {
        if min > max {
            return Err((FIELD, "min_length exceeds max_length."));
        }
    }
    if !input["value"].is_null() {
        let len = chars(&input["value"]).ok_or((FIELD, "A value is a string."))? as u64;
        if len > max.unwrap_or(4000) {
            return Err((FIELD, "A value is at most max_length (4000) characters."));
        }
    }
    if !input["required"].is_null() && !input["required"].is_boolean() {
        return Err((FIELD, "required is a boolean."));
    }
    Ok(())
}
