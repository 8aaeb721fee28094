//! Edited arguments against the tool's argument schema (its top level): the
//! required arguments present, each argument of its declared type and among
//! its allowed values, none the schema does not name when it allows no
//! others. Deeper checks are the tool's own (`Tool::validate_for`).

use serde_json::Value;

/// `Ok` when `args` fits `schema`'s top level, else what does not, in words
/// for the person who edited them.
pub(crate) fn check(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(object) = args.as_object() else {
        return Err("the arguments must be a JSON object".into());
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !object.contains_key(name) {
            return Err(format!("`{name}` is required"));
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (name, value) in object {
        match properties.and_then(|p| p.get(name)) {
            Some(property) => fits(name, property, value)?,
            None if closed => return Err(format!("`{name}` is not an argument of this tool")),
            None => {}
        }
    }
    Ok(())
}

/// Whether `value` has one of `property`'s types and, when it lists them,
/// one of its values.
fn fits(name: &str, property: &Value, value: &Value) -> Result<(), String> {
    let types: Vec<&str> = match property.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| is_type(t, value)) {
        return Err(format!("`{name}` must be {}", words(&types)));
    }
    if let Some(allowed) = property.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(format!("`{name}` must be one of {}", listed.join(", ")));
        }
    }
    Ok(())
}

fn is_type(name: &str, value: &Value) -> bool {
    match name {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        // A type this check does not know is the tool's to judge.
        _ => true,
    }
}

fn words(types: &[&str]) -> String {
    let named: Vec<String> = types
        .iter()
        .map(|t| match *t {
            "integer" => "an integer".to_owned(),
            "array" => "an array".to_owned(),
            "object" => "an object".to_owned(),
            "null" => "null".to_owned(),
            other => format!("a {other}"),
        })
        .collect();
    named.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout_secs": {"type": "integer"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "note": {"type": ["string", "null"]},
            },
            "required": ["command"],
            "additionalProperties": false,
        })
    }

    #[test]
    fn arguments_that_fit_pass() {
        let args = json!({"command": "ls", "timeout_secs": 5, "mode": "fast", "note": null});
        assert_eq!(check(&schema(), &args), Ok(()));
        // An open schema takes arguments it does not name.
        assert_eq!(check(&json!({}), &json!({"anything": 1})), Ok(()));
    }

    #[test]
    fn what_does_not_fit_is_named() {
        let refused = |args: Value| check(&schema(), &args).unwrap_err();
        assert_eq!(refused(json!({"timeout_secs": 5})), "`command` is required");
        assert_eq!(
            refused(json!({"command": "ls", "timeout_secs": "5"})),
            "`timeout_secs` must be an integer"
        );
        assert_eq!(
            refused(json!({"command": "ls", "mode": "slowest"})),
            r#"`mode` must be one of "fast", "slow""#
        );
        assert_eq!(
            refused(json!({"command": "ls", "rm": true})),
            "`rm` is not an argument of this tool"
        );
        assert_eq!(
            refused(json!({"command": "ls", "note": 3})),
            "`note` must be a string or null"
        );
        assert_eq!(
            refused(json!(["ls"])),
            "the arguments must be a JSON object"
        );
    }
}
