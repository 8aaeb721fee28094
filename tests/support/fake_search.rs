//! A fake of the three search APIs `web_search` speaks, each as strict as the
//! real one, on one loopback server:
//! - SearXNG: `GET /searxng/search?q=…&format=json`; 403 when JSON output is
//!   not enabled (the instance's default), 400 without `q`.
//! - Brave: `GET /brave/res/v1/web/search?q=…&count=N` with
//!   `X-Subscription-Token`; 422 `SUBSCRIPTION_TOKEN_INVALID` for a wrong or
//!   missing token, 422 `VALIDATION` for an empty query, one over 400
//!   characters or 50 words, or a count outside 1–20; 429 with
//!   `X-RateLimit-Reset` when rate limiting.
//! - Tavily: `POST /tavily/search` with `Authorization: Bearer` and a JSON
//!   body; 401 for a wrong key, 400 without `query` or with `max_results`
//!   outside 0–20.
//!
//! It also serves the result pages (`GET /page/N`), so `web_fetch` can read
//! a result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::serve::Served;

pub const BRAVE_KEY: &str = "BSA-test-subscription-token-1234";
pub const TAVILY_KEY: &str = "tvly-test-key-5678";

/// One request as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub provider: &'static str,
    pub query: String,
    pub count: Option<u64>,
}

#[derive(Default)]
struct Inner {
    /// (title, path of the page under this server, snippet).
    results: Vec<(String, String, String)>,
    pages: HashMap<String, String>,
    asked: Vec<Asked>,
    searxng_json: bool,
    rate_limited: bool,
}

pub struct FakeSearch {
    served: Served,
    inner: Arc<Mutex<Inner>>,
}

type Shared = State<Arc<Mutex<Inner>>>;

impl FakeSearch {
    pub async fn start() -> FakeSearch {
        let inner = Arc::new(Mutex::new(Inner {
            searxng_json: true,
            ..Inner::default()
        }));
        let app = Router::new()
            .route("/searxng/search", get(searxng))
            .route("/brave/res/v1/web/search", get(brave))
            .route("/tavily/search", post(tavily))
            .route("/page/{n}", get(page))
            .with_state(Arc::clone(&inner));
        let served = Served::loopback(app, CancellationToken::new(), "fake search").await;
        FakeSearch { served, inner }
    }

    /// `SEARCH_URL` for `provider` (searxng, brave or tavily).
    pub fn url(&self, provider: &str) -> String {
        let addr = self.served.addr;
        match provider {
            "brave" => format!("http://{addr}/brave/res/v1/web/search"),
            "tavily" => format!("http://{addr}/tavily/search"),
            _ => format!("http://{addr}/searxng"),
        }
    }

    /// A result whose page (`/page/N`) holds `body`; returns the page's URL.
    pub fn result(&self, title: &str, snippet: &str, body: &str) -> String {
        let mut inner = self.lock();
        let path = format!("/page/{}", inner.results.len() + 1);
        inner.pages.insert(path.clone(), body.to_owned());
        inner
            .results
            .push((title.to_owned(), path.clone(), snippet.to_owned()));
        format!("http://{}{path}", self.served.addr)
    }

    /// SearXNG's default: JSON output off (403).
    pub fn disable_searxng_json(&self) {
        self.lock().searxng_json = false;
    }

    /// Every API answers 429 from now on.
    pub fn rate_limit(&self) {
        self.lock().rate_limited = true;
    }

    pub fn asked(&self) -> Vec<Asked> {
        self.lock().asked.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The results as (title, absolute URL, snippet), at most `n`.
fn results(inner: &Inner, headers: &HeaderMap, n: usize) -> Vec<(String, String, String)> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    inner
        .results
        .iter()
        .take(n)
        .map(|(t, p, s)| (t.clone(), format!("http://{host}{p}"), s.clone()))
        .collect()
}

async fn searxng(
    State(inner): Shared,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let mut inner = lock(&inner);
    if q.get("format").map(String::as_str) != Some("json") || !inner.searxng_json {
        return (StatusCode::FORBIDDEN, Html("<h1>403 Forbidden</h1>")).into_response();
    }
    let Some(query) = q.get("q").filter(|s| !s.trim().is_empty()).cloned() else {
        return (StatusCode::BAD_REQUEST, Html("<h1>400 Bad Request</h1>")).into_response();
    };
    inner.asked.push(Asked {
        provider: "searxng",
        query: query.clone(),
        count: None,
    });
    if inner.rate_limited {
        return (StatusCode::TOO_MANY_REQUESTS, Html("Too Many Requests")).into_response();
    }
    let results: Vec<Value> = results(&inner, &headers, 20)
        .into_iter()
        .map(|(title, url, content)| json!({"url": url, "title": title, "content": content, "engine": "duckduckgo", "engines": ["duckduckgo"], "score": 1.0, "category": "general"}))
        .collect();
    Json(json!({"query": query, "number_of_results": 0, "results": results, "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []})).into_response()
}

fn brave_error(status: StatusCode, code: &str, detail: &str) -> Response {
    let body = json!({"type": "ErrorResponse", "error": {"id": "00000000-0000-0000-0000-000000000000", "status": status.as_u16(), "code": code, "detail": detail, "meta": {}}, "time": 1_700_000_000});
    (status, Json(body)).into_response()
}

async fn brave(
    State(inner): Shared,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let token = headers
        .get("x-subscription-token")
        .and_then(|v| v.to_str().ok());
    if token != Some(BRAVE_KEY) {
        return brave_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "SUBSCRIPTION_TOKEN_INVALID",
            "The provided subscription token is invalid.",
        );
    }
    let query = q.get("q").cloned().unwrap_or_default();
    if query.trim().is_empty()
        || query.chars().count() > 400
        || query.split_whitespace().count() > 50
    {
        return brave_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION",
            "Unable to validate request parameter(s).",
        );
    }
    let count = match q.get("count").map(|c| c.parse::<u64>()) {
        None => 20,
        Some(Ok(c)) if (1..=20).contains(&c) => c,
        Some(_) => {
            return brave_error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "VALIDATION",
                "Unable to validate request parameter(s).",
            )
        }
    };
    let mut inner = lock(&inner);
    inner.asked.push(Asked {
        provider: "brave",
        query: query.clone(),
        count: Some(count),
    });
    if inner.rate_limited {
        let mut resp = brave_error(
            StatusCode::TOO_MANY_REQUESTS,
            "RATE_LIMITED",
            "Request rate limit exceeded for plan.",
        );
        resp.headers_mut().insert(
            "x-ratelimit-reset",
            header::HeaderValue::from_static("7, 1419704"),
        );
        return resp;
    }
    let results: Vec<Value> = results(&inner, &headers, count as usize)
        .into_iter()
        .map(|(title, url, description)| json!({"type": "search_result", "title": title, "url": url, "description": format!("<strong>{}</strong>", escape(&description)), "language": "en", "family_friendly": true}))
        .collect();
    let mut body = json!({"type": "search", "query": {"original": query}});
    if !results.is_empty() {
        body["web"] = json!({"type": "search", "results": results, "family_friendly": true});
    }
    Json(body).into_response()
}

/// Brave's snippets are HTML: text escaped, highlights in `<strong>`.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&#x27;")
}

fn tavily_error(status: StatusCode, error: &str) -> Response {
    (status, Json(json!({"detail": {"error": error}}))).into_response()
}

async fn tavily(State(inner): Shared, headers: HeaderMap, body: String) -> Response {
    let key = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if key != Some(TAVILY_KEY) {
        return tavily_error(
            StatusCode::UNAUTHORIZED,
            "Unauthorized: missing or invalid API key.",
        );
    }
    let Ok(body) = serde_json::from_str::<Value>(&body) else {
        return tavily_error(StatusCode::BAD_REQUEST, "Invalid JSON body.");
    };
    let Some(query) = body["query"].as_str().filter(|q| !q.trim().is_empty()) else {
        return tavily_error(StatusCode::BAD_REQUEST, "Query is missing.");
    };
    let count = match &body["max_results"] {
        Value::Null => 5,
        v => match v.as_u64() {
            Some(n) if n <= 20 => n,
            _ => {
                return tavily_error(
                    StatusCode::BAD_REQUEST,
                    "max_results must be between 0 and 20.",
                )
            }
        },
    };
    let mut inner = lock(&inner);
    inner.asked.push(Asked {
        provider: "tavily",
        query: query.to_owned(),
        count: Some(count),
    });
    if inner.rate_limited {
        return tavily_error(StatusCode::TOO_MANY_REQUESTS, "Rate limit exceeded.");
    }
    let results: Vec<Value> = results(&inner, &headers, count as usize)
        .into_iter()
        .map(|(title, url, content)| json!({"title": title, "url": url, "content": content, "score": 0.9, "raw_content": null}))
        .collect();
    Json(json!({"query": query, "answer": null, "images": [], "results": results, "response_time": 0.42})).into_response()
}

async fn page(State(inner): Shared, Path(n): Path<String>) -> Response {
    match lock(&inner).pages.get(&format!("/page/{n}")) {
        Some(body) => Html(format!(
            "<html><body><article>{body}</article></body></html>"
        ))
        .into_response(),
        None => (StatusCode::NOT_FOUND, Html("not found")).into_response(),
    }
}
