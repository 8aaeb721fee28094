//! A tool that calls one operator-declared HTTP API (see [`super::http_api_defs`]):
//! the model fills the parameters; the method, host and credential are the
//! operator's. Path placeholders are percent-encoded, other arguments become
//! the query (GET, DELETE) or a JSON body; redirects are not followed; the
//! credential is scrubbed from whatever comes back.

use super::http_api_defs::{AuthPlace, HttpToolDef};
use super::http_body::{read_capped, CappedBody};
use super::net_guard::{vet_target, Allowlist, SystemResolver};
use super::{Tool, ToolContext, ToolError, ToolSpec};
use serde_json::{Map, Value};
use switchboard_platform::Secret;
use url::Url;

/// Response bytes read at most.
const MAX_BYTES: usize = 1_000_000;
/// Response characters handed to the model.
const MAX_CHARS: usize = 20_000;
const USER_AGENT: &str = concat!("switchboard-http-tool/", env!("CARGO_PKG_VERSION"));

pub struct HttpApiTool {
    def: HttpToolDef,
    spec: ToolSpec,
    allow: Allowlist,
}

impl HttpApiTool {
    /// `allow` is the operator's allowlist of private hosts (`WEB_FETCH_ALLOW`).
    pub fn new(def: HttpToolDef, allow: &[String]) -> HttpApiTool {
        let spec = ToolSpec {
            name: def.name.clone(),
            display_name: def.name.clone(),
            description: format!(
                "{}\n(HTTP API: {} {}; the response status and body are returned.)",
                def.description, def.method, def.url
            ),
            parameters: def.parameters.schema.clone(),
            concurrency_safe: def.method == reqwest::Method::GET,
            requires_approval: def.requires_approval,
            background: false,
            key_fields: Vec::new(),
        };
        HttpApiTool {
            spec,
            allow: Allowlist::new(allow),
            def,
        }
    }

    /// `text` with the credential replaced (as is, and as a URL would carry it).
    fn scrub(&self, text: &str) -> String {
        match &self.def.auth {
            Some((_, secret)) => {
                let encoded: String =
                    url::form_urlencoded::byte_serialize(secret.expose().as_bytes()).collect();
                Secret::new(encoded).scrub(&secret.scrub(text))
            }
            None => text.to_owned(),
        }
    }

    /// The request URL and the JSON body (for methods that carry one).
    fn build(&self, args: &Map<String, Value>) -> Result<(Url, Option<Value>), ToolError> {
        let mut url = self.def.url.clone();
        for p in &self.def.placeholders {
            let value = args.get(p).map(plain).unwrap_or_default();
            // URL parsers read `.`/`..` segments (even percent-encoded) as
            // moves in the path: a value must not walk the API's tree.
            if value == "." || value == ".." {
                return Err(ToolError::InvalidArguments(format!(
                    "`{p}` cannot be `{value}`"
                )));
            }
            url = url.replace(&format!("{{{p}}}"), &encode(&value));
        }
        let mut url = Url::parse(&url).map_err(|e| {
            ToolError::InvalidArguments(format!("the arguments make an invalid URL: {e}"))
        })?;
        let rest: Map<String, Value> = args
            .iter()
            .filter(|(k, _)| !self.def.placeholders.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let in_query = matches!(
            self.def.method,
            reqwest::Method::GET | reqwest::Method::DELETE
        );
        let body = if in_query {
            for (k, v) in &rest {
                match v {
                    Value::Array(items) => {
                        for item in items {
                            url.query_pairs_mut().append_pair(k, &plain(item));
                        }
                    }
                    Value::Null => {}
                    other => {
                        url.query_pairs_mut().append_pair(k, &plain(other));
                    }
                }
            }
            None
        } else {
            Some(Value::Object(rest))
        };
        if let Some((AuthPlace::Query(name), secret)) = &self.def.auth {
            url.query_pairs_mut().append_pair(name, secret.expose());
        }
        Ok((url, body))
    }

    /// [`Self::build`]'s URL, for the property tests.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn build_for_test(&self, args: &Map<String, Value>) -> Result<Url, ToolError> {
        self.build(args).map(|(url, _)| url)
    }

    async fn send(&self, url: Url, body: Option<Value>) -> Result<String, ToolError> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(USER_AGENT)
            .timeout(self.def.timeout);
        if !self.def.allow_private {
            if let Some((domain, addrs)) =
                vet_target(&url, &self.allow, &self.def.name, &SystemResolver).await?
            {
                builder = builder.resolve_to_addrs(&domain, &addrs);
            }
        }
        let client = builder.build().map_err(|e| ToolError::Failed {
            message: "could not set up the HTTP client".into(),
            diagnostics: Some(e.to_string()),
        })?;
        let mut request = client.request(self.def.method.clone(), url);
        for (name, value) in &self.def.headers {
            request = request.header(name, value);
        }
        if let Some((AuthPlace::Header { name, prefix }, secret)) = &self.def.auth {
            request = request.header(name, format!("{prefix}{}", secret.expose()));
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let mut resp = request.send().await.map_err(|e| self.failed(&e))?;
        let status = resp.status();
        let CappedBody {
            content_type,
            bytes,
            cut,
        } = read_capped(&mut resp, MAX_BYTES)
            .await
            .map_err(|e| self.failed(&e))?;
        let text = String::from_utf8_lossy(&bytes);
        let mut out = format!("HTTP {status}");
        if !content_type.is_empty() {
            out.push_str(&format!(" ({content_type})"));
        }
        out.push('\n');
        let total = text.chars().count();
        match text.char_indices().nth(MAX_CHARS) {
            Some((end, _)) => out.push_str(&format!(
                "[body truncated: the first {MAX_CHARS} of {total} characters]\n{}",
                &text[..end]
            )),
            None if cut => out.push_str(&format!("[body cut at {MAX_BYTES} bytes]\n{text}")),
            None if text.is_empty() => out.push_str("(empty body)"),
            None => out.push_str(&text),
        }
        Ok(self.scrub(&out))
    }

    fn failed(&self, e: &reqwest::Error) -> ToolError {
        let what = if e.is_timeout() {
            format!("timed out after {:?}", self.def.timeout)
        } else if e.is_connect() {
            "could not connect".to_owned()
        } else {
            "the request failed".to_owned()
        };
        // reqwest's message carries the URL, which may carry the credential.
        let detail = self.scrub(&format!("{}", DisplayWithoutUrl(e)));
        ToolError::Failed {
            message: format!("{} {}: {what}", self.def.method, self.def.url),
            diagnostics: Some(detail),
        }
    }
}

/// A reqwest error's text without its URL.
struct DisplayWithoutUrl<'a>(&'a reqwest::Error);

impl std::fmt::Display for DisplayWithoutUrl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = self.0.to_string();
        if let Some(url) = self.0.url() {
            text = text.replace(url.as_str(), "<url>");
        }
        f.write_str(&text)
    }
}

#[async_trait::async_trait]
impl Tool for HttpApiTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn source(&self) -> super::ToolSource {
        super::ToolSource::Http
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<String, ToolError> {
        let args = self.def.parameters.check(args)?;
        let (url, body) = self.build(&args)?;
        self.send(url, body).await.map_err(|e| match e {
            ToolError::Failed {
                message,
                diagnostics,
            } => ToolError::Failed {
                message: self.scrub(&message),
                diagnostics: diagnostics.map(|d| self.scrub(&d)),
            },
            other => other,
        })
    }
}

/// A value as text: strings as they are, anything else as JSON.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters, so a
/// value stays inside its path segment (`../` and `/` included).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_values_cannot_leave_their_segment() {
        assert_eq!(encode("a b/../c?d"), "a%20b%2F..%2Fc%3Fd");
        assert_eq!(encode("東京"), "%E6%9D%B1%E4%BA%AC");
    }
}
