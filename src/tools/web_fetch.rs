//! web_fetch: GET a public http(s) URL as readable text, guarded against private targets.

use super::args::parse_args;
use super::html_text::html_to_text;
use super::http_body::{read_capped, CappedBody};
use super::net_guard::{vet_target, Allowlist, Resolver, SystemResolver};
use super::{Tool, ToolContext, ToolError, ToolSpec};
use reqwest::header::{ACCEPT, LOCATION};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

const MAX_REDIRECTS: usize = 5;
const DEFAULT_MAX_CHARS: usize = 20_000;
const MAX_MAX_CHARS: usize = 100_000;
const USER_AGENT: &str = concat!("switchboard-web-fetch/", env!("CARGO_PKG_VERSION"));

/// Limits and exemptions for `web_fetch`.
#[derive(Debug, Clone)]
pub struct WebFetchConfig {
    /// Whole fetch, redirects included.
    pub timeout: Duration,
    /// Body bytes read; the rest is not downloaded.
    pub max_bytes: usize,
    /// Hosts (`intranet.local`, `*.corp.example`), IPs or CIDRs (`10.0.0.0/8`)
    /// that may be fetched even though they are loopback/private/link-local.
    pub allow: Vec<String>,
}

impl Default for WebFetchConfig {
    /// 20 s, 2 MB, nothing allowlisted.
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(20),
            max_bytes: 2_000_000,
            allow: Vec::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    url: String,
    max_chars: Option<usize>,
}

/// `web_fetch`: fetches a URL and returns its text.
pub struct WebFetchTool {
    config: WebFetchConfig,
    allow: Allowlist,
    resolver: Arc<dyn Resolver>,
    spec: ToolSpec,
}

impl WebFetchTool {
    pub fn new(config: WebFetchConfig) -> Self {
        let spec = ToolSpec {
            name: "web_fetch".into(),
            display_name: "Fetch web page".into(),
            description: format!(
                "Fetch an http(s) URL with GET and return its content as text: HTML is \
                 reduced to readable text (no scripts, styles or markup), JSON and other text \
                 is returned as is, binary content is refused. The result starts with the \
                 final URL, HTTP status and content type; non-2xx responses are returned too. \
                 Up to {MAX_REDIRECTS} redirects are followed. Only public internet addresses \
                 are reachable (loopback, private and link-local targets are refused). Output \
                 is cut at `max_chars` (default {DEFAULT_MAX_CHARS}, max {MAX_MAX_CHARS}) with \
                 a note."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "Absolute http:// or https:// URL."},
                    "max_chars": {"type": "integer", "minimum": 1, "maximum": MAX_MAX_CHARS, "description": format!("Maximum characters of content to return. Default {DEFAULT_MAX_CHARS}.")}
                },
                "required": ["url"],
                "additionalProperties": false
            }),
            concurrency_safe: true,
            requires_approval: false,
            background: false,
            key_fields: Vec::new(),
        };
        let allow = Allowlist::new(&config.allow);
        Self {
            config,
            allow,
            resolver: Arc::new(SystemResolver),
            spec,
        }
    }

    /// The same tool looking host names up through `resolver`.
    #[cfg(test)]
    fn with_resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.resolver = resolver;
        self
    }

    async fn fetch(&self, url: Url, max_chars: usize) -> Result<String, ToolError> {
        let original = url.clone();
        let mut current = url;
        for hop in 0..=MAX_REDIRECTS {
            check_scheme(&current)?;
            let vetted = vet_target(&current, &self.allow, "web_fetch", &*self.resolver).await?;
            let mut builder = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .user_agent(USER_AGENT)
                .timeout(self.config.timeout);
            if let Some((domain, addrs)) = &vetted {
                // Connect exactly to the addresses vetted above (no second lookup
                // that a rebinding DNS server could answer differently).
                builder = builder.resolve_to_addrs(domain, addrs);
            }
            let client = builder.build().map_err(|e| ToolError::Failed {
                message: "could not set up the HTTP client".into(),
                diagnostics: Some(e.to_string()),
            })?;
            let resp = client
                .get(current.clone())
                .header(ACCEPT, "text/html,application/json,text/*;q=0.9,*/*;q=0.5")
                .send()
                .await
                .map_err(|e| request_failed(&current, e))?;
            if resp.status().is_redirection() {
                if let Some(loc) = resp.headers().get(LOCATION) {
                    let loc = loc.to_str().map_err(|_| {
                        ToolError::failed(format!(
                            "`{current}` redirected to an unreadable location"
                        ))
                    })?;
                    let next = current.join(loc).map_err(|e| {
                        ToolError::failed(format!(
                            "`{current}` redirected to an invalid URL `{loc}`: {e}"
                        ))
                    })?;
                    if hop == MAX_REDIRECTS {
                        return Err(ToolError::failed(format!(
                            "too many redirects (more than {MAX_REDIRECTS}); last one to `{next}`"
                        )));
                    }
                    current = next;
                    continue;
                }
            }
            return self.read(resp, &original, max_chars).await;
        }
        Err(ToolError::failed("too many redirects"))
    }

    async fn read(
        &self,
        mut resp: reqwest::Response,
        original: &Url,
        max_chars: usize,
    ) -> Result<String, ToolError> {
        let final_url = resp.url().clone();
        let status = resp.status();
        let CappedBody {
            content_type,
            bytes: body,
            cut: body_cut,
        } = read_capped(&mut resp, self.config.max_bytes)
            .await
            .map_err(|e| request_failed(&final_url, e))?;

        let mut header = format!("URL: {}\nStatus: {status}\n", redacted(&final_url));
        if !content_type.is_empty() {
            header.push_str(&format!("Content-Type: {content_type}\n"));
        }
        if final_url != *original {
            header.push_str(&format!("(redirected from {})\n", redacted(original)));
        }
        if body_cut {
            header.push_str(&format!(
                "[body cut: only the first {} bytes were downloaded]\n",
                self.config.max_bytes
            ));
        }
        let text = match classify(&content_type, &body) {
            Kind::Html => html_to_text(&String::from_utf8_lossy(&body)),
            Kind::Text => String::from_utf8_lossy(&body).into_owned(),
            Kind::Binary => {
                return Err(ToolError::failed(format!(
                    "{header}the response is binary ({}, {} bytes) and web_fetch only returns \
                     text",
                    if content_type.is_empty() {
                        "no content type"
                    } else {
                        &content_type
                    },
                    body.len()
                )))
            }
        };
        let total = text.chars().count();
        if total == 0 {
            return Ok(format!("{header}\n(empty body)"));
        }
        match text.char_indices().nth(max_chars) {
            None => Ok(format!("{header}\n{text}")),
            Some((cut, _)) => Ok(format!(
                "{header}[content truncated: showing the first {max_chars} of {total} chars; \
                 pass a larger max_chars (up to {MAX_MAX_CHARS}) to see more]\n\n{}",
                &text[..cut]
            )),
        }
    }
}

fn check_scheme(url: &Url) -> Result<(), ToolError> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(ToolError::Forbidden(format!(
            "`{other}:` URLs are not supported; web_fetch only fetches http:// and https:// URLs"
        ))),
    }
}

fn request_failed(url: &Url, e: reqwest::Error) -> ToolError {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    ToolError::Failed {
        message: format!("fetching `{}`: {what}", redacted(url)),
        diagnostics: Some(e.without_url().to_string()),
    }
}

/// The URL without user info (which may hold credentials).
fn redacted(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

enum Kind {
    Html,
    Text,
    Binary,
}

fn classify(content_type: &str, body: &[u8]) -> Kind {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime.contains("html") {
        return Kind::Html;
    }
    let textual = mime.starts_with("text/")
        || [
            "json",
            "xml",
            "javascript",
            "ecmascript",
            "yaml",
            "csv",
            "toml",
        ]
        .iter()
        .any(|t| mime.contains(t));
    if textual {
        return Kind::Text;
    }
    let sniff = &body[..body.len().min(8192)];
    if !mime.is_empty() && mime != "application/octet-stream" || sniff.contains(&0) {
        return Kind::Binary;
    }
    // Unknown type: decide from the bytes (allowing a char cut at the end).
    match std::str::from_utf8(sniff) {
        Err(e) if e.error_len().is_some() => Kind::Binary,
        _ => {
            let head = String::from_utf8_lossy(&sniff[..sniff.len().min(512)]).to_ascii_lowercase();
            if head.contains("<!doctype html") || head.contains("<html") {
                Kind::Html
            } else {
                Kind::Text
            }
        }
    }
}

#[async_trait::async_trait]
impl Tool for WebFetchTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: FetchArgs = parse_args("web_fetch", args)?;
        let max_chars = args.max_chars.unwrap_or(DEFAULT_MAX_CHARS);
        if max_chars == 0 {
            return Err(ToolError::InvalidArguments(
                "max_chars must be at least 1".into(),
            ));
        }
        let max_chars = max_chars.min(MAX_MAX_CHARS);
        let url = Url::parse(args.url.trim()).map_err(|e| {
            ToolError::InvalidArguments(format!(
                "`{}` is not a valid absolute URL ({e}); give e.g. `https://example.com/page`",
                args.url
            ))
        })?;
        check_scheme(&url)?;
        tokio::select! {
            r = tokio::time::timeout(self.config.timeout, self.fetch(url, max_chars)) => {
                r.map_err(|_| ToolError::Timeout(self.config.timeout))?
            }
            () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::net_guard::Lookup;
    use super::*;
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[test]
    fn classification() {
        assert!(matches!(
            classify("text/html; charset=utf-8", b""),
            Kind::Html
        ));
        assert!(matches!(classify("application/json", b"{}"), Kind::Text));
        assert!(matches!(
            classify("application/problem+json", b"{}"),
            Kind::Text
        ));
        assert!(matches!(classify("image/png", b"\x89PNG"), Kind::Binary));
        assert!(matches!(classify("", b"<!DOCTYPE html><p>x"), Kind::Html));
        assert!(matches!(classify("", b"plain"), Kind::Text));
        assert!(matches!(
            classify("application/octet-stream", b"a\0b"),
            Kind::Binary
        ));
        assert!(matches!(
            classify("", &[0xff, 0xfe, 0x00, 0x41]),
            Kind::Binary
        ));
    }

    /// A DNS server that rebinds: lookup `n` gets answer `n` (the last repeats).
    struct Rebinding {
        answers: Vec<std::net::IpAddr>,
        asked: AtomicUsize,
    }

    impl Resolver for Rebinding {
        fn lookup<'a>(&'a self, _host: &'a str, port: u16) -> Lookup<'a> {
            let n = self.asked.fetch_add(1, Ordering::SeqCst);
            let ip = self.answers[n.min(self.answers.len() - 1)];
            Box::pin(async move { Ok(vec![SocketAddr::new(ip, port)]) })
        }
    }

    /// Answers every request with `body`, except `/hop`, which redirects to
    /// `/`; counts the connections it accepted.
    fn serve(listener: TcpListener, body: &'static str) -> Arc<AtomicUsize> {
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let response = if request.starts_with(b"GET /hop ") {
                    "HTTP/1.1 302 Found\r\nLocation: /\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
                } else {
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let _ = stream.write_all(response.as_bytes()).await;
            }
        });
        accepted
    }

    /// Two servers on one port: 127.0.0.1 (allowlisted, the address the
    /// check sees) and 127.0.0.2 (loopback, refused: where a rebinding DNS
    /// server would send the second lookup).
    async fn checked_and_rebound() -> (u16, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        loop {
            let checked = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = checked.local_addr().unwrap().port();
            if let Ok(rebound) = TcpListener::bind(("127.0.0.2", port)).await {
                return (port, serve(checked, "checked"), serve(rebound, "rebound"));
            }
        }
    }

    fn rebinding_fetcher(answers: &[&str]) -> (WebFetchTool, Arc<Rebinding>) {
        let dns = Arc::new(Rebinding {
            answers: answers.iter().map(|a| a.parse().unwrap()).collect(),
            asked: AtomicUsize::new(0),
        });
        let tool = WebFetchTool::new(WebFetchConfig {
            allow: vec!["127.0.0.1".into()],
            ..WebFetchConfig::default()
        })
        .with_resolver(Arc::clone(&dns) as Arc<dyn Resolver>);
        (tool, dns)
    }

    #[tokio::test]
    async fn a_name_that_rebinds_is_fetched_from_the_address_that_was_checked() {
        let (port, checked, rebound) = checked_and_rebound().await;
        let url = |path: &str| Url::parse(&format!("http://rebind.test:{port}{path}")).unwrap();

        // First answer vetted, second one private: the connection goes to the
        // first, and the name is looked up once.
        let (tool, dns) = rebinding_fetcher(&["127.0.0.1", "127.0.0.2"]);
        let out = tool.fetch(url("/"), 1_000).await.unwrap();
        assert!(out.ends_with("\nchecked"), "{out}");
        assert_eq!(dns.asked.load(Ordering::SeqCst), 1);

        // A redirect is a new lookup, vetted again: the rebound answer is refused.
        let (tool, dns) = rebinding_fetcher(&["127.0.0.1", "127.0.0.2"]);
        let err = tool.fetch(url("/hop"), 1_000).await.unwrap_err();
        assert_eq!(dns.asked.load(Ordering::SeqCst), 2);
        assert!(
            matches!(&err, ToolError::Forbidden(m) if m.contains("resolves to 127.0.0.2")),
            "{err}"
        );

        // One private address among the answers refuses the name outright.
        let (tool, _) = rebinding_fetcher(&["127.0.0.2"]);
        let err = tool.fetch(url("/"), 1_000).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::Forbidden(m) if m.contains("loopback")),
            "{err}"
        );

        assert_eq!(checked.load(Ordering::SeqCst), 2, "the / and /hop requests");
        assert_eq!(
            rebound.load(Ordering::SeqCst),
            0,
            "a refused address was connected to"
        );
    }

    #[test]
    fn user_info_is_redacted() {
        let u = Url::parse("https://user:pw@example.com/x").unwrap();
        assert_eq!(redacted(&u), "https://example.com/x");
    }
}
