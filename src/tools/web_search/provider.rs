//! The three search APIs' wire formats: how a query is asked and what the
//! answer holds. SearXNG: `GET {base}/search?q=…&format=json` (JSON must be
//! enabled in the instance's settings, else 403); Brave: `GET
//! …/res/v1/web/search?q=…&count=N` with `X-Subscription-Token`; Tavily:
//! `POST …/search` with a JSON body and a bearer key.

use super::{SearchConfig, SearchProvider};
use reqwest::header::{ACCEPT, AUTHORIZATION};
use reqwest::{Client, RequestBuilder, StatusCode};
use serde::Deserialize;
use serde_json::json;
use url::Url;

/// One result: what the model reads of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// The request for `query`, at most `count` results.
pub(super) fn request(
    client: &Client,
    config: &SearchConfig,
    query: &str,
    count: u8,
) -> RequestBuilder {
    let key = config.api_key.as_ref().map(|k| k.expose()).unwrap_or("");
    match config.provider {
        SearchProvider::Searxng => client
            .get(searxng_url(&config.url))
            .query(&[("q", query), ("format", "json"), ("pageno", "1")])
            .header(ACCEPT, "application/json"),
        SearchProvider::Brave => client
            .get(config.url.clone())
            .query(&[("q", query), ("count", &count.to_string())])
            .header(ACCEPT, "application/json")
            .header("X-Subscription-Token", key),
        SearchProvider::Tavily => client
            .post(config.url.clone())
            .header(AUTHORIZATION, format!("Bearer {key}"))
            .json(&json!({
                "query": query,
                "max_results": count,
                "search_depth": "basic",
                "include_answer": false,
            })),
    }
}

/// SearXNG's search endpoint under the instance's base URL (the base may
/// already name it).
fn searxng_url(base: &Url) -> Url {
    if base.path().trim_end_matches('/').ends_with("/search") {
        return base.clone();
    }
    let mut url = base.clone();
    let path = format!("{}/search", base.path().trim_end_matches('/'));
    url.set_path(&path);
    url
}

/// Why a provider's answer gave no results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The key was refused (or is missing).
    Key(StatusCode),
    /// SearXNG answers 403 when its JSON output is not enabled.
    JsonDisabled,
    /// Rate limited; wait this many seconds when the provider said.
    RateLimited(Option<u64>),
    /// Any other status.
    Status(StatusCode),
    /// A 2xx whose body is not the provider's JSON.
    Malformed,
}

/// The refusal a non-2xx status stands for; `retry_after` is the wait the
/// provider named, if any.
pub(super) fn refusal(
    provider: SearchProvider,
    status: StatusCode,
    retry_after: Option<u64>,
) -> Refusal {
    match (provider, status.as_u16()) {
        (_, 429) => Refusal::RateLimited(retry_after),
        (SearchProvider::Searxng, 403) => Refusal::JsonDisabled,
        // Brave answers an unknown token with 422 SUBSCRIPTION_TOKEN_INVALID.
        (SearchProvider::Brave, 401 | 403 | 422) => Refusal::Key(status),
        (SearchProvider::Tavily, 401 | 403) => Refusal::Key(status),
        _ => Refusal::Status(status),
    }
}

#[derive(Deserialize)]
struct SearxngAnswer {
    results: Vec<SearxngResult>,
}

#[derive(Deserialize)]
struct SearxngResult {
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct BraveAnswer {
    /// Absent when nothing was found.
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
struct TavilyAnswer {
    results: Vec<TavilyResult>,
}

#[derive(Deserialize)]
struct TavilyResult {
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: Option<String>,
}

/// The results of a 2xx answer, at most `count`.
pub(super) fn parse(provider: SearchProvider, body: &[u8], count: u8) -> Result<Vec<Hit>, Refusal> {
    let hit = |title: String, url: String, snippet: Option<String>| Hit {
        title: strip_tags(&title),
        url,
        snippet: strip_tags(&snippet.unwrap_or_default()),
    };
    let hits: Vec<Hit> = match provider {
        SearchProvider::Searxng => serde_json::from_slice::<SearxngAnswer>(body)
            .map_err(|_| Refusal::Malformed)?
            .results
            .into_iter()
            .map(|r| hit(r.title, r.url, r.content))
            .collect(),
        SearchProvider::Brave => serde_json::from_slice::<BraveAnswer>(body)
            .map_err(|_| Refusal::Malformed)?
            .web
            .map(|w| w.results)
            .unwrap_or_default()
            .into_iter()
            .map(|r| hit(r.title, r.url, r.description))
            .collect(),
        SearchProvider::Tavily => serde_json::from_slice::<TavilyAnswer>(body)
            .map_err(|_| Refusal::Malformed)?
            .results
            .into_iter()
            .map(|r| hit(r.title, r.url, r.content))
            .collect(),
    };
    Ok(hits
        .into_iter()
        .filter(|h| h.url.starts_with("http://") || h.url.starts_with("https://"))
        .take(usize::from(count))
        .collect())
}

/// Text without the highlighting tags providers put in snippets
/// (`<strong>`), entities of those tags decoded, whitespace folded.
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_providers_answer_reads_as_titles_urls_and_snippets() {
        let brave = br#"{"type":"search","web":{"results":[
            {"title":"Rust <strong>1.95</strong>","url":"https://blog.rust-lang.org/","description":"The <strong>release</strong> &amp; notes"},
            {"title":"Not a page","url":"javascript:alert(1)","description":"x"}]}}"#;
        let hits = parse(SearchProvider::Brave, brave, 5).unwrap();
        assert_eq!(
            hits,
            [Hit {
                title: "Rust 1.95".into(),
                url: "https://blog.rust-lang.org/".into(),
                snippet: "The release & notes".into()
            }]
        );
        let nothing = br#"{"type":"search","query":{"original":"zzz"}}"#;
        assert!(parse(SearchProvider::Brave, nothing, 5).unwrap().is_empty());
        let tavily = br#"{"query":"q","results":[{"title":"A","url":"https://a.example","content":"a","score":0.9},{"title":"B","url":"https://b.example","content":"b","score":0.5}],"response_time":0.4}"#;
        assert_eq!(parse(SearchProvider::Tavily, tavily, 1).unwrap().len(), 1);
        let searx = br#"{"query":"q","number_of_results":0,"results":[{"url":"https://s.example","title":"S","content":"s","engine":"ddg"}]}"#;
        assert_eq!(
            parse(SearchProvider::Searxng, searx, 5).unwrap()[0].title,
            "S"
        );
        assert_eq!(
            parse(SearchProvider::Tavily, b"<html>", 5),
            Err(Refusal::Malformed)
        );
    }

    #[test]
    fn statuses_map_to_what_the_operator_must_do() {
        use SearchProvider::*;
        let s = |n| StatusCode::from_u16(n).unwrap();
        assert_eq!(refusal(Brave, s(422), None), Refusal::Key(s(422)));
        assert_eq!(refusal(Tavily, s(401), None), Refusal::Key(s(401)));
        assert_eq!(refusal(Searxng, s(403), None), Refusal::JsonDisabled);
        assert_eq!(
            refusal(Brave, s(429), Some(3)),
            Refusal::RateLimited(Some(3))
        );
        assert_eq!(refusal(Searxng, s(500), None), Refusal::Status(s(500)));
    }

    #[test]
    fn searxng_endpoint_is_found_under_its_base() {
        let u = |s: &str| searxng_url(&Url::parse(s).unwrap()).to_string();
        assert_eq!(u("http://searx.lan:8080"), "http://searx.lan:8080/search");
        assert_eq!(u("http://h/searx/"), "http://h/searx/search");
        assert_eq!(u("http://h/searx/search"), "http://h/searx/search");
    }
}
