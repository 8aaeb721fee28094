//! The gate in front of `/mcp` over HTTP: a request from a browser page of
//! another origin is refused (403, the DNS-rebinding protection the MCP
//! transport asks for), and every request must carry the bearer token
//! (`MCP_TOKEN`; 401 with `WWW-Authenticate: Bearer` otherwise).

use crate::secrets::TokenDigest;
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpListener;

/// Both ends of a connection: the peer (for the log) and the local address
/// it reached, whose origin is the only one accepted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ends {
    pub peer: SocketAddr,
    pub local: Option<SocketAddr>,
}

impl Connected<IncomingStream<'_, TcpListener>> for Ends {
    fn connect_info(stream: IncomingStream<'_, TcpListener>) -> Ends {
        Ends {
            peer: *stream.remote_addr(),
            local: stream.io().local_addr().ok(),
        }
    }
}

/// The token every request must carry.
#[derive(Clone)]
pub(crate) struct Gate {
    token: Arc<TokenDigest>,
}

impl Gate {
    pub(crate) fn new(token: TokenDigest) -> Gate {
        Gate {
            token: Arc::new(token),
        }
    }
}

/// Refuses a foreign `Origin` (403), then a missing or wrong token (401).
pub(crate) async fn check(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let ends = request
        .extensions()
        .get::<ConnectInfo<Ends>>()
        .map(|info| info.0);
    let peer = ends.map(|e| e.peer.ip().to_string()).unwrap_or_default();
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let local = ends.and_then(|e| e.local);
        let own = origin
            .to_str()
            .ok()
            .zip(local)
            .is_some_and(|(origin, local)| own_origin(origin, local));
        if !own {
            tracing::warn!(%peer, origin = ?origin, "MCP over HTTP: refused a request from another origin");
            return (
                StatusCode::FORBIDDEN,
                "requests from another origin are refused",
            )
                .into_response();
        }
    }
    if !bearer(request.headers()).is_some_and(|offered| gate.token.matches(offered)) {
        tracing::warn!(%peer, "MCP over HTTP: refused a request without the right bearer token");
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))],
            "send Authorization: Bearer <MCP_TOKEN>",
        )
            .into_response();
    }
    next.run(request).await
}

/// The token of `Authorization: Bearer <token>` (the scheme in any case).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Whether `origin` is the listener's own: `http://` with the address the
/// client reached (`local`) and its port, or `localhost` when that address is
/// loopback. A rebinding attack's page has a host name of its own, never
/// these.
fn own_origin(origin: &str, local: SocketAddr) -> bool {
    let Ok(url) = url::Url::parse(origin) else {
        return false;
    };
    let local_ip = local.ip().to_canonical();
    let host_ok = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip) == local_ip,
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).to_canonical() == local_ip,
        Some(url::Host::Domain(name)) => {
            name.eq_ignore_ascii_case("localhost") && local_ip.is_loopback()
        }
        None => false,
    };
    url.scheme() == "http"
        && host_ok
        && url.port_or_known_default() == Some(local.port())
        && url.username().is_empty()
        && url.password().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listeners_own_origin_is_its_own() {
        let loopback: SocketAddr = "127.0.0.1:8766".parse().unwrap();
        for own in [
            "http://127.0.0.1:8766",
            "http://localhost:8766",
            "http://LOCALHOST:8766",
        ] {
            assert!(own_origin(own, loopback), "{own}");
        }
        for foreign in [
            "http://evil.example:8766",
            "http://127.0.0.1:8767",
            "http://127.0.0.1",
            "https://127.0.0.1:8766",
            "http://10.0.0.2:8766",
            "null",
            "",
        ] {
            assert!(!own_origin(foreign, loopback), "{foreign}");
        }
        let lan: SocketAddr = "192.168.1.5:80".parse().unwrap();
        assert!(own_origin("http://192.168.1.5", lan));
        assert!(!own_origin("http://localhost", lan));
        let mapped: SocketAddr = "[::ffff:192.168.1.5]:80".parse().unwrap();
        assert!(own_origin("http://192.168.1.5", mapped));
        let v6: SocketAddr = "[::1]:9000".parse().unwrap();
        assert!(own_origin("http://[::1]:9000", v6));
        assert!(own_origin("http://localhost:9000", v6));
    }

    #[test]
    fn the_bearer_token_is_read_in_any_case_of_the_scheme() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
            bearer(&headers).map(str::to_owned)
        };
        assert_eq!(with("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(with("bearer  abc ").as_deref(), Some("abc"));
        assert_eq!(with("Basic abc"), None);
        assert_eq!(with("Bearer"), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }
}
