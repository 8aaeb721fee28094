//! A small HTTP client for the web console's tests: it keeps the session
//! cookie, reads the CSRF token off each page and never follows redirects.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reqwest::header::{HeaderMap, COOKIE, HOST, LOCATION, SET_COOKIE};
use reqwest::{redirect, Client, StatusCode};
use std::net::SocketAddr;

/// The token the tests' consoles are started with.
pub const TOKEN: &str = "test-console-token-0123456789";

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn location(&self) -> String {
        self.headers
            .get(LOCATION)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    }

    pub fn set_cookie(&self) -> Option<String> {
        self.headers
            .get(SET_COOKIE)
            .map(|v| v.to_str().unwrap().to_owned())
    }

    /// The CSRF token of the page's forms.
    pub fn csrf(&self) -> String {
        let re = regex::Regex::new(r#"name="_csrf" value="([0-9a-f]+)""#).unwrap();
        re.captures(&self.body)
            .unwrap_or_else(|| panic!("no CSRF token on the page:\n{}", self.body))[1]
            .to_owned()
    }
}

pub struct WebClient {
    pub base: String,
    client: Client,
    pub cookie: Option<String>,
    pub host: Option<String>,
    pub forwarded_https: bool,
    /// Sent as `X-Forwarded-For` when set.
    pub forwarded_for: Option<String>,
}

impl WebClient {
    pub fn new(addr: SocketAddr) -> WebClient {
        WebClient {
            base: format!("http://{addr}"),
            client: Client::builder()
                .redirect(redirect::Policy::none())
                .build()
                .unwrap(),
            cookie: None,
            host: None,
            forwarded_https: false,
            forwarded_for: None,
        }
    }

    /// A client signed in with [`TOKEN`].
    pub async fn signed_in(addr: SocketAddr) -> WebClient {
        let mut c = WebClient::new(addr);
        let reply = c.login(TOKEN).await;
        assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
        c
    }

    fn keep_cookie(&mut self, reply: &Reply) {
        if let Some(set) = reply.set_cookie() {
            let pair = set.split(';').next().unwrap().to_owned();
            self.cookie = Some(pair);
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut rb = self.client.request(method, format!("{}{path}", self.base));
        if let Some(c) = &self.cookie {
            rb = rb.header(COOKIE, c);
        }
        if let Some(h) = &self.host {
            rb = rb.header(HOST, h);
        }
        if self.forwarded_https {
            rb = rb.header("x-forwarded-proto", "https");
        }
        if let Some(xff) = &self.forwarded_for {
            rb = rb.header("x-forwarded-for", xff);
        }
        rb
    }

    async fn finish(&mut self, rb: reqwest::RequestBuilder) -> Reply {
        let response = rb.send().await.unwrap();
        let reply = Reply {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.text().await.unwrap(),
        };
        self.keep_cookie(&reply);
        reply
    }

    pub async fn get(&mut self, path: &str) -> Reply {
        let rb = self.request(reqwest::Method::GET, path);
        self.finish(rb).await
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Reply {
        let rb = self.request(reqwest::Method::POST, path).form(form);
        self.finish(rb).await
    }

    /// Posts `form` with the CSRF token of the page at `page`.
    pub async fn post_from(&mut self, page: &str, path: &str, form: &[(&str, &str)]) -> Reply {
        let csrf = self.get(page).await.csrf();
        let mut fields: Vec<(&str, &str)> = form.to_vec();
        fields.push(("_csrf", &csrf));
        self.post(path, &fields).await
    }

    pub async fn login(&mut self, token: &str) -> Reply {
        let page = self.get("/login").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let csrf = page.csrf();
        self.post("/login", &[("token", token), ("_csrf", &csrf)])
            .await
    }
}
