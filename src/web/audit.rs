//! The audit log: system events filtered by kind and time, newest first.

use super::auth::Session;
use super::layout::{self, pager, when, Chrome};
use super::{csrf, mask_text, offset, WebError, WebState, PER_PAGE};
use crate::store::EventFilter;
use axum::extract::{Query, State};
use axum::response::Html;
use axum::Extension;
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use maud::html;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub(crate) struct AuditQuery {
    page: Option<u32>,
    kind: Option<String>,
    /// `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM` (UTC), as a date input sends it.
    since: Option<String>,
    until: Option<String>,
}

/// A date alone means its start, or with `end` the start of the next day
/// (`until` a date includes that day).
fn parse_time(raw: Option<&str>, var: &str, end: bool) -> Result<Option<DateTime<Utc>>, WebError> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    let parsed = NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M")
        .ok()
        .or_else(|| {
            NaiveDate::parse_from_str(raw, "%Y-%m-%d")
                .ok()
                .and_then(|d| if end { d.succ_opt() } else { Some(d) })
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        });
    match parsed {
        Some(t) => Ok(Some(t.and_utc())),
        None => Err(WebError::BadRequest(format!(
            "{var} must be YYYY-MM-DD or YYYY-MM-DDTHH:MM"
        ))),
    }
}

pub(crate) async fn page(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Query(q): Query<AuditQuery>,
) -> Result<Html<String>, WebError> {
    let (page, skip) = offset(q.page, PER_PAGE)?;
    let kind = q.kind.clone().filter(|k| !k.trim().is_empty());
    if kind.as_ref().is_some_and(|k| k.len() > 100) {
        return Err(WebError::BadRequest("kind is too long".into()));
    }
    let filter = EventFilter {
        kind: kind.clone(),
        since: parse_time(q.since.as_deref(), "since", false)?,
        until: parse_time(q.until.as_deref(), "until", true)?,
    };
    let store = state.store();
    let events = store.events_page(&filter, PER_PAGE, skip).await?;
    let kinds = store.event_kinds().await?;
    let mut families: Vec<String> = kinds
        .iter()
        .filter_map(|k| k.split_once('.').map(|(f, _)| f.to_owned()))
        .collect();
    families.dedup();
    let chrome = Chrome {
        csrf: csrf::token(&state.auth, &session.nonce),
        flash: None,
        refresh: None,
    };
    let (since, until) = (
        q.since.clone().unwrap_or_default(),
        q.until.clone().unwrap_or_default(),
    );
    let kind_s = kind.clone().unwrap_or_default();
    let body = html! {
        form.filters method="get" action="/audit" {
            label for="kind" { "kind" }
            select #kind name="kind" {
                option value="" { "all" }
                @for f in &families {
                    option value=(f) selected[kind.as_deref() == Some(f.as_str())] { (f) ".*" }
                }
                @for k in &kinds {
                    option value=(k) selected[kind.as_deref() == Some(k.as_str())] { (k) }
                }
            }
            label for="since" { "since (UTC)" }
            input #since type="date" name="since" value=(since);
            label for="until" { "until" }
            input #until type="date" name="until" value=(until);
            button type="submit" { "Filter" }
        }
        table.audit {
            thead { tr { th { "#" } th { "time (UTC)" } th { "kind" } th { "detail" } } }
            tbody {
                @for e in &events.items {
                    tr {
                        td { (e.id) }
                        td { (when(e.at)) }
                        td { code { (e.kind) } }
                        td { code { (mask_text(&e.detail.to_string())) } }
                    }
                }
            }
        }
        @if events.items.is_empty() { p.empty { "No event matches." } }
        (pager("page", page, events.more, &[("kind", &kind_s), ("since", &since), ("until", &until)]))
    };
    Ok(layout::respond(layout::page(
        "Audit log",
        "/audit",
        &chrome,
        body,
    )))
}
