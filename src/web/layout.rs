//! The page shell (navigation, flash line, pager) and small formatting
//! helpers every page shares. All text goes through maud, which escapes it.

use super::csrf;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use maud::{html, Markup, DOCTYPE};

/// What every signed-in page needs besides its body.
pub(crate) struct Chrome {
    pub csrf: String,
    pub flash: Option<&'static str>,
    /// Seconds between live refreshes (the script replaces `data-live` parts).
    pub refresh: Option<u32>,
}

const NAV: [(&str, &str); 6] = [
    ("/", "Overview"),
    ("/conversations", "Conversations"),
    ("/approvals", "Approvals"),
    ("/tasks", "Tasks & schedules"),
    ("/users", "Users & access"),
    ("/audit", "Audit log"),
];

/// The fixed texts a `?flash=` code stands for (nothing else is shown).
pub(crate) fn flash(code: Option<&str>) -> Option<&'static str> {
    Some(match code? {
        "decided" => "Decision recorded; the chat card was updated.",
        "refused" => "Not decided: it was already decided, expired or unknown.",
        "revoked" => "Rule revoked.",
        "cancelled" => "Cancellation requested.",
        "not-running" => "Nothing to cancel: it is not running.",
        "approved" => "Pairing approved; the user is admitted.",
        "denied" => "Pairing denied.",
        "forgotten" => "Memory forgotten.",
        "gone" => "Nothing changed: it no longer exists.",
        "reauth" => "Not approved: approving needs the console token (WEB_TOKEN); enter it next to Approve.",
        "reauth-failed" => "Not approved: that token is not right.",
        "reauth-limited" => "Not approved: too many token attempts; wait a minute.",
        "no-token" => "Not approved: this console has no WEB_TOKEN, so it cannot approve; approve in the chat, or set WEB_TOKEN.",
        _ => return None,
    })
}

/// A signed-in page.
pub(crate) fn page(title: &str, path: &str, chrome: &Chrome, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Switchboard" }
                link rel="stylesheet" href="/static/console.css";
                script src="/static/console.js" defer {}
            }
            body {
                header.top {
                    strong.brand { "Switchboard" }
                    nav {
                        @for (href, label) in NAV {
                            @if href == path {
                                a.current href=(href) aria-current="page" { (label) }
                            } @else {
                                a href=(href) { (label) }
                            }
                        }
                    }
                    form.logout method="post" action="/logout" {
                        (csrf_field(&chrome.csrf))
                        button type="submit" { "Sign out" }
                    }
                }
                main data-refresh=[chrome.refresh] {
                    h1 { (title) }
                    @if let Some(text) = chrome.flash {
                        p.flash role="status" { (text) }
                    }
                    (body)
                }
            }
        }
    }
}

pub(crate) fn csrf_field(token: &str) -> Markup {
    html! { input type="hidden" name=(csrf::FIELD) value=(token); }
}

/// A one-button form posting to `action`.
pub(crate) fn button(action: &str, csrf: &str, label: &str, class: &str) -> Markup {
    html! {
        form.inline method="post" action=(action) {
            (csrf_field(csrf))
            button type="submit" class=(class) { (label) }
        }
    }
}

/// Links to the previous and next page of a list; `keep` are the other
/// query parameters of the page.
pub(crate) fn pager(param: &str, page: u32, more: bool, keep: &[(&str, &str)]) -> Markup {
    let link = |n: u32| {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in keep.iter().filter(|(_, v)| !v.is_empty()) {
            q.append_pair(k, v);
        }
        q.append_pair(param, &n.to_string());
        format!("?{}", q.finish())
    };
    html! {
        nav.pager aria-label="pages" {
            @if page > 1 { a rel="prev" href=(link(page - 1)) { "← newer" } }
            span { "page " (page) }
            @if more { a rel="next" href=(link(page + 1)) { "older →" } }
        }
    }
}

pub(crate) fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

pub(crate) fn when_ms(ms: Option<i64>) -> String {
    ms.and_then(DateTime::from_timestamp_millis)
        .map_or_else(|| "—".to_owned(), when)
}

/// The login page.
pub(crate) fn login(csrf: &str, problem: Option<&str>) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "Sign in · Switchboard" }
                link rel="stylesheet" href="/static/console.css";
            }
            body.login {
                main {
                    h1 { "Switchboard" }
                    form method="post" action="/login" {
                        (csrf_field(csrf))
                        label for="token" { "Console token (WEB_TOKEN)" }
                        input #token type="password" name="token" autocomplete="current-password" required autofocus;
                        button type="submit" { "Sign in" }
                    }
                    @if let Some(p) = problem { p.error role="alert" { (p) } }
                }
            }
        }
    }
}

/// A bare error page (404, 400, 403, 503).
pub(crate) fn error_page(status: StatusCode, text: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (status.as_u16()) " · Switchboard" }
                link rel="stylesheet" href="/static/console.css";
            }
            body {
                main {
                    h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) }
                    p { (text) }
                    p { a href="/" { "Back to the overview" } }
                }
            }
        }
    }
}

/// Wraps a rendered page for axum.
pub(crate) fn respond(markup: Markup) -> axum::response::Html<String> {
    axum::response::Html(markup.into_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pager_keeps_the_filters_and_escapes_them() {
        let html = pager("page", 2, true, &[("kind", "a&b"), ("since", "")]).into_string();
        assert!(html.contains("?kind=a%26b&amp;page=1"), "{html}");
        assert!(html.contains("?kind=a%26b&amp;page=3"), "{html}");
        assert!(!html.contains("since"), "{html}");
    }
}
