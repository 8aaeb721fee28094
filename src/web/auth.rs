//! Login by token: signed session cookies any process with the same
//! `WEB_TOKEN` accepts, failed logins limited per address and audited, and
//! a loopback-only console that refuses other `Host` names.

use super::csrf::{self, Form};
use super::{layout, WebState};
use crate::secrets::TokenDigest;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use subtle::ConstantTimeEq;
use switchboard_platform::{Secret, TokioClock};

/// The session cookie's name.
pub(crate) const COOKIE: &str = "sb_session";
/// How long a login lasts.
const SESSION_MS: i64 = 12 * 3_600_000;
/// Login attempts one address may make a minute.
const ATTEMPTS_PER_MINUTE: u32 = 5;

type Limiter = RateLimiter<IpAddr, HashMapStateStore<IpAddr>, TokioClock, NoOpMiddleware<Nanos>>;

/// The console's authentication.
pub(crate) struct Auth {
    /// The token's digest (compared in constant time); none: loopback, open.
    token: Option<TokenDigest>,
    /// Signs cookies and CSRF tokens: derived from the token, so every
    /// process sharing it accepts the others' sessions.
    key: [u8; 32],
    attempts: Limiter,
}

/// Who is asking, from a verified cookie.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub nonce: String,
    pub signed_in: bool,
}

impl Auth {
    pub(crate) fn new(token: Option<&Secret>) -> Auth {
        let digest = token.map(TokenDigest::new);
        let key = match &digest {
            Some(d) => {
                let mut h = Sha256::new();
                h.update(b"switchboard web console session key v1");
                h.update(d.as_bytes());
                h.finalize().into()
            }
            None => rand::random(),
        };
        let quota =
            Quota::per_minute(NonZeroU32::new(ATTEMPTS_PER_MINUTE).unwrap_or(NonZeroU32::MIN));
        Auth {
            token: digest,
            key,
            attempts: RateLimiter::hashmap_with_clock(quota, TokioClock::new()),
        }
    }

    /// Whether a token is needed at all (no: a loopback console without one).
    pub(crate) fn open(&self) -> bool {
        self.token.is_none()
    }

    pub(crate) fn mac(&self, parts: &[&str]) -> String {
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.key) else {
            return String::new();
        };
        for p in parts {
            mac.update(p.as_bytes());
            mac.update(b"|");
        }
        crate::hex::encode(&mac.finalize().into_bytes())
    }

    fn cookie_value(&self, nonce: &str, signed_in: bool) -> String {
        let expires = (crate::store::now() + SESSION_MS).to_string();
        let level = if signed_in { "in" } else { "pre" };
        let sig = self.mac(&["session", &expires, nonce, level]);
        format!("{expires}.{nonce}.{level}.{sig}")
    }

    /// The session a cookie carries, when its signature holds and it is unexpired.
    pub(crate) fn session(&self, headers: &HeaderMap) -> Option<Session> {
        let value = cookie(headers, COOKIE)?;
        let mut parts = value.split('.');
        let (expires, nonce, level, sig) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let expected = self.mac(&["session", expires, nonce, level]);
        if !bool::from(expected.as_bytes().ct_eq(sig.as_bytes())) {
            return None;
        }
        if expires.parse::<i64>().ok()? < crate::store::now() {
            return None;
        }
        Some(Session {
            nonce: nonce.to_owned(),
            signed_in: level == "in" || self.open(),
        })
    }

    fn check_token(&self, offered: &str) -> bool {
        match &self.token {
            Some(digest) => digest.matches(offered),
            None => true,
        }
    }
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// `Set-Cookie` for a new session; `Secure` when the request came over https
/// (directly or through a proxy that says so).
fn set_cookie(auth: &Auth, headers: &HeaderMap, nonce: &str, signed_in: bool) -> HeaderValue {
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    let secure = if https { "; Secure" } else { "" };
    let value = auth.cookie_value(nonce, signed_in);
    let max_age = SESSION_MS / 1000;
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .unwrap_or(HeaderValue::from_static(""))
}

fn new_nonce() -> String {
    crate::hex::encode(&rand::random::<[u8; 16]>())
}

/// Pages need a signed-in session: a page view without one goes to the
/// login page, anything else gets 401. A console without a token signs the
/// visitor in on the spot (it only answers loopback names).
pub(crate) async fn require(
    State(state): State<WebState>,
    mut request: Request,
    next: Next,
) -> Response {
    let auth = &state.auth;
    match auth.session(request.headers()) {
        Some(s) if s.signed_in => {
            request.extensions_mut().insert(s);
            next.run(request).await
        }
        _ if auth.open() => {
            let nonce = new_nonce();
            let cookie = set_cookie(auth, request.headers(), &nonce, true);
            request.extensions_mut().insert(Session {
                nonce,
                signed_in: true,
            });
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
    let nonce = match state.auth.session(&headers) {
        Some(s) if s.signed_in => return Redirect::to("/").into_response(),
        Some(s) => s.nonce,
        None => new_nonce(),
    };
    let token = csrf::token(&state.auth, &nonce);
    let mut response = layout::respond(layout::login(&token, None)).into_response();
    let cookie = set_cookie(&state.auth, &headers, &nonce, false);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}

/// Checks the token: attempts are limited per address; failures are audited.
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
    let ip = peer.ip();
    // Addresses whose allowance is full again are forgotten, so a stream of
    // new addresses cannot grow the table without bound.
    if auth.attempts.len() > 10_000 {
        auth.attempts.retain_recent();
    }
    if auth.attempts.check_key(&ip).is_err() {
        state
            .audit("web.login_limited", json!({ "ip": ip.to_string() }))
            .await;
        let token = csrf::token(auth, &session.nonce);
        let page = layout::respond(layout::login(
            &token,
            Some("Too many attempts; wait a minute."),
        ));
        return (StatusCode::TOO_MANY_REQUESTS, page).into_response();
    }
    let offered = form.field("token").unwrap_or_default();
    if !auth.check_token(offered) {
        state
            .audit("web.login_failed", json!({ "ip": ip.to_string() }))
            .await;
        let token = csrf::token(auth, &session.nonce);
        let page = layout::respond(layout::login(&token, Some("That token is not right.")));
        return (StatusCode::UNAUTHORIZED, page).into_response();
    }
    state
        .audit("web.login", json!({ "ip": ip.to_string() }))
        .await;
    // A fresh nonce: a session fixed before login is not the one signed in.
    let cookie = set_cookie(auth, &headers, &new_nonce(), true);
    let mut response = Redirect::to("/").into_response();
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}

/// Ends the session in this browser.
pub(crate) async fn logout(
    State(state): State<WebState>,
    axum::Extension(session): axum::Extension<Session>,
    form: axum::extract::Form<Form>,
) -> Result<Response, super::WebError> {
    csrf::check(&state.auth, &session, &form)?;
    state.audit("web.logout", json!({})).await;
    let mut response = Redirect::to("/login").into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_static("sb_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    Ok(response)
}
