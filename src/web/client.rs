//! Who is on the other end of a console request: the peer's address, or —
//! when the peer is a configured trusted proxy (`WEB_TRUSTED_PROXY`) — the
//! client its `X-Forwarded-For` names. Anyone else's header is ignored, so a
//! client cannot pick the address its login attempts are counted under.

use axum::http::HeaderMap;
use std::net::IpAddr;

/// The client's address: the peer's, unless the peer is one of `trusted`;
/// then the last `X-Forwarded-For` entry no trusted proxy added (the
/// address the outermost trusted proxy saw).
pub(crate) fn address(peer: IpAddr, headers: &HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    for entry in entries.iter().rev() {
        match entry.parse::<IpAddr>() {
            Ok(ip) if trusted.contains(&ip) => continue,
            Ok(ip) => return ip,
            // Garbage added by whoever is outside the trusted chain: the
            // last trusted hop is the client as far as anyone can tell.
            Err(_) => break,
        }
    }
    peer
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use axum::http::HeaderValue;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_a_trusted_proxy_names_the_client() {
        let proxy: IpAddr = "10.0.0.1".parse().unwrap();
        let client: IpAddr = "203.0.113.7".parse().unwrap();
        let spoofed = headers(&["198.51.100.1, 203.0.113.7"]);
        // Not configured: the peer, whatever the header says.
        assert_eq!(address(proxy, &spoofed, &[]), proxy);
        assert_eq!(address(client, &spoofed, &[proxy]), client);
        // Configured: the last entry the proxy added, not the client's own.
        assert_eq!(address(proxy, &spoofed, &[proxy]), client);
        let chain = headers(&["198.51.100.1", "203.0.113.7, 10.0.0.2"]);
        let second: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(address(proxy, &chain, &[proxy, second]), client);
        assert_eq!(address(proxy, &headers(&[]), &[proxy]), proxy);
        assert_eq!(address(proxy, &headers(&["nonsense"]), &[proxy]), proxy);
    }
}
