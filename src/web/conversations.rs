//! Conversations: sessions by last activity, and one session's history —
//! messages as safe Markdown, tool calls with their (masked) arguments and
//! results, its approvals and the compaction summary.

use super::auth::Session;
use super::layout::{self, pager, when, Chrome};
use super::{csrf, mask_json, mask_text, offset, render_markdown, WebError, WebState, PER_PAGE};
use crate::llm::Role;
use crate::store::{HistoryRow, SessionFilter, SessionId, SessionKey};
use axum::extract::{Path, Query, State};
use axum::response::Html;
use axum::Extension;
use maud::{html, Markup};
use serde::Deserialize;

/// Messages on a page of a conversation unless `?per=` asks (up to [`MAX_PER`]).
const MESSAGES_PER_PAGE: u32 = 100;
const MAX_PER: u32 = 500;

#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    page: Option<u32>,
    platform: Option<String>,
    /// Numbers, or empty (the form sends empty fields).
    chat: Option<String>,
    user: Option<String>,
}

/// An optional numeric filter field: empty is none, anything else a number.
fn number(raw: Option<&str>, name: &str) -> Result<Option<i64>, WebError> {
    match raw.map(str::trim).filter(|r| !r.is_empty()) {
        None => Ok(None),
        Some(r) => r
            .parse()
            .map(Some)
            .map_err(|_| WebError::BadRequest(format!("{name} must be a number"))),
    }
}

pub(crate) async fn list(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Query(q): Query<ListQuery>,
) -> Result<Html<String>, WebError> {
    let (page, skip) = offset(q.page, PER_PAGE)?;
    let platform = q.platform.as_deref().filter(|p| !p.is_empty());
    let filter = SessionFilter {
        platform: platform.map(str::to_owned),
        chat: number(q.chat.as_deref(), "chat")?,
        user: number(q.user.as_deref(), "user")?,
    };
    let sessions = state.store().sessions_page(&filter, PER_PAGE, skip).await?;
    let (chat_s, user_s) = (
        filter.chat.map(|c| c.to_string()).unwrap_or_default(),
        filter.user.map(|u| u.to_string()).unwrap_or_default(),
    );
    let chrome = Chrome {
        csrf: csrf::token(&state.auth, &session.nonce),
        flash: None,
        refresh: None,
    };
    let body = html! {
        form.filters method="get" action="/conversations" {
            label for="platform" { "platform" }
            select #platform name="platform" {
                option value="" { "all" }
                @for p in ["telegram", "discord", "console"] {
                    option value=(p) selected[platform == Some(p)] { (p) }
                }
            }
            label for="chat" { "chat" }
            input #chat type="text" name="chat" inputmode="numeric" value=(chat_s) size="14";
            label for="user" { "user" }
            input #user type="text" name="user" inputmode="numeric" value=(user_s) size="14";
            button type="submit" { "Filter" }
        }
        table {
            thead { tr { th { "session" } th { "platform" } th { "chat" } th { "user" } th { "messages" } th { "last activity" } } }
            tbody {
                @for s in &sessions.items {
                    tr {
                        td { a href={ "/conversations/" (s.id) } { code { (s.id.short()) } } }
                        td { (s.key.platform.as_str()) }
                        td { (chat(&s.key)) }
                        td { (s.name.as_deref().unwrap_or("")) " " span.muted { (s.key.user.0) } }
                        td { (s.messages) }
                        td { (when(s.updated_at)) }
                    }
                }
            }
        }
        @if sessions.items.is_empty() { p.empty { "No conversation on this page." } }
        (pager("page", page, sessions.more, &[("platform", platform.unwrap_or("")), ("chat", &chat_s), ("user", &user_s)]))
    };
    Ok(layout::respond(layout::page(
        "Conversations",
        "/conversations",
        &chrome,
        body,
    )))
}

fn chat(key: &SessionKey) -> String {
    match key.thread {
        Some(t) => format!("{} / thread {}", key.chat.0, t.0),
        None => key.chat.0.to_string(),
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct ShowQuery {
    page: Option<u32>,
    per: Option<u32>,
}

pub(crate) async fn show(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Path(id): Path<SessionId>,
    Query(q): Query<ShowQuery>,
) -> Result<Html<String>, WebError> {
    let per = q.per.unwrap_or(MESSAGES_PER_PAGE);
    if per == 0 || per > MAX_PER {
        return Err(WebError::BadRequest(format!(
            "per must be between 1 and {MAX_PER}"
        )));
    }
    let (page, skip) = offset(q.page, per)?;
    let store = state.store();
    let Some(row) = store.session_row(&id).await? else {
        return Err(WebError::NotFound);
    };
    let history = store.history_page(&id, per, skip).await?;
    let approvals = store.session_approvals(&id, PER_PAGE).await?;
    let summary = store.sessions().state(&id).await?.summary;
    let plan = store.plans().of_session(&id).await?;
    let chrome = Chrome {
        csrf: csrf::token(&state.auth, &session.nonce),
        flash: None,
        refresh: None,
    };
    let title = format!(
        "{} chat {} · {}",
        row.key.platform.as_str(),
        chat(&row.key),
        row.name
            .clone()
            .unwrap_or_else(|| format!("user {}", row.key.user.0))
    );
    let per_s = per.to_string();
    let body = html! {
        p.muted { "session " code { (row.id) } " · " (row.messages) " messages · last activity " (when(row.updated_at)) }
        @if let Some(summary) = &summary {
            details.compaction {
                summary { "Compaction summary (stands for the compacted messages)" }
                div.md { (render_markdown(&mask_text(summary))) }
            }
        }
        @if let Some(plan) = &plan { (super::plan_table::section(plan)) }
        (pager("page", page, history.more, &[("per", &per_s)]))
        ol.history {
            @for m in &history.items { (message(m)) }
        }
        (pager("page", page, history.more, &[("per", &per_s)]))
        section #approvals {
            h2 { "Approvals in this conversation" }
            @if approvals.is_empty() { p.empty { "None." } }
            table {
                thead { tr { th { "approval" } th { "tool" } th { "arguments" } th { "status" } th { "decided by" } th { "asked" } } }
                tbody {
                    @for a in &approvals {
                        tr {
                            td { code { (a.id.short()) } }
                            td { (a.tool_display) }
                            td { pre { (mask_json(&a.arguments)) } }
                            td { span class={ "status " (a.status.as_str()) } { (a.status.as_str()) } }
                            td { (a.decided_by_name.as_deref().unwrap_or("—")) }
                            td { (when(a.created_at)) }
                        }
                    }
                }
            }
        }
    };
    Ok(layout::respond(layout::page(
        &title,
        "/conversations",
        &chrome,
        body,
    )))
}

/// One history entry.
fn message(row: &HistoryRow) -> Markup {
    let m = &row.message;
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    html! {
        li class={ "msg " (role) @if row.archived { " archived" } } id={ "m" (row.id) } {
            div.meta {
                strong { (role) } " · " (when(row.at))
                @if row.archived { " · compacted" }
                @if let Some(call) = &m.tool_call_id { " · result of " code { (call) } }
            }
            @match m.role {
                Role::Tool => { pre.result { (mask_text(&m.content)) } }
                _ => { @if !m.content.is_empty() { div.md { (render_markdown(&mask_text(&m.content))) } } }
            }
            @for call in &m.tool_calls {
                div.call {
                    "→ " strong { (call.name) } " " code { (call.id) }
                    pre.arguments { (mask_json(&call.arguments)) }
                }
            }
            @if !m.images.is_empty() { p.muted { (m.images.len()) " image(s)" } }
        }
    }
}
