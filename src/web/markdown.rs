//! Markdown from users and the model rendered safely: a real parser
//! (pulldown-cmark), raw HTML shown as text, links only to http(s) and
//! mailto, images shown as links (nothing is loaded from elsewhere).

use maud::{Markup, PreEscaped};
use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};

/// `text` as HTML; every character of it escaped unless Markdown made it markup.
pub fn render(text: &str) -> Markup {
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    html::push_html(&mut out, events);
    PreEscaped(out)
}

/// Links keep only schemes that cannot run script.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let allowed = ["http://", "https://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s));
    if allowed {
        url
    } else {
        CowStr::Borrowed("#")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(text: &str) -> String {
        render(text).into_string()
    }

    #[test]
    fn raw_html_is_shown_as_text() {
        let out = html("hi <script>alert(1)</script> **there**\n\n<img src=x onerror=alert(1)>");
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert!(out.contains("&lt;script&gt;"), "{out}");
        assert!(out.contains("<strong>there</strong>"), "{out}");
    }

    #[test]
    fn script_links_are_defused_and_images_are_not_loaded() {
        let out =
            html("[x](javascript:alert(1)) [y](https://example.com) ![z](https://e.com/a.png)");
        assert!(!out.contains("javascript:"), "{out}");
        assert!(out.contains(r#"href="https://example.com""#), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert!(out.contains(r#"href="https://e.com/a.png""#), "{out}");
    }
}
