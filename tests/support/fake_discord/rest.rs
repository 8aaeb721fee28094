//! The fake's REST API under `/api/v10`: auth, 429 injection, Discord's rate
//! limits and content limits, messages, typing, interaction callbacks and
//! webhook followups.

use super::events::attach_reference;
use super::limits::too_many;
use super::{
    bot_user_json, id_eq, message_json, timestamp, Call, Callback, Followup, Inner, Shared,
};
use super::{APP_ID, BOT_ID, GUILD_ID, TOKEN};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) type Answer = (u16, Value, Vec<(&'static str, String)>);

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(
            "/attachments/{channel}/{attachment}/{filename}",
            axum::routing::get(super::cdn::serve),
        )
        .fallback(handle)
        .with_state(shared)
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Rate limits count arrivals, before any queueing on the fake's lock.
    let arrived = Instant::now();
    let path = uri
        .path()
        .strip_prefix("/api/v10")
        .unwrap_or(uri.path())
        .to_owned();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut upload = None;
    let parsed: Option<Value> = if super::uploads::is_multipart(content_type) {
        let channel = path
            .strip_prefix("/channels/")
            .and_then(|rest| rest.split('/').next())
            .and_then(|id| id.parse::<u64>().ok());
        let limit = channel.map_or(super::uploads::MAX_UPLOAD_BYTES, |c| {
            shared.lock().upload_limit(c)
        });
        match super::uploads::read(content_type, &body, limit) {
            Ok(form) => {
                upload = Some(form.files);
                Some(form.payload)
            }
            Err((status, answer, _)) => {
                return (
                    StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
                    axum::Json(answer),
                )
                    .into_response();
            }
        }
    } else if body.is_empty() {
        Some(Value::Null)
    } else {
        serde_json::from_slice(&body).ok()
    };
    let body = parsed
        .clone()
        .unwrap_or_else(|| json!({ "_unparsable": String::from_utf8_lossy(&body) }));
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bot {TOKEN}"));
    let request = Request {
        method: &method,
        path: &path,
        query: uri.query().unwrap_or_default(),
        body: parsed.as_ref(),
        authorized,
        arrived,
    };
    let (status, answer, extra_headers, late) = answer(&shared, &request, body);
    if let Some(files) = upload {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        if let (200, "POST", ["channels", channel, "messages"]) =
            (status, method.as_str(), segments.as_slice())
        {
            let channel = channel.parse::<u64>().unwrap_or_default();
            super::uploads::record(&mut shared.lock(), channel, &answer, files);
        }
    }
    if let Some(late) = late {
        tokio::time::sleep(late).await;
    }
    let mut response = if status == 204 {
        StatusCode::NO_CONTENT.into_response()
    } else {
        (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            axum::Json(answer),
        )
            .into_response()
    };
    for (name, value) in extra_headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// Routes and records one request under the lock; also says how long its
/// answer is held back (a slow interaction callback).
fn answer(
    shared: &Shared,
    request: &Request<'_>,
    body: Value,
) -> (u16, Value, Vec<(&'static str, String)>, Option<Duration>) {
    let mut inner = shared.lock();
    let (status, answer, extra_headers) = route(shared, &mut inner, request);
    if status == 429 {
        inner.rate_limited += 1;
    }
    let segments: Vec<&str> = request.path.trim_start_matches('/').split('/').collect();
    let late = match segments.as_slice() {
        ["interactions", _, _, "callback"] => inner.slow_callbacks.pop_front(),
        _ => None,
    };
    inner.calls.push(Call {
        method: request.method.to_string(),
        path: request.path.to_owned(),
        query: request.query.to_owned(),
        body,
        status,
        at: Instant::now(),
    });
    (status, answer, extra_headers, late)
}

pub(crate) fn error(status: u16, code: u64, message: &str) -> Answer {
    (
        status,
        json!({ "message": message, "code": code }),
        Vec::new(),
    )
}

fn ok(value: Value) -> Answer {
    (200, value, Vec::new())
}

/// An injected 429 (`retry_after` seconds).
fn injected_429(retry_after: f64, global: bool) -> Answer {
    too_many(
        Duration::from_secs_f64(retry_after.max(0.0)),
        global,
        Vec::new(),
    )
}

/// One request as the router needs it; `body` is `None` when it is not JSON.
struct Request<'a> {
    method: &'a Method,
    path: &'a str,
    query: &'a str,
    body: Option<&'a Value>,
    authorized: bool,
    arrived: Instant,
}

fn route(shared: &Shared, inner: &mut Inner, request: &Request<'_>) -> Answer {
    let segments: Vec<&str> = request.path.trim_start_matches('/').split('/').collect();
    // Interaction callbacks and webhooks authenticate by their token in the path
    // and are not subject to the bot's global limit.
    let token_routes = matches!(segments.first(), Some(&"interactions") | Some(&"webhooks"));
    if !token_routes {
        if !request.authorized {
            return error(401, 0, "401: Unauthorized");
        }
        if let Some(retry_after) = inner.global_429s.pop_front() {
            return injected_429(retry_after, true);
        }
        if let Some(limits) = inner.limits.as_mut() {
            if let Err(refused) = limits.global(request.arrived) {
                return refused;
            }
        }
    }
    let mut bucket_headers = Vec::new();
    let message_route = matches!(
        (request.method.as_str(), segments.as_slice()),
        ("POST", ["channels", _, "messages"]) | ("PATCH", ["channels", _, "messages", _])
    );
    if let ["channels", channel, "messages", ..] = segments.as_slice() {
        if let Ok(channel) = channel.parse::<u64>() {
            if let Some(retry_after) = inner
                .channel_429s
                .get_mut(&channel)
                .and_then(|q| q.pop_front())
            {
                return injected_429(retry_after, false);
            }
            if let Some(limits) = inner.limits.as_mut().filter(|_| message_route) {
                match limits.channel(channel, request.arrived) {
                    Ok(headers) => bucket_headers = headers,
                    Err(refused) => return refused,
                }
            }
        }
    }
    let body = match request.body {
        Some(body) => body,
        None if matches!(request.method.as_str(), "POST" | "PATCH" | "PUT") => {
            return error(400, 50109, "The request body contains invalid JSON.");
        }
        None => &Value::Null,
    };
    if let ("GET", ["channels", channel, "messages"]) =
        (request.method.as_str(), segments.as_slice())
    {
        return super::history::messages(inner, channel, request.query);
    }
    let (status, answer, mut headers) = dispatch(shared, inner, request.method, &segments, body);
    headers.extend(bucket_headers);
    (status, answer, headers)
}

fn dispatch(
    shared: &Shared,
    inner: &mut Inner,
    method: &Method,
    segments: &[&str],
    body: &Value,
) -> Answer {
    let id = |s: &str| s.parse::<u64>().ok();
    match (method.as_str(), segments) {
        ("GET", ["gateway"]) => ok(json!({ "url": shared.gateway_url })),
        ("GET", ["gateway", "bot"]) => ok(json!({
            "url": shared.gateway_url,
            "shards": shared.options.shards,
            "session_start_limit": {
                "total": 1000,
                "remaining": 999,
                "reset_after": 86_400_000,
                "max_concurrency": 1,
            },
        })),
        ("GET", ["users", "@me"]) => ok(bot_user_json()),
        ("GET", ["oauth2", "applications", "@me"]) => ok(json!({
            "id": APP_ID.to_string(), "name": "switchboard", "icon": null, "description": "",
            "bot_public": false, "bot_require_code_grant": false, "verify_key": "00", "flags": 0,
        })),
        ("GET", ["channels", channel]) => {
            if let Some(left) = id(channel).and_then(|c| inner.lookup_failures.get_mut(&c)) {
                if *left > 0 {
                    *left -= 1;
                    return error(500, 0, "500: Internal Server Error");
                }
            }
            match id(channel).and_then(|c| inner.channels.get(&c).map(|ch| (c, *ch))) {
                Some((c, ch)) => {
                    let name = format!("channel-{c}");
                    let mut json = json!({ "id": c.to_string(), "type": ch.kind, "name": name });
                    if let Some(guild) = ch.guild {
                        json["guild_id"] = json!(guild.to_string());
                    }
                    if let Some(parent) = ch.parent {
                        json["parent_id"] = json!(parent.to_string());
                    }
                    ok(json)
                }
                None => error(404, 10003, "Unknown Channel"),
            }
        }
        ("GET", ["guilds", guild, "members", user]) => super::guilds::member(inner, guild, user),
        ("GET", ["guilds", guild]) => super::guilds::guild(inner, guild),
        ("POST", ["channels", channel, "messages"]) => match id(channel) {
            Some(c) if inner.channels.contains_key(&c) => create_message(inner, c, body),
            _ => error(404, 10003, "Unknown Channel"),
        },
        ("GET", ["channels", channel, "messages", message]) => {
            let stored = id(message).and_then(|m| inner.messages.get(&m));
            match stored {
                Some(msg) if msg["channel_id"].as_str() == Some(*channel) => ok(msg.clone()),
                _ => error(404, 10008, "Unknown Message"),
            }
        }
        ("PATCH", ["channels", channel, "messages", message]) => match (id(channel), id(message)) {
            (Some(c), Some(m)) => edit_message(inner, c, m, body),
            _ => error(404, 10008, "Unknown Message"),
        },
        (
            m @ ("PUT" | "DELETE"),
            ["channels", channel, "messages", message, "reactions", emoji, "@me"],
        ) => super::reactions::own(shared, inner, m == "PUT", (channel, message, emoji)),
        ("POST", ["channels", channel, "typing"]) => match id(channel) {
            Some(c) if inner.channels.contains_key(&c) => (204, Value::Null, Vec::new()),
            _ => error(404, 10003, "Unknown Channel"),
        },
        ("PUT", ["applications", app, "commands"]) => {
            if *app != APP_ID.to_string() {
                return error(403, 50001, "Missing Access");
            }
            if let Some(retry_after) = inner.command_429s.pop_front() {
                return injected_429(retry_after, false);
            }
            match commands(body) {
                Ok(list) => {
                    let registered: Vec<Value> = list
                        .into_iter()
                        .map(|mut c| {
                            c["id"] = json!(inner.next_id().to_string());
                            c["application_id"] = json!(APP_ID.to_string());
                            c["version"] = json!("1");
                            c
                        })
                        .collect();
                    inner.commands = registered.clone();
                    ok(Value::Array(registered))
                }
                Err(refused) => refused,
            }
        }
        ("POST", ["interactions", interaction, token, "callback"]) => match id(interaction) {
            Some(i) => callback(shared, inner, i, token, body),
            None => error(404, 10062, "Unknown interaction"),
        },
        ("POST", ["webhooks", app, token]) => webhook(inner, app, token, body, false),
        ("PATCH", ["webhooks", app, token, "messages", "@original"]) => {
            webhook(inner, app, token, body, true)
        }
        _ => error(404, 0, "404: Not Found"),
    }
}

/// Discord's checks on a bulk overwrite of global commands: at most 100
/// chat-input commands with unique names of 1–32 lowercase letters, digits,
/// `-` or `_`, descriptions of 1–100 characters, at most 25 options each.
fn commands(body: &Value) -> Result<Vec<Value>, Answer> {
    let invalid = |at: String, message: &str| {
        Err((
            400,
            json!({
                "message": "Invalid Form Body",
                "code": 50035,
                "errors": { at: { "_errors": [{ "code": "BASE_TYPE_INVALID", "message": message }] } },
            }),
            Vec::new(),
        ))
    };
    let Some(list) = body.as_array() else {
        return invalid("_root".into(), "Must be an array.");
    };
    if list.len() > 100 {
        return invalid("_root".into(), "Must be 100 or fewer in length.");
    }
    let named = |name: &Value| {
        name.as_str().is_some_and(|n| {
            (1..=32).contains(&n.chars().count())
                && n.chars()
                    .all(|c| c == '-' || c == '_' || (c.is_alphanumeric() && !c.is_uppercase()))
        })
    };
    let described = |d: &Value| {
        d.as_str()
            .is_some_and(|d| (1..=100).contains(&d.chars().count()))
    };
    let mut names = std::collections::HashSet::new();
    for (i, command) in list.iter().enumerate() {
        if !named(&command["name"]) {
            return invalid(format!("{i}.name"), "Command name is invalid");
        }
        if !names.insert(command["name"].as_str().unwrap_or_default()) {
            return invalid(
                format!("{i}.name"),
                "Application command names must be unique",
            );
        }
        if !matches!(command["type"].as_u64(), None | Some(1)) {
            return invalid(
                format!("{i}.type"),
                "Only chat input commands are served by the fake",
            );
        }
        if !described(&command["description"]) {
            return invalid(
                format!("{i}.description"),
                "Must be between 1 and 100 in length.",
            );
        }
        let options = command["options"].as_array().cloned().unwrap_or_default();
        if options.len() > 25 {
            return invalid(format!("{i}.options"), "Must be 25 or fewer in length.");
        }
        for (j, option) in options.iter().enumerate() {
            if !named(&option["name"]) || !described(&option["description"]) {
                return invalid(
                    format!("{i}.options.{j}"),
                    "Option name or description is invalid",
                );
            }
            if !option["type"]
                .as_u64()
                .is_some_and(|t| (1..=11).contains(&t))
            {
                return invalid(
                    format!("{i}.options.{j}.type"),
                    "Value is not a valid option type",
                );
            }
        }
    }
    Ok(list.clone())
}

/// Discord's checks on message content and components.
fn validate(body: &Value, require_content: bool) -> Result<(), Answer> {
    let invalid = |field: &str, message: &str| {
        Err((
            400,
            json!({
                "message": "Invalid Form Body",
                "code": 50035,
                "errors": {
                    field: { "_errors": [{ "code": "BASE_TYPE_INVALID", "message": message }] },
                },
            }),
            Vec::new(),
        ))
    };
    let content = body["content"].as_str().unwrap_or("");
    if content.chars().count() > 2000 {
        return invalid("content", "Must be 2000 or fewer in length.");
    }
    let rows = match &body["components"] {
        Value::Null => Vec::new(),
        Value::Array(rows) => rows.clone(),
        _ => return invalid("components", "Must be an array."),
    };
    if rows.len() > 5 {
        return invalid("components", "Must be 5 or fewer in length.");
    }
    let mut ids = HashSet::new();
    for row in &rows {
        let buttons = row["components"].as_array().cloned().unwrap_or_default();
        if row["type"] != 1 || buttons.is_empty() || buttons.len() > 5 {
            return invalid("components", "An action row holds 1 to 5 components.");
        }
        // A select menu takes a row of its own.
        if buttons.iter().any(|c| c["type"] == 3) {
            if buttons.len() != 1 {
                return invalid("components", "A select menu is alone in its action row.");
            }
            if let Err((field, message)) = super::components::select(&buttons[0], &mut ids) {
                return invalid(field, message);
            }
            continue;
        }
        for button in buttons {
            if button["type"] != 2 {
                return invalid(
                    "components",
                    "Only buttons and string selects are supported here.",
                );
            }
            let style = button["style"].as_u64().unwrap_or(0);
            let label = button["label"].as_str().unwrap_or("");
            if label.chars().count() > 80 {
                return invalid("components", "Button labels are 80 or fewer in length.");
            }
            match (style, button["custom_id"].as_str(), button["url"].as_str()) {
                (1..=4, Some(id), None) if !id.is_empty() && id.chars().count() <= 100 => {
                    if !ids.insert(id.to_owned()) {
                        return invalid("components", "Component custom id cannot be duplicated");
                    }
                }
                (5, None, Some(_)) => {}
                _ => {
                    return invalid(
                        "components",
                        "custom_id must be 1 to 100 characters (style 1-4).",
                    )
                }
            }
        }
    }
    // Discord needs one of content, components or files (among others).
    // Uploaded files are the `attachments` entries `uploads::read` wrote
    // (with their size); a client's own entries upload nothing.
    let files = body["attachments"]
        .as_array()
        .is_some_and(|a| a.iter().any(|f| f["size"].is_u64()));
    if require_content && content.trim().is_empty() && rows.is_empty() && !files {
        return Err(error(400, 50006, "Cannot send an empty message"));
    }
    Ok(())
}

fn create_message(inner: &mut Inner, channel: u64, body: &Value) -> Answer {
    if let Err(e) = validate(body, true) {
        return e;
    }
    let guild = inner.channels.get(&channel).and_then(|c| c.guild);
    let id = inner.next_id();
    let reply_to = body["message_reference"]["message_id"]
        .as_str()
        .and_then(|s| s.parse::<u64>().ok())
        .or_else(|| body["message_reference"]["message_id"].as_u64());
    let mut msg = message_json(
        id,
        channel,
        guild,
        bot_user_json(),
        body["content"].as_str().unwrap_or(""),
        json!(body["components"].as_array().cloned().unwrap_or_default()),
    );
    // A reference to a message that does not exist fails the call unless
    // `fail_if_not_exists` is false; then the message is sent as no reply.
    let reply_to = match reply_to {
        Some(r) if !inner.messages.contains_key(&r) => {
            if body["message_reference"]["fail_if_not_exists"] != json!(false) {
                return (
                    400,
                    json!({
                        "message": "Invalid Form Body",
                        "code": 50035,
                        "errors": { "message_reference": { "_errors": [{ "code": "REPLIES_UNKNOWN_MESSAGE", "message": "Unknown message" }] } },
                    }),
                    Vec::new(),
                );
            }
            None
        }
        other => other,
    };
    if reply_to.is_some() {
        msg["type"] = json!(19);
    }
    if let Some(flags) = body["flags"].as_u64() {
        msg["flags"] = json!(flags);
    }
    if let Some(reply_to) = reply_to {
        attach_reference(inner, &mut msg, channel, guild, reply_to);
    }
    inner.messages.insert(id, msg.clone());
    inner.order.push(id);
    ok(msg)
}

fn apply_edit(msg: &mut Value, body: &Value) {
    if let Some(content) = body.get("content").and_then(Value::as_str) {
        msg["content"] = json!(content);
    }
    if let Some(components) = body.get("components").filter(|c| c.is_array()) {
        msg["components"] = components.clone();
    }
    msg["edited_timestamp"] = json!(timestamp());
}

fn edit_message(inner: &mut Inner, channel: u64, message: u64, body: &Value) -> Answer {
    if let Err(e) = validate(body, false) {
        return e;
    }
    let refused = inner.refused_edits.contains(&message);
    let Some(msg) = inner.messages.get_mut(&message) else {
        return error(404, 10008, "Unknown Message");
    };
    if !id_eq(&msg["channel_id"], channel) {
        return error(404, 10008, "Unknown Message");
    }
    if !id_eq(&msg["author"]["id"], BOT_ID) {
        return error(403, 50005, "Cannot edit a message authored by another user");
    }
    if refused {
        return error(403, 50013, "Missing Permissions");
    }
    apply_edit(msg, body);
    ok(msg.clone())
}

fn callback(
    shared: &Shared,
    inner: &mut Inner,
    interaction: u64,
    token: &str,
    body: &Value,
) -> Answer {
    let Some(record) = inner.interactions.get(&interaction).cloned() else {
        return error(404, 10062, "Unknown interaction");
    };
    if record.token != token {
        return error(401, 50027, "Invalid Webhook Token");
    }
    if record.acked.is_some() {
        return error(400, 40060, "Interaction has already been acknowledged.");
    }
    // Discord's 3 s run from the interaction's creation.
    if record.created.elapsed() > shared.options.interaction_expiry {
        return error(404, 10062, "Unknown interaction");
    }
    let kind = body["type"].as_u64().unwrap_or(0);
    let data = body["data"].clone();
    if let Some(refused) = wrong_callback_type(&record, kind) {
        return refused;
    }
    match kind {
        4 => {
            if let Err(e) = validate(&data, true) {
                return e;
            }
            let ephemeral = data["flags"].as_u64().is_some_and(|f| f & 64 != 0);
            if !ephemeral {
                let _ = create_message(inner, record.channel, &data);
            }
        }
        5 | 6 => {}
        9 => {
            if let Err((field, message)) = super::components::modal(&data) {
                return (
                    400,
                    json!({
                        "message": "Invalid Form Body",
                        "code": 50035,
                        "errors": { field: { "_errors": [{ "code": "BASE_TYPE_INVALID", "message": message }] } },
                    }),
                    Vec::new(),
                );
            }
            if let Some(entry) = inner.interactions.get_mut(&interaction) {
                entry.modal = Some(data.clone());
            }
        }
        7 => {
            if let Err(e) = validate(&data, false) {
                return e;
            }
            if let Some(msg) = inner.messages.get_mut(&record.message) {
                apply_edit(msg, &data);
            }
        }
        _ => {
            return (
                400,
                json!({
                    "message": "Invalid Form Body",
                    "code": 50035,
                    "errors": { "type": "invalid callback type" },
                }),
                Vec::new(),
            )
        }
    }
    if let Some(entry) = inner.interactions.get_mut(&interaction) {
        entry.acked = Some(kind);
    }
    inner.callbacks.push(Callback {
        interaction,
        kind,
        data,
    });
    (204, Value::Null, Vec::new())
}

/// Callback types an interaction of this kind cannot get: updating "the
/// message" only exists where there is one (a component's, or that of the
/// component whose modal was sent); a modal only answers a command or a
/// component, never a modal submit.
fn wrong_callback_type(record: &super::Interaction, kind: u64) -> Option<Answer> {
    let refused = match (record.kind, kind) {
        (super::COMMAND, 6 | 7) => "invalid callback type for an application command",
        (super::MODAL_SUBMIT, 6 | 7) if record.message == 0 => {
            "a modal submit without a message cannot update one"
        }
        (super::MODAL_SUBMIT, 9) => "a modal cannot answer a modal submit",
        _ => return None,
    };
    Some((
        400,
        json!({
            "message": "Interaction response type is not valid for this interaction",
            "code": 50035,
            "errors": { "type": refused },
        }),
        Vec::new(),
    ))
}

fn webhook(inner: &mut Inner, app: &str, token: &str, body: &Value, edit_original: bool) -> Answer {
    if app != APP_ID.to_string() {
        return error(404, 10002, "Unknown Application");
    }
    let Some((&interaction, record)) = inner.interactions.iter().find(|(_, r)| r.token == token)
    else {
        return error(404, 10015, "Unknown Webhook");
    };
    let record = record.clone();
    if record.acked.is_none() {
        return error(404, 10015, "Unknown Webhook");
    }
    if let Err(e) = validate(body, !edit_original) {
        return e;
    }
    inner.followups.push(Followup {
        interaction,
        edit_original,
        body: body.clone(),
    });
    if edit_original {
        // After a deferred update, @original is the message carrying the button.
        let Some(msg) = inner.messages.get_mut(&record.message) else {
            return error(404, 10008, "Unknown Message");
        };
        apply_edit(msg, body);
        return ok(msg.clone());
    }
    let id = inner.next_id();
    let guild = inner
        .channels
        .get(&record.channel)
        .and_then(|c| c.guild)
        .unwrap_or(GUILD_ID);
    let mut msg = message_json(
        id,
        record.channel,
        Some(guild),
        bot_user_json(),
        body["content"].as_str().unwrap_or(""),
        json!([]),
    );
    msg["flags"] = json!(body["flags"].as_u64().unwrap_or(0));
    ok(msg)
}
