//! The console's signing key and the signed sessions its cookies carry.

use super::{client, WebConfig};
use crate::secrets::TokenDigest;
use axum::http::{header, HeaderMap, HeaderValue};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::num::NonZeroU32;
use subtle::ConstantTimeEq;
use switchboard_platform::TokioClock;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "sb_session";
/// How long a login lasts.
const SESSION_MS: i64 = 12 * 3_600_000;
/// Token attempts (sign-in and re-entry to approve) one client may make a minute.
const ATTEMPTS_PER_MINUTE: u32 = 5;

type Limiter = RateLimiter<IpAddr, HashMapStateStore<IpAddr>, TokioClock, NoOpMiddleware<Nanos>>;

/// The console's authentication.
pub(crate) struct Auth {
    /// The token's digest (compared in constant time); none: loopback, open.
    token: Option<TokenDigest>,
    /// Signs cookies and CSRF tokens: derived from the token, so every
    /// process sharing it accepts the others' sessions.
    key: [u8; 32],
    /// Token attempts per client address.
    attempts: Limiter,
    /// How long an entered token lets a session approve (zero: each time).
    reauth: std::time::Duration,
    /// Proxies whose `X-Forwarded-For` is believed.
    trusted: Vec<IpAddr>,
}

/// Who is asking, from a verified cookie.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub nonce: String,
    pub signed_in: bool,
    /// When the cookie expires (epoch ms).
    pub expires: i64,
    /// When the token was last entered in this session (epoch ms; 0: never).
    pub confirmed: i64,
}

impl Session {
    /// A new session (a fresh nonce), valid [`SESSION_MS`].
    pub(crate) fn new(signed_in: bool, confirmed: i64) -> Session {
        Session {
            nonce: new_nonce(),
            signed_in,
            expires: crate::store::now() + SESSION_MS,
            confirmed,
        }
    }
}

impl Auth {
    pub(crate) fn new(config: &WebConfig) -> Auth {
        let digest = config.token.as_ref().map(TokenDigest::new);
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
            reauth: config.reauth,
            trusted: config.trusted_proxies.clone(),
        }
    }

    /// The client a request comes from (see [`client::address`]).
    pub(crate) fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        client::address(peer, headers, &self.trusted)
    }

    /// Counts a token attempt of `client`; false when its minute's
    /// allowance is used up.
    pub(crate) fn attempt(&self, client: IpAddr) -> bool {
        // Addresses whose allowance is full again are forgotten, so a stream
        // of new addresses cannot grow the table without bound.
        if self.attempts.len() > 10_000 {
            self.attempts.retain_recent();
        }
        self.attempts.check_key(&client).is_ok()
    }

    /// Whether `session` entered the token recently enough to approve.
    pub(crate) fn fresh(&self, session: &Session) -> bool {
        let window = i64::try_from(self.reauth.as_millis()).unwrap_or(i64::MAX);
        self.token.is_some()
            && session.confirmed > 0
            && crate::store::now().saturating_sub(session.confirmed) < window
    }

    /// Until when `session` may approve without entering the token (epoch ms).
    pub(crate) fn fresh_until(&self, session: &Session) -> Option<i64> {
        let window = i64::try_from(self.reauth.as_millis()).unwrap_or(i64::MAX);
        self.fresh(session)
            .then(|| session.confirmed.saturating_add(window))
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

    fn cookie_value(&self, session: &Session) -> String {
        let expires = session.expires.to_string();
        let confirmed = session.confirmed.to_string();
        let level = if session.signed_in { "in" } else { "pre" };
        let nonce = session.nonce.as_str();
        let sig = self.mac(&["session", &expires, nonce, level, &confirmed]);
        format!("{expires}.{nonce}.{level}.{confirmed}.{sig}")
    }

    /// The session a cookie carries, when its signature holds and it is unexpired.
    pub(crate) fn session(&self, headers: &HeaderMap) -> Option<Session> {
        let value = cookie(headers, COOKIE)?;
        let mut parts = value.split('.');
        let (expires, nonce, level, confirmed, sig) = (
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
        );
        let expected = self.mac(&["session", expires, nonce, level, confirmed]);
        if !bool::from(expected.as_bytes().ct_eq(sig.as_bytes())) {
            return None;
        }
        let expires = expires.parse::<i64>().ok()?;
        if expires < crate::store::now() {
            return None;
        }
        Some(Session {
            nonce: nonce.to_owned(),
            signed_in: level == "in" || self.open(),
            expires,
            confirmed: confirmed.parse().ok()?,
        })
    }

    pub(crate) fn check_token(&self, offered: &str) -> bool {
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

/// `Set-Cookie` for `session`; `Secure` when the request came over https
/// (directly or through a proxy that says so).
pub(crate) fn set_cookie(auth: &Auth, headers: &HeaderMap, session: &Session) -> HeaderValue {
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    let secure = if https { "; Secure" } else { "" };
    let value = auth.cookie_value(session);
    let max_age = (session.expires - crate::store::now()).max(0) / 1000;
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .unwrap_or(HeaderValue::from_static(""))
}

fn new_nonce() -> String {
    crate::hex::encode(&rand::random::<[u8; 16]>())
}
