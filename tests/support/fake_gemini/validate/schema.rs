//! Validation of `tools[].functionDeclarations[]` and their `Schema` objects
//! (an OpenAPI-3 subset: JSON Schema keywords outside it are a 400).

use std::collections::HashSet;

use serde_json::Value;

use super::unknown_fields;

const SCHEMA_FIELDS: [&str; 22] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

const TYPES: [&str; 7] = [
    "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL",
];

pub(super) fn validate_tools(tools: &Value) -> Result<(), String> {
    let tools = tools.as_array().ok_or("tools must be an array")?;
    let mut names = HashSet::new();
    for (t, tool) in tools.iter().enumerate() {
        let object = tool.as_object().ok_or("tools must be objects")?;
        let at = format!("tools[{t}]");
        unknown_fields(
            object,
            &[
                "functionDeclarations",
                "googleSearch",
                "codeExecution",
                "urlContext",
            ],
            &at,
        )?;
        let declarations = object
            .get("functionDeclarations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for (d, declaration) in declarations.enumerate() {
            let at = format!("{at}.function_declarations[{d}]");
            let object = declaration
                .as_object()
                .ok_or("declarations must be objects")?;
            unknown_fields(
                object,
                &[
                    "name",
                    "description",
                    "parameters",
                    "parametersJsonSchema",
                    "response",
                    "behavior",
                ],
                &at,
            )?;
            let name = object
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !valid_name(name) {
                return Err(format!("* GenerateContentRequest.{at}.name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:) or dashes (-), with a maximum length of 64."));
            }
            if !names.insert(name.to_owned()) {
                return Err(format!("* GenerateContentRequest.{at}.name: Duplicate function declaration name {name}."));
            }
            if let Some(parameters) = object.get("parameters") {
                validate_schema(parameters, &format!("{at}.parameters"))?;
            }
        }
    }
    Ok(())
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// Checks one `Schema` object (recursively).
pub(super) fn validate_schema(schema: &Value, at: &str) -> Result<(), String> {
    let object = schema
        .as_object()
        .ok_or_else(|| format!("Invalid value at '{at}' (type.googleapis.com/google.ai.generativelanguage.v1beta.Schema), {schema}"))?;
    unknown_fields(object, &SCHEMA_FIELDS, at)?;
    let kind = match object.get("type") {
        None => None,
        Some(Value::String(name)) if TYPES.contains(&name.to_ascii_uppercase().as_str()) => {
            Some(name.to_ascii_uppercase())
        }
        Some(other) => {
            return Err(format!("Invalid value at '{at}.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), {other}"))
        }
    };
    if let Some(values) = object.get("enum") {
        let all_strings = values
            .as_array()
            .is_some_and(|v| v.iter().all(Value::is_string));
        if !all_strings {
            return Err(format!(
                "Invalid value at '{at}.enum' (TYPE_STRING), {values}"
            ));
        }
    }
    if let Some(format) = object.get("format").and_then(Value::as_str) {
        if !["enum", "date-time", "int32", "int64", "float", "double"].contains(&format) {
            return Err(format!("* GenerateContentRequest.{at}.format: only 'enum' and 'date-time' are supported for STRING type"));
        }
    }
    let properties = object.get("properties").and_then(Value::as_object);
    if kind.as_deref() == Some("OBJECT") && properties.is_none_or(|p| p.is_empty()) {
        return Err(format!(
            "* GenerateContentRequest.{at}.properties: should be non-empty for OBJECT type"
        ));
    }
    for (name, property) in properties.into_iter().flatten() {
        validate_schema(property, &format!("{at}.properties[{name}].value"))?;
    }
    for (r, required) in object
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let declared = required
            .as_str()
            .is_some_and(|r| properties.is_some_and(|p| p.contains_key(r)));
        if !declared {
            return Err(format!(
                "* GenerateContentRequest.{at}.required[{r}]: property is not defined"
            ));
        }
    }
    if let Some(items) = object.get("items") {
        validate_schema(items, &format!("{at}.items"))?;
    }
    if kind.as_deref() == Some("ARRAY") && object.get("items").is_none() {
        return Err(format!(
            "* GenerateContentRequest.{at}.items: missing field."
        ));
    }
    for (i, member) in object
        .get("anyOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        validate_schema(member, &format!("{at}.any_of[{i}]"))?;
    }
    Ok(())
}
