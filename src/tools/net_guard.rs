//! Address checks for outbound fetches: which IPs are off limits and the allowlist.

use super::ToolError;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use url::{Host, Url};

/// A host name's addresses, as a boxed future (the trait is used as `dyn`).
pub(crate) type Lookup<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'a>>;

/// Turns a host name into addresses: [`SystemResolver`] in service; tests
/// play a rebinding DNS server with their own.
pub(crate) trait Resolver: Send + Sync {
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> Lookup<'a>;
}

/// The operating system's resolver (`getaddrinfo`).
pub(crate) struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> Lookup<'a> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// Why an address is refused, or `None` when it is a public unicast address.
///
/// IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64
/// (`64:ff9b::/96`) and 6to4 (`2002::/16`) IPv6 forms are judged by the IPv4
/// address they carry, so a private target cannot hide behind IPv6 notation.
pub(crate) fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        Some("unspecified / \"this network\" address (0.0.0.0/8)")
    } else if ip.is_loopback() {
        Some("loopback address (127.0.0.0/8)")
    } else if ip.is_private() {
        Some("private address (RFC 1918)")
    } else if ip.is_link_local() {
        Some("link-local address (169.254.0.0/16, includes cloud metadata endpoints)")
    } else if a == 100 && (b & 0xc0) == 64 {
        Some("shared / carrier-grade NAT address (100.64.0.0/10)")
    } else if ip.is_broadcast() {
        Some("broadcast address")
    } else if ip.is_multicast() {
        Some("multicast address (224.0.0.0/4)")
    } else if a >= 240 {
        Some("reserved address (240.0.0.0/4)")
    } else if a == 192 && b == 0 && c == 0 {
        Some("IETF protocol assignment address (192.0.0.0/24)")
    } else if (a == 192 && b == 0 && c == 2)
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
    {
        Some("documentation address (TEST-NET)")
    } else if a == 198 && (b & 0xfe) == 18 {
        Some("benchmarking address (198.18.0.0/15)")
    } else {
        None
    }
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    let seg = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified address (::)");
    }
    if ip.is_loopback() {
        return Some("loopback address (::1)");
    }
    if let Some(v4) = embedded_v4(ip) {
        return v4_reason(v4);
    }
    if seg[0..6] == [0, 0, 0, 0, 0, 0] {
        // ::/96 apart from ::, ::1 (handled above) and compatible forms.
        return Some("reserved IPv6 address (::/96)");
    }
    if (seg[0] & 0xfe00) == 0xfc00 {
        Some("unique local address (fc00::/7)")
    } else if (seg[0] & 0xffc0) == 0xfe80 {
        Some("link-local address (fe80::/10)")
    } else if (seg[0] & 0xffc0) == 0xfec0 {
        Some("site-local address (fec0::/10)")
    } else if (seg[0] & 0xff00) == 0xff00 {
        Some("multicast address (ff00::/8)")
    } else if seg[0] == 0x2001 && seg[1] == 0x0db8 {
        Some("documentation address (2001:db8::/32)")
    } else if seg[0] == 0x0100 && seg[1..4] == [0, 0, 0] {
        Some("discard-only address (100::/64)")
    } else {
        None
    }
}

/// The IPv4 address carried by an IPv6 address, for the forms that reach an
/// IPv4 host: mapped, compatible, NAT64 well-known prefix and 6to4.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let seg = ip.segments();
    let octets = ip.octets();
    let tail = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
    if let Some(v4) = ip.to_ipv4_mapped() {
        Some(v4)
    } else if seg[0..6] == [0, 0, 0, 0, 0, 0] && seg[6] != 0 {
        // Deprecated IPv4-compatible form ::a.b.c.d (:: and ::1 excluded by seg[6] != 0).
        Some(tail)
    } else if seg[0..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(tail)
    } else if seg[0] == 0x2002 {
        Some(Ipv4Addr::new(octets[2], octets[3], octets[4], octets[5]))
    } else {
        None
    }
}

/// The same address with IPv4-mapped IPv6 folded to IPv4, for allowlist matching.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// Exact host name, lower-case, no trailing dot.
    Host(String),
    /// `*.example.com` or `.example.com`: any subdomain (not the apex).
    Suffix(String),
    Net {
        base: IpAddr,
        prefix: u8,
    },
}

/// Hosts, IPs and CIDR ranges exempt from the private-address refusal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Allowlist {
    entries: Vec<Entry>,
}

impl Allowlist {
    /// Parses entries such as `localhost`, `*.internal.example`, `10.0.0.5`,
    /// `192.168.0.0/16`, `::1`, `fd00::/8`. Unparseable CIDRs are skipped with a warning.
    pub(crate) fn new<S: AsRef<str>>(items: &[S]) -> Self {
        let mut entries = Vec::new();
        for raw in items {
            let item = raw.as_ref().trim();
            if item.is_empty() {
                continue;
            }
            match parse_entry(item) {
                Some(entry) => entries.push(entry),
                None => tracing::warn!(entry = item, "ignoring invalid web_fetch allowlist entry"),
            }
        }
        Self { entries }
    }

    /// Whether the host name (as written in the URL) is allowlisted.
    pub(crate) fn allows_host(&self, host: &str) -> bool {
        let host = normalize_host(host);
        self.entries.iter().any(|e| match e {
            Entry::Host(h) => *h == host,
            Entry::Suffix(s) => host.len() > s.len() + 1 && host.ends_with(&format!(".{s}")),
            Entry::Net { .. } => false,
        }) || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| self.allows_ip(ip))
    }

    /// Whether the address falls in an allowlisted IP or range.
    pub(crate) fn allows_ip(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.entries.iter().any(|e| match e {
            Entry::Net { base, prefix } => in_net(ip, *base, *prefix),
            _ => false,
        })
    }
}

fn normalize_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn parse_entry(item: &str) -> Option<Entry> {
    if let Some((addr, prefix)) = item.split_once('/') {
        let base = canonical(addr.trim().parse::<IpAddr>().ok()?);
        let mut prefix: u8 = prefix.trim().parse().ok()?;
        // A mapped-v6 CIDR like ::ffff:10.0.0.0/104 becomes 10.0.0.0/8.
        if base.is_ipv4() && addr.contains(':') {
            prefix = prefix.checked_sub(96)?;
        }
        let max = if base.is_ipv4() { 32 } else { 128 };
        return (prefix <= max).then_some(Entry::Net { base, prefix });
    }
    let bare = item.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        let ip = canonical(ip);
        let prefix = if ip.is_ipv4() { 32 } else { 128 };
        return Some(Entry::Net { base: ip, prefix });
    }
    let host = normalize_host(item);
    if let Some(rest) = host.strip_prefix("*.").or_else(|| host.strip_prefix('.')) {
        return (!rest.is_empty()).then(|| Entry::Suffix(rest.to_string()));
    }
    Some(Entry::Host(host))
}

fn in_net(ip: IpAddr, base: IpAddr, prefix: u8) -> bool {
    match (ip, base) {
        (IpAddr::V4(ip), IpAddr::V4(base)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            (u32::from(ip) & mask) == (u32::from(base) & mask)
        }
        (IpAddr::V6(ip), IpAddr::V6(base)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            (u128::from(ip) & mask) == (u128::from(base) & mask)
        }
        _ => false,
    }
}

/// Checks where `url` leads and returns the vetted addresses to connect to
/// (`None` for an IP literal, which needs no resolution). Loopback, private
/// and link-local targets are refused unless `allow` lists them; `who` names
/// the tool in the refusal. The name is looked up once, through `resolver`:
/// connect only to the returned addresses, so a rebinding DNS server cannot
/// answer a second lookup differently.
pub(crate) async fn vet_target(
    url: &Url,
    allow: &Allowlist,
    who: &str,
    resolver: &dyn Resolver,
) -> Result<Option<(String, Vec<SocketAddr>)>, ToolError> {
    let port = url
        .port_or_known_default()
        .ok_or_else(|| ToolError::InvalidArguments(format!("URL `{url}` has no port")))?;
    let refuse = |what: &str, ip: IpAddr, reason: &str| {
        ToolError::Forbidden(format!(
            "{what} {ip}, a {reason}; {who} only reaches public internet addresses \
             (the operator can allowlist a host in the configuration)"
        ))
    };
    let domain = match url.host() {
        None => {
            return Err(ToolError::InvalidArguments(format!(
                "URL `{url}` has no host"
            )))
        }
        Some(Host::Ipv4(ip)) => return vet_literal(IpAddr::V4(ip), allow, refuse),
        Some(Host::Ipv6(ip)) => return vet_literal(IpAddr::V6(ip), allow, refuse),
        Some(Host::Domain(d)) => d.to_string(),
    };
    let host_allowed = allow.allows_host(&domain);
    let addrs = resolver
        .lookup(&domain, port)
        .await
        .map_err(|e| ToolError::Failed {
            message: format!("could not resolve host `{domain}`"),
            diagnostics: Some(e.to_string()),
        })?;
    if addrs.is_empty() {
        return Err(ToolError::failed(format!(
            "host `{domain}` has no addresses"
        )));
    }
    if !host_allowed {
        for addr in &addrs {
            if let Some(reason) = blocked_reason(addr.ip()) {
                if !allow.allows_ip(addr.ip()) {
                    let what = format!("host `{domain}` resolves to");
                    return Err(refuse(&what, addr.ip(), reason));
                }
            }
        }
    }
    Ok(Some((domain, addrs)))
}

fn vet_literal<F>(
    ip: IpAddr,
    allow: &Allowlist,
    refuse: F,
) -> Result<Option<(String, Vec<SocketAddr>)>, ToolError>
where
    F: Fn(&str, IpAddr, &str) -> ToolError,
{
    match blocked_reason(ip) {
        Some(reason) if !allow.allows_ip(ip) => Err(refuse("the URL points at", ip, reason)),
        _ => Ok(None),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn blocked(s: &str) -> bool {
        blocked_reason(ip(s)).is_some()
    }

    #[test]
    fn ipv4_special_ranges_are_blocked() {
        for s in [
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "239.255.255.250",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "198.19.255.255",
        ] {
            assert!(blocked(s), "{s} should be blocked");
        }
    }

    #[test]
    fn ipv4_public_addresses_pass() {
        for s in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.255.255",
            "192.169.0.1",
            "198.20.0.1",
            "223.255.255.255",
        ] {
            assert!(!blocked(s), "{s} should pass");
        }
    }

    #[test]
    fn ipv6_special_ranges_are_blocked() {
        for s in [
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "100::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::ffff:100.64.0.1",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
            "::5",
        ] {
            assert!(blocked(s), "{s} should be blocked");
        }
    }

    #[test]
    fn ipv6_public_addresses_pass() {
        for s in [
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(!blocked(s), "{s} should pass");
        }
    }

    #[test]
    fn reasons_name_the_category() {
        assert!(blocked_reason(ip("127.0.0.1"))
            .unwrap()
            .contains("loopback"));
        assert!(blocked_reason(ip("::ffff:192.168.0.1"))
            .unwrap()
            .contains("private"));
        assert!(blocked_reason(ip("fe80::1"))
            .unwrap()
            .contains("link-local"));
        assert!(blocked_reason(ip("fd00::1"))
            .unwrap()
            .contains("unique local"));
    }

    #[test]
    fn allowlist_matches_hosts_ips_and_cidrs() {
        let list = Allowlist::new(&[
            "LocalHost.",
            "*.corp.example",
            "10.1.2.3",
            "192.168.0.0/16",
            "fd00::/8",
            "[::1]",
            "",
        ]);
        assert!(list.allows_host("localhost"));
        assert!(list.allows_host("localhost."));
        assert!(!list.allows_host("localhost.evil.com"));
        assert!(list.allows_host("wiki.corp.example"));
        assert!(!list.allows_host("corp.example"));
        assert!(!list.allows_host("evilcorp.example"));
        assert!(list.allows_host("10.1.2.3"));
        assert!(list.allows_host("[::1]"));
        assert!(list.allows_ip(ip("10.1.2.3")));
        assert!(!list.allows_ip(ip("10.1.2.4")));
        assert!(list.allows_ip(ip("192.168.44.5")));
        assert!(list.allows_ip(ip("::ffff:192.168.44.5")));
        assert!(!list.allows_ip(ip("192.169.0.1")));
        assert!(list.allows_ip(ip("fd12::1")));
        assert!(!list.allows_ip(ip("fc00::1")));
        assert!(list.allows_ip(ip("::1")));
        assert!(!list.allows_ip(ip("127.0.0.1")));
    }

    #[test]
    fn allowlist_edge_prefixes_and_invalid_entries() {
        let list = Allowlist::new(&["0.0.0.0/0", "1.2.3.4/33", "::ffff:10.0.0.0/104"]);
        assert!(list.allows_ip(ip("127.0.0.1")));
        assert!(!list.allows_ip(ip("::1")), "v4 /0 must not cover v6");
        assert_eq!(list.entries.len(), 2, "the /33 entry is invalid");
        let mapped = Allowlist::new(&["::ffff:10.0.0.0/104"]);
        assert!(mapped.allows_ip(ip("10.9.9.9")));
        assert!(!mapped.allows_ip(ip("11.0.0.1")));
        assert!(Allowlist::new::<&str>(&[]).entries.is_empty());
        assert!(!Allowlist::default().allows_host("localhost"));
    }
}
