//! Login by token: signed session cookies any process with the same
//! `WEB_TOKEN` accepts (unless signed out: revoked in the store), token
//! attempts limited per client address and audited, and a loopback-only
//! console that refuses other `Host` names.

use super::csrf::{self, Form};
use super::{layout, WebError, WebState};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::json;
use std::net::{IpAddr, SocketAddr};

pub(crate) use super::session::{set_cookie, Auth, Session};

/// Pages need a signed-in session that was not signed out: a page view
/// without one goes to the login page, anything else gets 401. A console
/// without a token signs the visitor in on the spot (it only answers
/// loopback names).
pub(crate) async fn require(
    State(state): State<WebState>,
    mut request: Request,
    next: Next,
) -> Response {
    let auth = &state.auth;
    let session = match auth.session(request.headers()).filter(|s| s.signed_in) {
        Some(s) => match state.store().web_session_revoked(&s.nonce).await {
            Ok(false) => Some(s),
            Ok(true) => None,
            Err(e) => return WebError::Store(e).into_response(),
        },
        None => None,
    };
    match session {
        Some(s) => {
            request.extensions_mut().insert(s);
            next.run(request).await
        }
        _ if auth.open() => {
            let session = Session::new(true, 0);
            let cookie = set_cookie(auth, request.headers(), &session);
            request.extensions_mut().insert(session);
            let mut response = next.run(request).await;
            response.headers_mut().append(header::SET_COOKIE, cookie);
            response
        }
        _ if request.method() == Method::GET => Redirect::to("/login").into_response(),
        _ => (StatusCode::UNAUTHORIZED, "sign in first").into_response(),
    }
}

/// Without a token the console answers only loopback host names, so a web
/// page elsewhere cannot reach it through DNS rebinding.
pub(crate) async fn host_check(
    State(state): State<WebState>,
    request: Request,
    next: Next,
) -> Response {
    if state.auth.open() {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        let name = match host.rsplit_once(':') {
            Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
            _ => host,
        };
        if !matches!(name, "localhost" | "127.0.0.1" | "[::1]") {
            return (
                StatusCode::FORBIDDEN,
                "this console answers on localhost only",
            )
                .into_response();
        }
    }
    next.run(request).await
}

/// The login form, with a pre-login session for its CSRF token.
pub(crate) async fn login_page(State(state): State<WebState>, headers: HeaderMap) -> Response {
    if state.auth.open() {
        return Redirect::to("/").into_response();
    }
    // A signed-in session that was signed out gets a new pre-login one.
    let session = match state.auth.session(&headers) {
        Some(s) if !s.signed_in => s,
        Some(s) => match state.store().web_session_revoked(&s.nonce).await {
            Ok(false) => return Redirect::to("/").into_response(),
            Ok(true) => Session::new(false, 0),
            Err(e) => return WebError::Store(e).into_response(),
        },
        None => Session::new(false, 0),
    };
    let token = csrf::token(&state.auth, &session.nonce);
    let mut response = layout::respond(layout::login(&token, None)).into_response();
    let cookie = set_cookie(&state.auth, &headers, &session);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}

/// Checks the token: attempts are limited per client address (behind a
/// trusted proxy, the address it forwards); failures are audited.
pub(crate) async fn login(
    State(state): State<WebState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    form: axum::extract::Form<Form>,
) -> Response {
    let auth = &state.auth;
    let Some(session) = auth.session(&headers) else {
        return (StatusCode::FORBIDDEN, "reload the login page and try again").into_response();
    };
    if csrf::check(auth, &session, &form).is_err() {
        return (StatusCode::FORBIDDEN, "reload the login page and try again").into_response();
    }
    let ip = auth.client(peer.ip(), &headers);
    let whom = who(ip, peer.ip());
    if !auth.attempt(ip) {
        state.audit("web.login_limited", whom).await;
        let token = csrf::token(auth, &session.nonce);
        let page = layout::respond(layout::login(
            &token,
            Some("Too many attempts; wait a minute."),
        ));
        return (StatusCode::TOO_MANY_REQUESTS, page).into_response();
    }
    let offered = form.field("token").unwrap_or_default();
    if !auth.check_token(offered) {
        state.audit("web.login_failed", whom).await;
        let token = csrf::token(auth, &session.nonce);
        let page = layout::respond(layout::login(&token, Some("That token is not right.")));
        return (StatusCode::UNAUTHORIZED, page).into_response();
    }
    state.audit("web.login", whom).await;
    // A fresh nonce: a session fixed before login is not the one signed in.
    // Signing in is entering the token: approving needs no second entry
    // within the re-entry window.
    let session = Session::new(true, crate::store::now());
    let cookie = set_cookie(auth, &headers, &session);
    let mut response = Redirect::to("/").into_response();
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}

/// The audit detail of a token attempt: the client, and the proxy it came
/// through when that is another address.
fn who(client: IpAddr, peer: IpAddr) -> serde_json::Value {
    if client == peer {
        json!({ "ip": client.to_string() })
    } else {
        json!({ "ip": client.to_string(), "via": peer.to_string() })
    }
}

/// Ends the session: revoked in the store, so its cookie (or a copy of it)
/// is refused by every process from now on, and cleared in this browser.
pub(crate) async fn logout(
    State(state): State<WebState>,
    axum::Extension(session): axum::Extension<Session>,
    form: axum::extract::Form<Form>,
) -> Result<Response, WebError> {
    csrf::check(&state.auth, &session, &form)?;
    state
        .store()
        .revoke_web_session(&session.nonce, session.expires)
        .await?;
    state.audit("web.logout", json!({})).await;
    let mut response = Redirect::to("/login").into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_static("sb_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    Ok(response)
}
