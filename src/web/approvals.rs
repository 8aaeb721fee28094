//! Approvals: pending cards with their exact arguments (secrets masked),
//! Approve / Deny through the gateway's own decision path, and the
//! "always" rules, revocable. Approve needs the token re-entered (see
//! [`super::reauth`]).

use super::auth::Session;
use super::csrf::{self, Form};
use super::layout::{self, button, csrf_field, pager, when, Chrome};
use super::reauth;
use super::{mask_json, mask_text, offset, WebError, WebState, PER_PAGE};
use crate::approvals::Choice;
use crate::domain::ApprovalId;
use crate::gateway::WebDecision;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Extension;
use maud::html;
use serde::Deserialize;
use serde_json::json;
use std::net::SocketAddr;

#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalsQuery {
    page: Option<u32>,
    rules: Option<u32>,
    flash: Option<String>,
}

pub(crate) async fn page(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Query(q): Query<ApprovalsQuery>,
) -> Result<Html<String>, WebError> {
    let (page, skip) = offset(q.page, PER_PAGE)?;
    let (rpage, rskip) = offset(q.rules, PER_PAGE)?;
    let store = state.store();
    let pending = store
        .pending_page(chrono::Utc::now(), PER_PAGE, skip)
        .await?;
    let rules = store.rules_page(PER_PAGE, rskip).await?;
    let csrf = csrf::token(&state.auth, &session.nonce);
    let chrome = Chrome {
        csrf: csrf.clone(),
        flash: layout::flash(q.flash.as_deref()),
        refresh: Some(5),
    };
    let (p, r) = (page.to_string(), rpage.to_string());
    let can_approve = reauth::can_approve(&state);
    let body = html! {
        section #pending data-live {
            h2 { "Pending" }
            @if !can_approve {
                p.muted { "This console has no WEB_TOKEN, so it cannot approve: a program on this machine could reach it as well as you. Approve in the chat, or set WEB_TOKEN." }
            }
            @if pending.items.is_empty() { p.empty { "No approval is waiting." } }
            @for a in &pending.items {
                article.approval id={ "approval-" (a.id) } {
                    header {
                        strong { (a.tool_display) } " "
                        code { (a.id.short()) }
                        " requested by " (a.requester_name)
                        " on " (a.chat.platform.as_str())
                        " — expires " (when(a.expires_at))
                    }
                    p { (mask_text(&a.summary)) }
                    pre.arguments { (mask_json(&a.arguments)) }
                    form.decide method="post" action={ "/approvals/" (a.id) "/decide" } {
                        (csrf_field(&csrf))
                        input type="text" name="reason" placeholder="reason (optional, for a denial)" maxlength="300";
                        (reauth::field(&state, &session))
                        @if can_approve {
                            button.approve type="submit" name="choice" value="allow" { "Approve" }
                        }
                        button.danger type="submit" name="choice" value="deny" { "Deny" }
                    }
                }
            }
            (pager("page", page, pending.more, &[("rules", &r)]))
        }
        section #rules {
            h2 { "Always-allow rules" }
            @if rules.items.is_empty() { p.empty { "No rule." } }
            table {
                thead { tr { th { "rule" } th { "user" } th { "tool" } th { "allows" } th {} } }
                tbody {
                    @for rule in &rules.items {
                        tr {
                            td { code { (rule.id.short()) } }
                            td { (rule.platform.as_str()) " " (rule.user.0) }
                            td { (rule.tool_name) }
                            td { code { (mask_text(&crate::approvals::describe_rule(&rule.pattern))) } }
                            td { (button(&format!("/rules/{}/revoke", rule.id), &csrf, "Revoke", "danger")) }
                        }
                    }
                }
            }
            (pager("rules", rpage, rules.more, &[("page", &p)]))
        }
    };
    Ok(layout::respond(layout::page(
        "Approvals",
        "/approvals",
        &chrome,
        body,
    )))
}

/// Approve (allow once) or Deny, as the operator: the same conditional
/// update as a button press, so only the first decision counts. Approve
/// needs the token entered recently, or in the form (see [`reauth`]).
pub(crate) async fn decide(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(id): Path<String>,
    form: axum::extract::Form<Form>,
) -> Result<Response, WebError> {
    csrf::check(&state.auth, &session, &form)?;
    let choice = match form.field("choice") {
        Some("allow") => Choice::AllowOnce,
        Some("deny") => Choice::Deny,
        _ => return Err(WebError::BadRequest("choice must be allow or deny".into())),
    };
    if id.len() != 32 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(WebError::NotFound);
    }
    let id: ApprovalId = id.parse().map_err(|_| WebError::NotFound)?;
    let mut renewed = None;
    if choice == Choice::AllowOnce {
        match reauth::confirm(&state, &session, peer.ip(), &headers, &form).await {
            Ok(cookie) => renewed = cookie,
            Err(refusal) => {
                state
                    .audit(
                        "web.approval_decide",
                        json!({ "id": id, "choice": "allow", "decided": false, "refused": refusal.flash() }),
                    )
                    .await;
                let to = format!("/approvals?flash={}", refusal.flash());
                return Ok(Redirect::to(&to).into_response());
            }
        }
    }
    let reason = form
        .field("reason")
        .map(|r| crate::text::clip(r.trim(), 300))
        .filter(|r| !r.is_empty() && choice == Choice::Deny);
    let outcome = state.operator.decide(&id, choice, reason).await;
    let (flash, decided) = match &outcome {
        WebDecision::Decided(_) => ("decided", true),
        WebDecision::Refused(_) => ("refused", false),
    };
    state
        .audit(
            "web.approval_decide",
            json!({
                "id": id,
                "choice": if choice == Choice::Deny { "deny" } else { "allow" },
                "decided": decided,
            }),
        )
        .await;
    let mut response = Redirect::to(&format!("/approvals?flash={flash}")).into_response();
    if let Some(cookie) = renewed {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

pub(crate) async fn revoke_rule(
    State(state): State<WebState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    form: axum::extract::Form<Form>,
) -> Result<Redirect, WebError> {
    csrf::check(&state.auth, &session, &form)?;
    let done = state.store().approvals().revoke_any_rule(&id).await?;
    state
        .audit("web.rule_revoke", json!({ "rule": id, "revoked": done }))
        .await;
    let flash = if done { "revoked" } else { "gone" };
    Ok(Redirect::to(&format!("/approvals?flash={flash}")))
}
