//! The web console's door: sign-in by token, the session cookie, CSRF on
//! every POST, failed logins limited and audited, security headers, and a
//! loopback console without a token that answers localhost names only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::e2e::Harness;
use crate::web_client::{WebClient, TOKEN};
use reqwest::StatusCode;

async fn console() -> Harness {
    Harness::with(&[("WEB_LISTEN", "127.0.0.1:0"), ("WEB_TOKEN", TOKEN)]).await
}

#[tokio::test]
async fn pages_need_a_signed_in_session() {
    let h = console().await;
    let mut c = WebClient::new(h.running.web_addr.unwrap());
    for path in [
        "/",
        "/conversations",
        "/approvals",
        "/tasks",
        "/users",
        "/audit",
    ] {
        let r = c.get(path).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(r.location(), "/login", "{path}");
    }
    let mut fresh = WebClient::new(h.running.web_addr.unwrap());
    for path in [
        "/approvals/0123456789abcdef0123456789abcdef/decide",
        "/rules/abcdef/revoke",
        "/tasks/abc/cancel",
        "/schedules/abc/cancel",
        "/pairings/ABCD/decide",
        "/memories/telegram/1/1/forget",
        "/logout",
    ] {
        let r = fresh.post(path, &[("choice", "allow")]).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    // The static files and the login page are public.
    assert_eq!(c.get("/static/console.css").await.status, StatusCode::OK);
    assert_eq!(c.get("/static/console.js").await.status, StatusCode::OK);
    h.stop().await;
}

#[tokio::test]
async fn sign_in_sets_a_strict_http_only_cookie_and_every_answer_has_the_headers() {
    let h = console().await;
    let addr = h.running.web_addr.unwrap();
    let mut c = WebClient::new(addr);
    let reply = c.login(TOKEN).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    let cookie = reply.set_cookie().unwrap();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    assert!(!cookie.contains(TOKEN), "{cookie}");
    let page = c.get("/").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("Platforms"), "{}", page.body);
    for r in [
        &page,
        &c.get("/nope").await,
        &c.get("/static/console.js").await,
    ] {
        let csp = r.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(csp.contains("script-src 'self'"), "{csp}");
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        assert_eq!(r.headers["x-content-type-options"], "nosniff");
        assert_eq!(r.headers["referrer-policy"], "no-referrer");
    }
    // No inline script or style anywhere on a page.
    assert!(!page.body.contains("<script>"), "{}", page.body);
    assert!(!page.body.contains("style="), "{}", page.body);

    // Behind an https proxy the cookie is Secure.
    let mut proxied = WebClient::new(addr);
    proxied.forwarded_https = true;
    let cookie = proxied.login(TOKEN).await.set_cookie().unwrap();
    assert!(cookie.contains("; Secure"), "{cookie}");

    // Signing out clears the cookie.
    let out = c.post_from("/", "/logout", &[]).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert!(out.set_cookie().unwrap().contains("Max-Age=0"));
    h.stop().await;
}

#[tokio::test]
async fn a_forged_or_missing_csrf_token_is_refused() {
    let h = console().await;
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    let r = c
        .post("/tasks/abcdef0123/cancel", &[("_csrf", "00ff")])
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = c.post("/logout", &[]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    // Another browser's token is not this one's.
    let mut other = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    let foreign = other.get("/").await.csrf();
    let r = c.post("/logout", &[("_csrf", &foreign)]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // A login form needs its own token too.
    let mut bare = WebClient::new(h.running.web_addr.unwrap());
    bare.get("/login").await;
    let r = bare.post("/login", &[("token", TOKEN)]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    h.stop().await;
}

#[tokio::test]
async fn failed_sign_ins_are_limited_and_audited() {
    let h = console().await;
    let mut c = WebClient::new(h.running.web_addr.unwrap());
    for _ in 0..5 {
        let r = c.login("wrong-token-wrong-token").await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
        assert!(r.body.contains("not right"), "{}", r.body);
        assert!(!r.body.contains("wrong-token"), "the attempt is not echoed");
    }
    // The sixth attempt in the minute is refused, right token or not.
    let r = c.login(TOKEN).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    let events = h.running.store.audit().recent(50).await.unwrap();
    let failed = events
        .iter()
        .filter(|e| e.kind == "web.login_failed")
        .count();
    assert_eq!(failed, 5, "{events:?}");
    assert!(events.iter().any(|e| e.kind == "web.login_limited"));
    assert!(events.iter().all(|e| e.kind != "web.login"));
    assert!(events
        .iter()
        .filter(|e| e.kind.starts_with("web."))
        .all(|e| e.detail["actor"] == "web"));
    h.stop().await;
}

#[tokio::test]
async fn a_loopback_console_without_a_token_answers_only_local_names() {
    let h = Harness::with(&[("WEB_LISTEN", "127.0.0.1:0")]).await;
    let addr = h.running.web_addr.unwrap();
    let mut c = WebClient::new(addr);
    let r = c.get("/").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.set_cookie().unwrap().contains("HttpOnly"));
    // POSTs still need the page's CSRF token.
    assert_eq!(c.post("/logout", &[]).await.status, StatusCode::FORBIDDEN);
    let mut rebound = WebClient::new(addr);
    rebound.host = Some(format!("evil.example:{}", addr.port()));
    assert_eq!(rebound.get("/").await.status, StatusCode::FORBIDDEN);
    h.stop().await;
}

#[test]
fn a_public_listener_without_a_token_is_refused_at_start() {
    let vars = |k: &str| match k {
        "LLM_BASE_URL" => Some("http://127.0.0.1:1/v1".to_owned()),
        "LLM_MODEL" => Some("m".to_owned()),
        "WEB_LISTEN" => Some("0.0.0.0:8080".to_owned()),
        _ => None,
    };
    let err = switchboard::Config::from_lookup(vars)
        .unwrap_err()
        .to_string();
    assert!(err.contains("WEB_TOKEN"), "{err}");
}

#[tokio::test]
async fn the_token_is_a_registered_secret() {
    let h = console().await;
    assert!(h.config.secret_values().iter().any(|s| s == TOKEN));
    assert!(!format!("{:?}", h.config.web).contains(TOKEN));
    h.stop().await;
}

#[tokio::test]
async fn the_console_may_share_the_health_listener() {
    let h = Harness::with(&[
        ("WEB_LISTEN", "127.0.0.1:0"),
        ("HEALTH_LISTEN", "127.0.0.1:0"),
        ("WEB_TOKEN", TOKEN),
    ])
    .await;
    let addr = h.running.web_addr.unwrap();
    assert_eq!(h.running.health_addr, Some(addr), "one listener");
    let mut c = WebClient::signed_in(addr).await;
    assert_eq!(c.get("/").await.status, StatusCode::OK);
    assert_eq!(c.get("/healthz").await.status, StatusCode::OK);
    let metrics = c.get("/metrics").await;
    assert!(
        metrics.body.contains("switchboard_database_up"),
        "{}",
        metrics.body
    );
    h.stop().await;
}
