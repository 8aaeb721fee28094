//! Approving from the console asks for the token again (sudo-style): a
//! program that reaches the console with a session of its own — a command
//! approved once, running in the background on this machine — can read every
//! page and its CSRF token, but not `WEB_TOKEN`. So Approve (and approving a
//! pairing) needs the token entered within the last `WEB_REAUTH_SECS`
//! (signing in counts), and a console without a token cannot approve at all:
//! nothing would tell such a program from the operator's browser.

use super::auth::{set_cookie, Session};
use super::csrf::Form;
use super::WebState;
use axum::http::{HeaderMap, HeaderValue};
use maud::{html, Markup};
use serde_json::json;
use std::net::IpAddr;

/// The form field the re-entered token travels in.
pub(crate) const FIELD: &str = "token";

/// Why an approval from the console was refused (each a `?flash=` code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The console has no token: it cannot approve.
    NoToken,
    /// The token was not entered recently, and the form did not carry it.
    Needed,
    /// The form carried a wrong token.
    Wrong,
    /// Too many token attempts from this client this minute.
    Limited,
}

impl Refusal {
    pub(crate) fn flash(self) -> &'static str {
        match self {
            Refusal::NoToken => "no-token",
            Refusal::Needed => "reauth",
            Refusal::Wrong => "reauth-failed",
            Refusal::Limited => "reauth-limited",
        }
    }
}

/// Whether `session` may approve now: `Ok(None)` when its token entry is
/// recent, `Ok(Some(cookie))` when the form's token renewed it (the new
/// cookie records when), else the refusal. Attempts count against the
/// client's sign-in allowance and are audited.
pub(crate) async fn confirm(
    state: &WebState,
    session: &Session,
    peer: IpAddr,
    headers: &HeaderMap,
    form: &Form,
) -> Result<Option<HeaderValue>, Refusal> {
    let auth = &state.auth;
    if auth.open() {
        return Err(Refusal::NoToken);
    }
    if auth.fresh(session) {
        return Ok(None);
    }
    let offered = form.field(FIELD).unwrap_or_default();
    if offered.is_empty() {
        return Err(Refusal::Needed);
    }
    let client = auth.client(peer, headers);
    let whom = json!({ "ip": client.to_string() });
    if !auth.attempt(client) {
        state.audit("web.reauth_limited", whom).await;
        return Err(Refusal::Limited);
    }
    if !auth.check_token(offered) {
        state.audit("web.reauth_failed", whom).await;
        return Err(Refusal::Wrong);
    }
    state.audit("web.reauth", whom).await;
    let renewed = Session {
        confirmed: crate::store::now(),
        ..session.clone()
    };
    Ok(Some(set_cookie(auth, headers, &renewed)))
}

/// What an approve form shows besides its buttons: nothing on a console
/// that cannot approve (the Approve button is left out), the time the
/// token entry lasts until, or a field to enter it in.
pub(crate) fn field(state: &WebState, session: &Session) -> Markup {
    let auth = &state.auth;
    html! {
        @if let Some(until) = auth.fresh_until(session) {
            span.muted.reauth { "token entered; approving without it until " (super::layout::when_ms(Some(until))) }
        } @else if !auth.open() {
            input.reauth type="password" name=(FIELD) autocomplete="current-password"
                placeholder="console token, to approve" aria-label="console token (WEB_TOKEN), to approve";
        }
    }
}

/// Whether the console can approve at all (it has a token).
pub(crate) fn can_approve(state: &WebState) -> bool {
    !state.auth.open()
}
