//! Users and access: pairing requests, admitted users, the allowlists in
//! force, usage and estimated cost per day, and memories (forget, audited).

use super::auth::Session;
use super::chart;
use super::csrf::{self, Form};
use super::layout::{self, button, csrf_field, pager, when, Chrome};
use super::{mask_text, offset, WebError, WebState, PER_PAGE};
use crate::store::{AdmittedUser, MemoryOwner, OwnedMemory, PairingCode, Slice, UsageDay};
use axum::extract::{Path, Query, State};
use axum::response::{Html, Redirect};
use axum::Extension;
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use switchboard_platform::{Platform, UserId};

/// Days of usage shown.
const DAYS: i64 = 14;
/// Usage rows read at most (users × days).
const USAGE_ROWS: u32 = 1_000;

#[derive(Debug, Deserialize)]
pub(crate) struct UsersQuery {
    page: Option<u32>,
    memories: Option<u32>,
    /// `platform:id`: whose usage is charted (everyone's when unset).
    user: Option<String>,
    flash: Option<String>,
}

pub(crate) async fn page(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Query(q): Query<UsersQuery>,
) -> Result<Html<String>, WebError> {
    let (page, skip) = offset(q.page, PER_PAGE)?;
    let (mpage, mskip) = offset(q.memories, PER_PAGE)?;
    let store = state.store();
    let now = chrono::Utc::now();
    let pairings = store.pending_pairings().await?;
    let users = store.users_page(PER_PAGE, skip).await?;
    let memories = store.memories_page(now, PER_PAGE, mskip).await?;
    let since = (now - chrono::Duration::days(DAYS - 1))
        .format("%Y-%m-%d")
        .to_string();
    let usage = store.usage_since(&since, USAGE_ROWS).await?;
    let selected = q.user.as_deref().and_then(parse_owner);
    let csrf = csrf::token(&state.auth, &session.nonce);
    let chrome = Chrome {
        csrf: csrf.clone(),
        flash: layout::flash(q.flash.as_deref()),
        refresh: None,
    };
    let settings = &state.settings;
    // Priced when the model catalogue has prices (see `switchboard model add`).
    let priced = usage.iter().any(|u| u.cost_micros > 0);
    let (p, m) = (page.to_string(), mpage.to_string());
    let body = html! {
        (pairings_section(&state, &session, &pairings, &csrf))
        (admitted_section(settings, &users, page, &m))
        section #usage {
            h2 { "Usage per day" }
            (usage_section(&usage, selected, priced))
        }
        (memories_section(&memories, mpage, &p, &csrf))
    };
    Ok(layout::respond(layout::page(
        "Users & access",
        "/users",
        &chrome,
        body,
    )))
}

/// Pairing requests waiting for the operator, each with its decision form.
fn pairings_section(
    state: &WebState,
    session: &Session,
    pairings: &[PairingCode],
    csrf: &str,
) -> Markup {
    html! {
        section #pairings {
            h2 { "Pairing requests" }
            @if pairings.is_empty() { p.empty { "None waiting." } }
            table {
                tbody {
                    @for c in pairings {
                        tr {
                            td { code { (c.code) } }
                            td { (c.platform.as_str()) " " (c.user.0) " " (c.display_name) }
                            td { "expires " (when(c.expires_at)) }
                            td {
                                form.inline method="post" action={ "/pairings/" (c.code) "/decide" } {
                                    (csrf_field(csrf))
                                    (super::reauth::field(state, session))
                                    @if super::reauth::can_approve(state) {
                                        button.approve type="submit" name="choice" value="approve" { "Approve" }
                                    }
                                    button.danger type="submit" name="choice" value="deny" { "Deny" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Admitted users (one page), the access policy and the allowlists in force.
fn admitted_section(
    settings: &super::WebSettings,
    users: &Slice<AdmittedUser>,
    page: u32,
    memories_page: &str,
) -> Markup {
    html! {
        section #admitted {
            h2 { "Admitted users" }
            p.muted { "Access policy: " strong { (settings.access_policy) } }
            table {
                thead { tr { th { "platform" } th { "user" } th { "name" } th { "admitted" } th { "by" } th {} } }
                tbody {
                    @for u in &users.items {
                        tr {
                            td { (u.platform.as_str()) } td { (u.user.0) } td { (u.display_name) }
                            td { (when(u.admitted_at)) } td { (u.admitted_by) }
                            td { a href={ "/users?user=" (u.platform.as_str()) ":" (u.user.0) "#usage" } { "usage" } }
                        }
                    }
                }
            }
            (pager("page", page, users.more, &[("memories", memories_page)]))
            h3 { "Allowlists in force" }
            ul {
                @for (platform, ids) in allowlists(settings) {
                    li { (platform) ": " @if ids.is_empty() { "none" } @else { (ids.join(", ")) } }
                }
            }
        }
    }
}

/// Memories of every user (one page), each with its Forget button.
fn memories_section(
    memories: &Slice<OwnedMemory>,
    mpage: u32,
    users_page: &str,
    csrf: &str,
) -> Markup {
    html! {
        section #memories {
            h2 { "Memories" }
            table {
                thead { tr { th { "user" } th { "kind" } th { "memory" } th { "updated" } th {} } }
                tbody {
                    @for om in &memories.items {
                        tr {
                            td { (om.owner.platform.as_str()) " " (om.owner.user.0) }
                            td { (om.memory.kind.as_str()) }
                            td { (mask_text(&om.memory.content)) }
                            td { (when(om.memory.updated_at)) }
                            td { (button(&format!("/memories/{}/{}/{}/forget", om.owner.platform.as_str(), om.owner.user.0, om.memory.id), csrf, "Forget", "danger")) }
                        }
                    }
                }
            }
            @if memories.items.is_empty() { p.empty { "No memory on this page." } }
            (pager("memories", mpage, memories.more, &[("page", users_page)]))
        }
    }
}

fn parse_owner(raw: &str) -> Option<MemoryOwner> {
    let (platform, id) = raw.split_once(':')?;
    Some(MemoryOwner::new(
        Platform::parse(platform)?,
        UserId(id.parse().ok()?),
    ))
}

fn allowlists(settings: &super::WebSettings) -> Vec<(&'static str, Vec<String>)> {
    let mut out: Vec<(&'static str, Vec<String>)> = settings
        .allowed_users
        .iter()
        .map(|(p, ids)| {
            let mut ids: Vec<String> = ids.iter().map(|u| u.0.to_string()).collect();
            ids.sort();
            (p.as_str(), ids)
        })
        .collect();
    out.sort();
    out
}

/// The day's estimated cost in dollars (priced per model when recorded).
fn cost(u: &UsageDay) -> f64 {
    u.cost_micros as f64 / 1_000_000.0
}

fn usage_section(usage: &[UsageDay], selected: Option<MemoryOwner>, priced: bool) -> Markup {
    let mut per_day: BTreeMap<&str, f64> = BTreeMap::new();
    for u in usage
        .iter()
        .filter(|u| selected.is_none_or(|o| o == u.owner))
    {
        let value = if priced {
            cost(u)
        } else {
            (u.input_tokens + u.output_tokens) as f64
        };
        *per_day.entry(u.day.as_str()).or_default() += value;
    }
    let points: Vec<(String, f64)> = per_day
        .into_iter()
        .map(|(d, v)| (d.to_owned(), v))
        .collect();
    let unit = if priced { "$" } else { "tokens" };
    let whose = match selected {
        Some(o) => format!("{} {}", o.platform.as_str(), o.user.0),
        None => "everyone".to_owned(),
    };
    let label = if priced {
        format!("Estimated cost per day, {whose}")
    } else {
        format!("Tokens per day, {whose} (give the models prices with `switchboard model add … --price-in … --price-out …` for a cost estimate)")
    };
    html! {
        p.muted { (label) @if selected.is_some() { " · " a href="/users#usage" { "everyone" } } }
        (chart::bars(&label, &points, unit))
        table {
            thead { tr { th { "day" } th { "user" } th { "turns" } th { "input tokens" } th { "output tokens" } th { "estimated cost" } } }
            tbody {
                @for u in usage.iter().take(100) {
                    tr {
                        td { (u.day) }
                        td { a href={ "/users?user=" (u.owner.platform.as_str()) ":" (u.owner.user.0) "#usage" } { (u.owner.platform.as_str()) " " (u.owner.user.0) } }
                        td { (u.turns) } td { (u.input_tokens) } td { (u.output_tokens) }
                        td { @if priced { (chart::amount(cost(u), "$")) } @else { "—" } }
                    }
                }
            }
        }
    }
}

/// Approve (needs the token re-entered, like an approval) or deny a pairing.
pub(crate) async fn decide_pairing(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<std::net::SocketAddr>,
    headers: axum::http::HeaderMap,
    Path(code): Path<String>,
    form: axum::extract::Form<Form>,
) -> Result<axum::response::Response, WebError> {
    use axum::response::IntoResponse;
    csrf::check(&state.auth, &session, &form)?;
    let approve = match form.field("choice") {
        Some("approve") => true,
        Some("deny") => false,
        _ => {
            return Err(WebError::BadRequest(
                "choice must be approve or deny".into(),
            ))
        }
    };
    let mut renewed = None;
    if approve {
        match super::reauth::confirm(&state, &session, peer.ip(), &headers, &form).await {
            Ok(cookie) => renewed = cookie,
            Err(refusal) => {
                let to = format!("/users?flash={}", refusal.flash());
                return Ok(Redirect::to(&to).into_response());
            }
        }
    }
    let decided = state.store().decide_pairing(&code, approve).await?;
    state
        .audit(
            "web.pairing_decide",
            json!({
                "code": code,
                "approve": approve,
                "user": decided.as_ref().map(|p| p.user.0),
                "platform": decided.as_ref().map(|p| p.platform.as_str()),
            }),
        )
        .await;
    let flash = match (decided.is_some(), approve) {
        (false, _) => "gone",
        (true, true) => "approved",
        (true, false) => "denied",
    };
    let mut response = Redirect::to(&format!("/users?flash={flash}")).into_response();
    if let Some(cookie) = renewed {
        response
            .headers_mut()
            .append(axum::http::header::SET_COOKIE, cookie);
    }
    Ok(response)
}

pub(crate) async fn forget(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Path((platform, user, id)): Path<(String, i64, i64)>,
    form: axum::extract::Form<Form>,
) -> Result<Redirect, WebError> {
    csrf::check(&state.auth, &session, &form)?;
    let Some(platform) = Platform::parse(&platform) else {
        return Err(WebError::NotFound);
    };
    let owner = MemoryOwner::new(platform, UserId(user));
    let done = state.store().memories().delete(owner, id).await?;
    state
        .audit(
            "web.memory_forget",
            json!({ "platform": platform.as_str(), "user": user, "memory": id, "forgotten": done }),
        )
        .await;
    let flash = if done { "forgotten" } else { "gone" };
    Ok(Redirect::to(&format!("/users?flash={flash}")))
}
