//! Tasks and schedules: running tasks with live progress bars, finished
//! ones with their results, active schedules; cancel either.

use super::auth::Session;
use super::csrf::{self, Form};
use super::layout::{self, button, pager, when, when_ms, Chrome};
use super::{mask_json, mask_text, offset, WebError, WebState, PER_PAGE};
use crate::domain::{ScheduleId, TaskId};
use crate::store::TaskRecord;
use axum::extract::{Path, Query, State};
use axum::response::{Html, Redirect};
use axum::Extension;
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize)]
pub(crate) struct TasksQuery {
    page: Option<u32>,
    history: Option<u32>,
    schedules: Option<u32>,
    flash: Option<String>,
}

/// Characters of a task's result shown in the history.
const RESULT_CHARS: usize = 600;

pub(crate) async fn page(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Query(q): Query<TasksQuery>,
) -> Result<Html<String>, WebError> {
    let (page, skip) = offset(q.page, PER_PAGE)?;
    let (hpage, hskip) = offset(q.history, PER_PAGE)?;
    let (spage, sskip) = offset(q.schedules, PER_PAGE)?;
    let store = state.store();
    let running = store.tasks_page(true, PER_PAGE, skip).await?;
    let history = store.tasks_page(false, PER_PAGE, hskip).await?;
    let schedules = store.schedules_page(PER_PAGE, sskip).await?;
    let csrf = csrf::token(&state.auth, &session.nonce);
    let chrome = Chrome {
        csrf: csrf.clone(),
        flash: layout::flash(q.flash.as_deref()),
        refresh: Some(3),
    };
    let (p, h, s) = (page.to_string(), hpage.to_string(), spage.to_string());
    let body = html! {
        section #running data-live {
            h2 { "Running" }
            @if running.items.is_empty() { p.empty { "Nothing running." } }
            @for t in &running.items {
                div.task {
                    (progress(t))
                    (button(&format!("/tasks/{}/cancel", t.id), &csrf, "Cancel", "danger"))
                }
            }
            (pager("page", page, running.more, &[("history", &h), ("schedules", &s)]))
        }
        section #history {
            h2 { "History" }
            table {
                thead { tr { th { "task" } th { "tool" } th { "status" } th { "started" } th { "finished" } th { "result" } } }
                tbody {
                    @for t in &history.items {
                        tr {
                            td { code { (t.id.short()) } }
                            td { (t.tool_name) }
                            td { span class={ "status " (t.status.as_str()) } { (t.status.as_str()) } }
                            td { (when(t.created_at)) }
                            td { (t.finished_at.map_or_else(|| "—".into(), when)) }
                            td { pre.result { (clip(&mask_text(t.result.as_deref().unwrap_or("")))) } }
                        }
                    }
                }
            }
            (pager("history", hpage, history.more, &[("page", &p), ("schedules", &s)]))
        }
        section #schedules {
            h2 { "Schedules" }
            table {
                thead { tr { th { "schedule" } th { "when" } th { "prompt" } th { "next" } th { "fired" } th {} } }
                tbody {
                    @for sc in &schedules.items {
                        tr {
                            td { code { (sc.id.short()) } }
                            td { (sc.kind) " " code { (sc.spec) } " (" (sc.timezone) ")" }
                            td { (mask_text(&sc.prompt)) }
                            td { (when_ms(sc.next_run_at)) }
                            td { (sc.fired_count) }
                            td { (button(&format!("/schedules/{}/cancel", sc.id), &csrf, "Cancel", "danger")) }
                        }
                    }
                }
            }
            (pager("schedules", spage, schedules.more, &[("page", &p), ("history", &h)]))
        }
    };
    Ok(layout::respond(layout::page(
        "Tasks & schedules",
        "/tasks",
        &chrome,
        body,
    )))
}

/// A running task: its tool, stage and a progress bar.
pub(crate) fn progress(t: &TaskRecord) -> Markup {
    html! {
        div.progress id={ "task-" (t.id) } {
            div {
                code { (t.id.short()) } " " strong { (t.tool_name) } " "
                span class={ "status " (t.status.as_str()) } { (t.status.as_str()) }
                @if !t.stage.is_empty() && t.stage != t.status.as_str() { " · " (mask_text(&t.stage)) }
                @if !t.detail.is_empty() { " · " (mask_text(&t.detail)) }
            }
            @match t.percent {
                Some(p) => { progress max="100" value=(p) { (p) "%" } " " (p) "%" }
                None => { progress {} }
            }
            details { summary { "arguments" } pre { (mask_json(&t.arguments)) } }
        }
    }
}

fn clip(text: &str) -> String {
    crate::text::clip(text, RESULT_CHARS)
}

pub(crate) async fn cancel_task(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    form: axum::extract::Form<Form>,
) -> Result<Redirect, WebError> {
    csrf::check(&state.auth, &session, &form)?;
    // Text that is no task id names no running task.
    let done = match id.parse::<TaskId>() {
        Ok(task) => state.operator.cancel_task(&task).await?,
        Err(_) => false,
    };
    state
        .audit("web.task_cancel", json!({ "task": id, "requested": done }))
        .await;
    let flash = if done { "cancelled" } else { "not-running" };
    Ok(Redirect::to(&format!("/tasks?flash={flash}")))
}

pub(crate) async fn cancel_schedule(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    form: axum::extract::Form<Form>,
) -> Result<Redirect, WebError> {
    csrf::check(&state.auth, &session, &form)?;
    let store = state.store();
    let id: ScheduleId = id.parse().map_err(|_| WebError::NotFound)?;
    let Some(schedule) = store.schedule(&id).await? else {
        return Err(WebError::NotFound);
    };
    let done = store
        .schedules()
        .cancel(&schedule.session_id, id.as_str())
        .await?;
    state
        .audit(
            "web.schedule_cancel",
            json!({ "schedule": id, "cancelled": done.is_some() }),
        )
        .await;
    let flash = if done.is_some() {
        "cancelled"
    } else {
        "not-running"
    };
    Ok(Redirect::to(&format!("/tasks?flash={flash}")))
}
