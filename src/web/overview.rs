//! The overview: platforms, processes, recent activity, what waits and runs.

use super::auth::Session;
use super::layout::{self, when, Chrome};
use super::{csrf, WebError, WebState};
use crate::store::{Activity, LiveCounts, ProcessRow};
use axum::extract::{Query, State};
use axum::response::Html;
use axum::Extension;
use maud::{html, Markup};
use serde::Deserialize;
use std::time::SystemTime;

#[derive(Debug, Deserialize)]
pub(crate) struct Flash {
    flash: Option<String>,
}

/// Running tasks and pending approvals shown here; the rest are on their pages.
const SHOWN: u32 = 10;

pub(crate) async fn page(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Query(q): Query<Flash>,
) -> Result<Html<String>, WebError> {
    let store = state.store();
    let now = chrono::Utc::now();
    let activity = store.activity(now).await?;
    let counts = store.live_counts().await?;
    let processes = store.live_processes().await?;
    let running = store.tasks_page(true, SHOWN, 0).await?;
    let pending = store.pending_page(now, SHOWN, 0).await?;
    let chrome = Chrome {
        csrf: csrf::token(&state.auth, &session.nonce),
        flash: layout::flash(q.flash.as_deref()),
        refresh: Some(5),
    };
    let body = html! {
        (platforms_section(&state))
        (numbers_section(&activity, &counts))
        section #pending data-live {
            h2 { a href="/approvals" { "Pending approvals" } }
            @if pending.items.is_empty() { p.empty { "None waiting." } }
            ul {
                @for a in &pending.items {
                    li { code { (a.tool_name) } " for " (a.requester_name) " — expires " (when(a.expires_at)) }
                }
            }
        }
        section #running data-live {
            h2 { a href="/tasks" { "Running tasks" } }
            @if running.items.is_empty() { p.empty { "Nothing running." } }
            @for t in &running.items { (super::tasks::progress(t)) }
        }
        (processes_section(&processes))
        (super::loaded::section(&state))
    };
    Ok(layout::respond(layout::page(
        "Overview", "/", &chrome, body,
    )))
}

/// Each platform's connection and its last error.
fn platforms_section(state: &WebState) -> Markup {
    html! {
        section #platforms data-live {
            h2 { "Platforms" }
            table {
                thead { tr { th { "platform" } th { "connection" } th { "last error" } } }
                tbody {
                    @for (platform, link) in state.operator.links() {
                        tr {
                            td { (platform.as_str()) }
                            td { span class={ "state " (link.state.as_str()) } { (link.state.as_str()) } }
                            td {
                                @match &link.last_error {
                                    Some((at, error)) => { (ago(*at)) ": " (super::mask_text(error)) }
                                    None => { "—" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Turns, messages and errors of the last hour and day, and what waits.
fn numbers_section(activity: &Activity, counts: &LiveCounts) -> Markup {
    html! {
        section #numbers data-live {
            h2 { "Activity" }
            dl.numbers {
                (number("turns, last hour", activity.turns_hour))
                (number("turns, last day", activity.turns_day))
                (number("messages, last hour", activity.messages_hour))
                (number("messages, last day", activity.messages_day))
                (number("errors, last day", activity.errors_day))
                (number("pending approvals", counts.pending_approvals))
                (number("running tasks", counts.running_tasks))
                (number("queued messages", counts.queued_messages))
            }
        }
    }
}

/// The processes sharing the database, as their heartbeats say.
fn processes_section(processes: &[ProcessRow]) -> Markup {
    html! {
        section #processes data-live {
            h2 { "Processes sharing the database" }
            table {
                thead { tr { th { "host" } th { "pid" } th { "version" } th { "console" } th { "started" } th { "last seen" } } }
                tbody {
                    @for p in processes {
                        tr {
                            td { (p.host) } td { (p.pid) } td { (p.version) }
                            td { (p.web.as_deref().unwrap_or("—")) }
                            td { (when(p.started_at)) } td { (when(p.seen_at)) }
                        }
                    }
                }
            }
        }
    }
}

fn number(label: &str, value: i64) -> Markup {
    html! { div { dt { (label) } dd { (value) } } }
}

fn ago(at: SystemTime) -> String {
    let secs = SystemTime::now()
        .duration_since(at)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    match secs {
        0..=119 => format!("{secs} s ago"),
        120..=7199 => format!("{} min ago", secs / 60),
        _ => format!("{} h ago", secs / 3600),
    }
}
