//! Request validation of the fake Gemini server, mirroring the real API's 400
//! INVALID_ARGUMENT answers (unknown fields, roles, parts, function-call pairing,
//! schema keywords).

use serde_json::{Map, Value};

mod schema;

/// Top-level fields of a `GenerateContentRequest`.
const REQUEST_FIELDS: [&str; 7] = [
    "contents",
    "systemInstruction",
    "tools",
    "toolConfig",
    "generationConfig",
    "safetySettings",
    "cachedContent",
];

/// Fields of a `Part` carrying its data (exactly one must be set).
const DATA_FIELDS: [&str; 7] = [
    "text",
    "inlineData",
    "functionCall",
    "functionResponse",
    "fileData",
    "executableCode",
    "codeExecutionResult",
];

const GENERATION_FIELDS: [&str; 14] = [
    "maxOutputTokens",
    "temperature",
    "topP",
    "topK",
    "candidateCount",
    "stopSequences",
    "frequencyPenalty",
    "presencePenalty",
    "seed",
    "responseMimeType",
    "responseSchema",
    "thinkingConfig",
    "responseLogprobs",
    "logprobs",
];

/// Checks a request body; `Err` holds the 400 message.
pub(super) fn validate(request: &Value) -> Result<(), String> {
    let body = request
        .as_object()
        .ok_or("Invalid JSON payload received. Expected an object.")?;
    unknown_fields(body, &REQUEST_FIELDS, "")?;
    let contents = body
        .get("contents")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or("* GenerateContentRequest.contents: contents is not specified")?;
    for (i, content) in contents.iter().enumerate() {
        validate_content(i, content)?;
    }
    validate_pairing(contents)?;
    if let Some(system) = body.get("systemInstruction") {
        validate_system(system)?;
    }
    if let Some(tools) = body.get("tools") {
        schema::validate_tools(tools)?;
    }
    if let Some(config) = body.get("toolConfig") {
        let mode = &config["functionCallingConfig"]["mode"];
        if !mode.is_null()
            && !["AUTO", "ANY", "NONE", "VALIDATED"]
                .iter()
                .any(|m| mode == m)
        {
            return Err(format!(
                "Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), {mode}"
            ));
        }
    }
    if let Some(config) = body.get("generationConfig") {
        let config = config
            .as_object()
            .ok_or("generationConfig must be an object")?;
        unknown_fields(config, &GENERATION_FIELDS, "generation_config")?;
        if let Some(thinking) = config.get("thinkingConfig") {
            validate_thinking(thinking)?;
        }
    }
    Ok(())
}

/// `thinkingConfig`: `includeThoughts` a boolean, `thinkingBudget` an integer
/// from -1 (dynamic) to 32,768.
fn validate_thinking(thinking: &Value) -> Result<(), String> {
    let object = thinking
        .as_object()
        .ok_or("generation_config.thinking_config must be an object")?;
    unknown_fields(
        object,
        &["includeThoughts", "thinkingBudget", "thinkingLevel"],
        "generation_config.thinking_config",
    )?;
    if object
        .get("includeThoughts")
        .is_some_and(|v| !v.is_boolean())
    {
        return Err(
            "Invalid value at 'generation_config.thinking_config.include_thoughts' (TYPE_BOOL)"
                .into(),
        );
    }
    if let Some(budget) = object.get("thinkingBudget") {
        if !budget.as_i64().is_some_and(|b| (-1..=32_768).contains(&b)) {
            return Err(format!("Invalid value at 'generation_config.thinking_config.thinking_budget' (TYPE_INT32), {budget}: the budget must be between -1 and 32768"));
        }
    }
    Ok(())
}

/// "Unknown name" for a field the proto does not have.
pub(super) fn unknown_fields(
    object: &Map<String, Value>,
    known: &[&str],
    at: &str,
) -> Result<(), String> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) if at.is_empty() => Err(format!(
            "Invalid JSON payload received. Unknown name \"{key}\": Cannot find field."
        )),
        Some(key) => Err(format!(
            "Invalid JSON payload received. Unknown name \"{key}\" at '{at}': Cannot find field."
        )),
    }
}

fn validate_content(i: usize, content: &Value) -> Result<(), String> {
    let object = content.as_object().ok_or("contents must be objects")?;
    unknown_fields(object, &["role", "parts"], &format!("contents[{i}]"))?;
    let role = content["role"].as_str().unwrap_or_default();
    if role != "user" && role != "model" {
        return Err("Please use a valid role: user, model.".to_owned());
    }
    let parts = content["parts"]
        .as_array()
        .filter(|p| !p.is_empty())
        .ok_or(format!(
            "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
        ))?;
    for (j, part) in parts.iter().enumerate() {
        validate_part(&format!("contents[{i}].parts[{j}]"), part)?;
    }
    Ok(())
}

fn validate_part(at: &str, part: &Value) -> Result<(), String> {
    let object = part.as_object().ok_or("parts must be objects")?;
    let mut known = DATA_FIELDS.to_vec();
    known.extend(["thought", "thoughtSignature"]);
    unknown_fields(object, &known, at)?;
    let data: Vec<&str> = DATA_FIELDS
        .into_iter()
        .filter(|f| object.contains_key(*f))
        .collect();
    match data.as_slice() {
        [] => {
            return Err(format!(
                "* GenerateContentRequest.{at}.data: required oneof field 'data' must have one initialized field"
            ))
        }
        [_] => {}
        _ => return Err(format!("* GenerateContentRequest.{at}.data: oneof field 'data' is already set")),
    }
    if let Some(text) = object.get("text") {
        if text.as_str().is_none_or(str::is_empty) {
            return Err("Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again.".to_owned());
        }
    }
    if let Some(inline) = object.get("inlineData") {
        check_inline_data(at, inline)?;
    }
    if let Some(call) = object.get("functionCall") {
        let call = call
            .as_object()
            .ok_or(format!("{at}.function_call must be an object"))?;
        unknown_fields(
            call,
            &["id", "name", "args"],
            &format!("{at}.function_call"),
        )?;
        if call
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(format!(
                "* GenerateContentRequest.{at}.function_call.name: Name cannot be empty."
            ));
        }
        if let Some(args) = call.get("args").filter(|a| !a.is_object()) {
            return Err(format!("Invalid value at '{at}.function_call.args' (type.googleapis.com/google.protobuf.Struct), {args}"));
        }
    }
    if let Some(response) = object.get("functionResponse") {
        let response = response
            .as_object()
            .ok_or(format!("{at}.function_response must be an object"))?;
        unknown_fields(
            response,
            &["id", "name", "response"],
            &format!("{at}.function_response"),
        )?;
        if response
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(format!(
                "* GenerateContentRequest.{at}.function_response.name: Name cannot be empty."
            ));
        }
        match response.get("response") {
            Some(Value::Object(_)) => {}
            other => {
                let shown = other.map_or("null".to_owned(), Value::to_string);
                return Err(format!("Invalid value at '{at}.function_response.response' (type.googleapis.com/google.protobuf.Struct), {shown}"));
            }
        }
    }
    Ok(())
}

fn names_of<'a>(content: &'a Value, field: &str) -> Vec<&'a str> {
    content["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p[field]["name"].as_str())
        .collect()
}

/// A function-call turn follows a user turn and is answered by the next
/// content with as many function responses, names matching.
fn validate_pairing(contents: &[Value]) -> Result<(), String> {
    for (i, content) in contents.iter().enumerate() {
        let calls = names_of(content, "functionCall");
        let responses = names_of(content, "functionResponse");
        if !calls.is_empty() && (i == 0 || contents[i - 1]["role"] != "user") {
            return Err("Please ensure that function call turn comes immediately after a user turn or after a function response turn.".to_owned());
        }
        if !responses.is_empty() {
            let previous = if i == 0 {
                Vec::new()
            } else {
                names_of(&contents[i - 1], "functionCall")
            };
            if previous.is_empty() {
                return Err("Please ensure that function response turn comes immediately after a function call turn.".to_owned());
            }
        }
        if calls.is_empty() {
            continue;
        }
        let answered = contents
            .get(i + 1)
            .map(|c| names_of(c, "functionResponse"))
            .unwrap_or_default();
        if contents.get(i + 1).is_none() {
            continue; // the model's own last turn (prefill) is allowed
        }
        if answered.len() != calls.len() {
            return Err("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.".to_owned());
        }
        let (mut a, mut b) = (calls.clone(), answered.clone());
        a.sort_unstable();
        b.sort_unstable();
        if a != b {
            return Err(format!("fake Gemini: function response names {answered:?} do not match the function calls {calls:?} of contents[{i}]."));
        }
    }
    Ok(())
}

fn validate_system(system: &Value) -> Result<(), String> {
    let object = system
        .as_object()
        .ok_or("systemInstruction must be an object")?;
    unknown_fields(object, &["role", "parts"], "system_instruction")?;
    if let Some(role) = object.get("role") {
        if role != "system" && role != "user" {
            return Err("Please use a valid role: user, model.".to_owned());
        }
    }
    let parts = object
        .get("parts")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty())
        .ok_or(
            "* GenerateContentRequest.system_instruction.parts: contents.parts must not be empty.",
        )?;
    for (j, part) in parts.iter().enumerate() {
        validate_part(&format!("system_instruction.parts[{j}]"), part)?;
    }
    Ok(())
}

/// An `inlineData` image part as the API checks it.
fn check_inline_data(at: &str, inline: &Value) -> Result<(), String> {
    let object = inline
        .as_object()
        .ok_or(format!("{at}.inline_data must be an object"))?;
    unknown_fields(object, &["mimeType", "data"], &format!("{at}.inline_data"))?;
    let mime = object
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let data = object
        .get("data")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(bytes) = crate::support::images::decode(data) else {
        return Err(format!(
            "Invalid value at '{at}.inline_data.data' (TYPE_BYTES), Base64 decoding failed"
        ));
    };
    if !mime.starts_with("image/") && !mime.starts_with("audio/") && mime != "application/pdf" {
        return Err(format!("Unsupported MIME type: {mime}"));
    }
    if mime.starts_with("image/") && crate::support::images::kind(&bytes).is_none() {
        return Err("Unable to process input image. Please retry or report in https://developers.generativeai.google/guide/troubleshooting".to_owned());
    }
    Ok(())
}
