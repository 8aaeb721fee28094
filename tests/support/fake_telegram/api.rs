//! The Bot API methods of the fake: routing, the envelope, long polling with
//! `allowed_updates`, webhook rules, flood checks and message validation.

use super::{
    html, message_json, next_message_id, now_secs, Call, Entity, Inner, Shared, StoredMessage,
};
use super::{BOT_ID, BOT_USERNAME, NOT_MODIFIED};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

type ApiResult = Result<Value, ApiError>;

pub(super) struct ApiError {
    pub(super) code: u16,
    pub(super) description: String,
    pub(super) retry_after: Option<u32>,
    /// Set when the group was upgraded to a supergroup.
    pub(super) migrate_to_chat_id: Option<i64>,
}

pub(super) fn bad(description: impl Into<String>) -> ApiError {
    ApiError {
        code: 400,
        description: format!("Bad Request: {}", description.into()),
        retry_after: None,
        migrate_to_chat_id: None,
    }
}

fn envelope(result: &ApiResult) -> Response {
    match result {
        Ok(v) => (StatusCode::OK, Json(json!({"ok": true, "result": v}))).into_response(),
        Err(e) => {
            let mut body = json!({"ok": false, "error_code": e.code, "description": e.description});
            if let Some(n) = e.retry_after {
                body["parameters"] = json!({"retry_after": n});
            }
            if let Some(id) = e.migrate_to_chat_id {
                body["parameters"] = json!({"migrate_to_chat_id": id});
            }
            let status = StatusCode::from_u16(e.code).unwrap_or(StatusCode::BAD_REQUEST);
            (status, Json(body)).into_response()
        }
    }
}

pub(super) async fn handle(
    State(shared): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Flood limits count arrivals, before any queueing on the fake's lock.
    let arrived = tokio::time::Instant::now();
    let upload = super::documents::FileField::of_method(&method);
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let params = if upload.is_some() {
        super::documents::params(&content_type, &body)
    } else {
        parse_params(&headers, &body)
    };
    let token_ok = bot.strip_prefix("bot") == Some(shared.lock().token.as_str());
    let result = if !token_ok {
        Err(ApiError {
            code: 401,
            description: "Unauthorized".into(),
            retry_after: None,
            migrate_to_chat_id: None,
        })
    } else if let Some(kind) = upload {
        super::documents::send_file(&mut shared.lock(), kind, &content_type, &body, arrived)
    } else if method.eq_ignore_ascii_case("getupdates") {
        let fault = shared.lock().poll_fault;
        if let Some(fault) = fault {
            return super::poll_faults::answer(&shared, fault, params);
        }
        get_updates(&shared, &params).await
    } else {
        dispatch(&mut shared.lock(), &method, &params, arrived)
    };
    let mut inner = shared.lock();
    let (ok, error_code, description) = match &result {
        Ok(_) => (true, None, None),
        Err(e) => (false, Some(e.code), Some(e.description.clone())),
    };
    inner.calls.push(Call {
        method: method.clone(),
        params,
        ok,
        error_code,
        description,
        at: tokio::time::Instant::now(),
    });
    drop(inner);
    shared.call_recorded.notify_waiters();
    match &result {
        Ok(Value::Array(batch)) if method.eq_ignore_ascii_case("getupdates") => {
            updates_body(&shared.lock().unparsed, batch)
        }
        _ => envelope(&result),
    }
}

/// The `getUpdates` answer written out by hand, so updates queued with
/// [`super::FakeTelegram::push_unparsed`] go out as their exact text.
fn updates_body(unparsed: &std::collections::HashMap<i64, String>, batch: &[Value]) -> Response {
    let items: Vec<String> = batch
        .iter()
        .map(|u| {
            u["update_id"]
                .as_i64()
                .and_then(|id| unparsed.get(&id).cloned())
                .unwrap_or_else(|| u.to_string())
        })
        .collect();
    let body = format!("{{\"ok\":true,\"result\":[{}]}}", items.join(","));
    (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// JSON bodies, or the multipart forms teloxide uses for `SetWebhook`.
fn parse_params(headers: &HeaderMap, body: &[u8]) -> Value {
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(body);
    if let Some(boundary) = content_type.split("boundary=").nth(1) {
        let mut fields = serde_json::Map::new();
        for part in text.split(&format!("--{}", boundary.trim_matches('"'))) {
            let Some((head, value)) = part.split_once("\r\n\r\n") else {
                continue;
            };
            let Some(name) = head
                .split("name=\"")
                .nth(1)
                .and_then(|n| n.split('"').next())
            else {
                continue;
            };
            let value = value.trim_end_matches("\r\n");
            let parsed = serde_json::from_str(value).unwrap_or_else(|_| json!(value));
            fields.insert(name.to_owned(), parsed);
        }
        return Value::Object(fields);
    }
    if text.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(&text).unwrap_or(json!({}))
}

/// Update kinds Telegram leaves out when `allowed_updates` is empty.
const NOT_BY_DEFAULT: &[&str] = &["chat_member", "message_reaction", "message_reaction_count"];

/// Whether Telegram would create `update` for a bot that set `allowed` (empty:
/// every kind except [`NOT_BY_DEFAULT`]).
pub(super) fn allowed(allowed: &[String], update: &Value) -> bool {
    let Some(kind) = update
        .as_object()
        .and_then(|o| o.keys().find(|k| k.as_str() != "update_id"))
    else {
        return true;
    };
    if allowed.is_empty() {
        !NOT_BY_DEFAULT.contains(&kind.as_str())
    } else {
        allowed.iter().any(|a| a == kind)
    }
}

/// Remembers `allowed_updates` when given: it applies to updates created later.
fn set_allowed_updates(inner: &mut Inner, params: &Value) -> Result<(), ApiError> {
    match &params["allowed_updates"] {
        Value::Null => Ok(()),
        Value::Array(kinds) => {
            inner.allowed_updates = kinds
                .iter()
                .map(|k| k.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("can't parse allowed updates JSON array"))?;
            Ok(())
        }
        _ => Err(bad("can't parse allowed updates JSON array")),
    }
}

/// Telegram's webhook rules: an HTTPS URL on port 443, 80, 88 or 8443.
fn check_webhook_url(url: &str) -> Result<(), ApiError> {
    let parsed = url::Url::parse(url).map_err(|_| bad("bad webhook: invalid URL"))?;
    if parsed.scheme() != "https" {
        return Err(bad(
            "bad webhook: An HTTPS URL must be provided for webhook",
        ));
    }
    if !matches!(parsed.port_or_known_default(), Some(443 | 80 | 88 | 8443)) {
        return Err(bad(
            "bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443",
        ));
    }
    Ok(())
}

/// The first update id an offset asks for, as the Bot API server reads it
/// (`do_get_updates` and `TQueue::get` in tdlib/telegram-bot-api): a negative
/// offset counts from the queue's end; none, zero, or one more than 10 past
/// the next update id (an offset from before a restarted `update_id`
/// sequence) means "from the oldest update" and confirms nothing.
fn first_wanted(offset: Option<i64>, next_update_id: i64) -> Option<i64> {
    match offset? {
        o if o < 0 => Some(next_update_id + o),
        o if o == 0 || o > next_update_id + 10 => None,
        o => Some(o),
    }
}

async fn get_updates(shared: &Shared, params: &Value) -> ApiResult {
    set_allowed_updates(&mut shared.lock(), params)?;
    let offset = params["offset"].as_i64();
    let limit =
        usize::try_from(params["limit"].as_u64().unwrap_or(100).clamp(1, 100)).unwrap_or(100);
    let timeout = Duration::from_secs(params["timeout"].as_u64().unwrap_or(0));
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let notified = shared.updates_added.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let mut inner = shared.lock();
            if inner.webhook.is_some() {
                return Err(ApiError {
                    code: 409,
                    description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first".into(),
                    retry_after: None,
        migrate_to_chat_id: None,
                });
            }
            if let Some(from) = first_wanted(offset, inner.next_update_id) {
                // Confirming an offset forgets every older update.
                inner.updates.retain(|(id, _)| *id >= from);
            }
            let batch: Vec<Value> = inner
                .updates
                .iter()
                .take(limit)
                .map(|(_, u)| u.clone())
                .collect();
            if !batch.is_empty() || tokio::time::Instant::now() >= deadline {
                return Ok(Value::Array(batch));
            }
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return Ok(json!([]));
        }
    }
}

fn dispatch(inner: &mut Inner, method: &str, p: &Value, arrived: Instant) -> ApiResult {
    match method.to_ascii_lowercase().as_str() {
        "getme" => Ok(
            json!({"id": BOT_ID, "is_bot": true, "first_name": "Switchboard",
            "username": BOT_USERNAME, "can_join_groups": true,
            "can_read_all_group_messages": false, "supports_inline_queries": false,
            "can_connect_to_business": false, "has_main_web_app": false}),
        ),
        "getwebhookinfo" => {
            let url = inner
                .webhook
                .as_ref()
                .map_or(String::new(), |w| w.0.clone());
            Ok(json!({"url": url, "has_custom_certificate": false,
                "pending_update_count": inner.updates.len()}))
        }
        "deletewebhook" => {
            inner.webhook = None;
            if p["drop_pending_updates"].as_bool() == Some(true) {
                inner.updates.clear();
            }
            Ok(json!(true))
        }
        "setwebhook" => {
            let url = p["url"].as_str().unwrap_or_default().to_owned();
            if url.is_empty() {
                inner.webhook = None;
            } else {
                check_webhook_url(&url)?;
                set_allowed_updates(inner, p)?;
                let secret = p["secret_token"].as_str().map(str::to_owned);
                inner.webhook = Some((url, secret));
            }
            Ok(json!(true))
        }
        "setmycommands" => {
            inner.commands = bot_commands(p)?;
            Ok(json!(true))
        }
        "getmycommands" => Ok(Value::Array(
            inner
                .commands
                .iter()
                .map(|(c, d)| json!({"command": c, "description": d}))
                .collect(),
        )),
        "getfile" => super::files::get_file(inner, p),
        "sendmessage" => send_message(inner, p, arrived),
        "sendmessagedraft" => super::drafts::send_message_draft(inner, p, arrived),
        "editmessagetext" => edit_message_text(inner, p, arrived),
        "editmessagereplymarkup" => edit_reply_markup(inner, p, arrived),
        "answercallbackquery" => {
            let id = p["callback_query_id"].as_str().unwrap_or_default();
            if p["text"].as_str().is_some_and(|t| t.chars().count() > 200) {
                return Err(bad("MESSAGE_TOO_LONG"));
            }
            if inner.open_callbacks.remove(id) {
                Ok(json!(true))
            } else {
                Err(bad(
                    "query is too old and response timeout expired or query id is invalid",
                ))
            }
        }
        "setmessagereaction" => super::reactions::set_message_reaction(inner, p),
        "sendchataction" => {
            let chat = chat_id(p)?;
            not_migrated(inner, chat)?;
            if !inner.chats.contains_key(&chat) {
                return Err(bad("chat not found"));
            }
            Ok(json!(true))
        }
        _ => Err(ApiError {
            code: 404,
            description: "Not Found".into(),
            retry_after: None,
            migrate_to_chat_id: None,
        }),
    }
}

/// `setMyCommands`' rules: at most 100 commands, each named by 1–32 lowercase
/// letters, digits and underscores, with a description of 1–256 characters.
fn bot_commands(p: &Value) -> Result<Vec<(String, String)>, ApiError> {
    let list = p["commands"]
        .as_array()
        .ok_or_else(|| bad("can't parse commands JSON object"))?;
    if list.len() > 100 {
        return Err(bad("BOT_COMMANDS_TOO_MUCH"));
    }
    list.iter()
        .map(|c| {
            let (Some(command), Some(description)) =
                (c["command"].as_str(), c["description"].as_str())
            else {
                return Err(bad("can't parse BotCommand"));
            };
            let named = (1..=32).contains(&command.len())
                && command
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !named {
                return Err(bad("BOT_COMMAND_INVALID"));
            }
            if !(1..=256).contains(&description.chars().count()) {
                return Err(bad("BOT_COMMAND_DESCRIPTION_INVALID"));
            }
            Ok((command.to_owned(), description.to_owned()))
        })
        .collect()
}

pub(super) fn chat_id(p: &Value) -> Result<i64, ApiError> {
    p["chat_id"].as_i64().ok_or_else(|| bad("chat not found"))
}

/// A group upgraded to a supergroup takes no more messages or chat actions;
/// Telegram names the new chat.
pub(super) fn not_migrated(inner: &Inner, chat: i64) -> Result<(), ApiError> {
    match inner.migrated.get(&chat) {
        Some(&new) => Err(ApiError {
            migrate_to_chat_id: Some(new),
            ..bad("group chat was upgraded to a supergroup chat")
        }),
        None => Ok(()),
    }
}

/// Injected 429s first, then the published limits when enforced.
pub(super) fn flood_check(inner: &mut Inner, chat: i64, arrived: Instant) -> Result<(), ApiError> {
    let is_group = inner.chats.get(&chat).is_some_and(|c| c.is_group);
    paced(inner, chat, |limits| limits.check(chat, is_group, arrived))
}

/// Injected 429s for `chat` first, then `check` of the published limits
/// when enforced.
pub(super) fn paced(
    inner: &mut Inner,
    chat: i64,
    check: impl FnOnce(&mut super::limits::Limits) -> Result<(), (u32, &'static str)>,
) -> Result<(), ApiError> {
    let injected = inner
        .inject_429
        .get_mut(&chat)
        .and_then(VecDeque::pop_front);
    let enforced = match (injected, inner.limits.as_mut()) {
        (Some(n), _) => Some(n),
        (None, Some(limits)) => match check(limits) {
            Ok(()) => None,
            Err((n, which)) => {
                *inner.limit_hits.entry(which).or_default() += 1;
                Some(n)
            }
        },
        (None, None) => None,
    };
    match enforced {
        Some(n) => Err(ApiError {
            code: 429,
            description: format!("Too Many Requests: retry after {n}"),
            retry_after: Some(n),
            migrate_to_chat_id: None,
        }),
        None => Ok(()),
    }
}

/// Text after entity parsing, checked against Telegram's limits.
pub(super) fn parse_text(
    inner: &mut Inner,
    chat: i64,
    p: &Value,
) -> Result<(String, Vec<Entity>), ApiError> {
    let text = p["text"].as_str().unwrap_or_default();
    let is_html = p["parse_mode"]
        .as_str()
        .is_some_and(|m| m.eq_ignore_ascii_case("html"));
    if let Some(n) = inner
        .inject_parse_errors
        .get_mut(&chat)
        .filter(|n| **n > 0 && is_html)
    {
        *n -= 1;
        return Err(bad(
            "can't parse entities: Unsupported start tag \"injected\" at byte offset 0",
        ));
    }
    let parsed = match p["parse_mode"].as_str() {
        Some(mode) if mode.eq_ignore_ascii_case("html") => {
            html::parse(text).map_err(|e| bad(format!("can't parse entities: {e}")))?
        }
        Some(mode) => return Err(bad(format!("unsupported parse_mode {mode} in this fake"))),
        None => (text.to_owned(), Vec::new()),
    };
    if parsed.0.trim().is_empty() {
        return Err(bad("message text is empty"));
    }
    if parsed.0.encode_utf16().count() > 4096 {
        return Err(bad("message is too long"));
    }
    Ok(parsed)
}

fn check_markup(p: &Value) -> Result<Option<Value>, ApiError> {
    let markup = p.get("reply_markup").filter(|m| !m.is_null()).cloned();
    if let Some(m) = &markup {
        let rows = m["inline_keyboard"]
            .as_array()
            .ok_or_else(|| bad("can't parse reply keyboard markup JSON object"))?;
        for button in rows.iter().filter_map(Value::as_array).flatten() {
            let data = button["callback_data"].as_str().unwrap_or_default();
            if data.is_empty() || data.len() > 64 {
                return Err(bad("BUTTON_DATA_INVALID"));
            }
            if button["text"].as_str().is_none_or(str::is_empty) {
                return Err(bad("text buttons are unallowed in the inline keyboard"));
            }
        }
    }
    Ok(markup)
}

fn send_message(inner: &mut Inner, p: &Value, arrived: Instant) -> ApiResult {
    let chat = chat_id(p)?;
    not_migrated(inner, chat)?;
    let Some(known) = inner.chats.get(&chat) else {
        return Err(bad("chat not found"));
    };
    let chat_json = known.json.clone();
    let thread = p["message_thread_id"].as_i64();
    if let Some(t) = thread {
        if known.json["is_forum"] == json!(true) && !known.threads.contains(&t) {
            return Err(bad("message thread not found"));
        }
    }
    flood_check(inner, chat, arrived)?;
    let (text, entities) = parse_text(inner, chat, p)?;
    let markup = check_markup(p)?;
    let reply_to = p["reply_parameters"]["message_id"].as_i64();
    if let Some(r) = reply_to {
        let allow = p["reply_parameters"]["allow_sending_without_reply"].as_bool() == Some(true);
        if !inner.messages.contains_key(&(chat, r)) && !allow {
            return Err(bad("message to be replied not found"));
        }
    }
    let message_id = next_message_id(inner, chat);
    let stored = StoredMessage {
        chat_id: chat,
        message_id,
        thread_id: thread,
        from_bot: true,
        from_id: BOT_ID,
        text,
        entities,
        parse_mode: p["parse_mode"].as_str().map(str::to_owned),
        reply_markup: markup,
        reply_to,
        edits: 0,
        date: now_secs(),
    };
    let out = message_json(&stored, &chat_json);
    inner.messages.insert((chat, message_id), stored);
    Ok(out)
}

fn bot_message<'a>(
    inner: &'a mut Inner,
    p: &Value,
) -> Result<(&'a mut StoredMessage, Value), ApiError> {
    let chat = chat_id(p)?;
    let id = p["message_id"]
        .as_i64()
        .ok_or_else(|| bad("message identifier is not specified"))?;
    let chat_json = inner
        .chats
        .get(&chat)
        .map(|c| c.json.clone())
        .ok_or_else(|| bad("chat not found"))?;
    match inner.messages.get_mut(&(chat, id)) {
        Some(m) if m.from_bot => Ok((m, chat_json)),
        Some(_) => Err(bad("message can't be edited")),
        None => Err(bad("message to edit not found")),
    }
}

fn edit_message_text(inner: &mut Inner, p: &Value, arrived: Instant) -> ApiResult {
    let chat = chat_id(p)?;
    bot_message(inner, p)?;
    flood_check(inner, chat, arrived)?;
    let (text, entities) = parse_text(inner, chat, p)?;
    let markup = check_markup(p)?;
    let (m, chat_json) = bot_message(inner, p)?;
    if m.text == text && m.entities == entities && m.reply_markup == markup {
        return Err(bad(NOT_MODIFIED.trim_start_matches("Bad Request: ")));
    }
    m.text = text;
    m.entities = entities;
    m.parse_mode = p["parse_mode"].as_str().map(str::to_owned);
    m.reply_markup = markup;
    m.edits += 1;
    Ok(message_json(m, &chat_json))
}

fn edit_reply_markup(inner: &mut Inner, p: &Value, arrived: Instant) -> ApiResult {
    let chat = chat_id(p)?;
    bot_message(inner, p)?;
    flood_check(inner, chat, arrived)?;
    let markup = check_markup(p)?;
    let (m, chat_json) = bot_message(inner, p)?;
    if m.reply_markup == markup {
        return Err(bad(NOT_MODIFIED.trim_start_matches("Bad Request: ")));
    }
    m.reply_markup = markup;
    m.edits += 1;
    Ok(message_json(m, &chat_json))
}
