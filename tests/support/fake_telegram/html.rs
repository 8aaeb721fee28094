//! Telegram's HTML parse mode, as strict as the real one about tags and
//! nesting: turns `text` into (visible text, entities) or a "can't parse
//! entities" description.

use serde_json::{json, Value};

const SUPPORTED: &[&str] = &[
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "span",
    "tg-spoiler",
    "a",
    "code",
    "pre",
    "blockquote",
    "tg-emoji",
];

/// An entity as Telegram reports it (offsets in UTF-16 units).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    pub kind: String,
    pub offset: usize,
    pub length: usize,
    pub url: Option<String>,
    pub language: Option<String>,
}

impl Entity {
    pub fn to_json(&self) -> Value {
        let mut v = json!({"type": self.kind, "offset": self.offset, "length": self.length});
        if let Some(url) = &self.url {
            v["url"] = json!(url);
        }
        if let Some(lang) = &self.language {
            v["language"] = json!(lang);
        }
        v
    }
}

struct Open {
    name: String,
    start16: usize,
    url: Option<String>,
    language: Option<String>,
}

fn kind_of(name: &str) -> &'static str {
    match name {
        "b" | "strong" => "bold",
        "i" | "em" => "italic",
        "u" | "ins" => "underline",
        "s" | "strike" | "del" => "strikethrough",
        "span" | "tg-spoiler" => "spoiler",
        "a" => "text_link",
        "code" => "code",
        "pre" => "pre",
        "blockquote" => "blockquote",
        _ => "custom_emoji",
    }
}

/// Parses Telegram HTML. `Err` carries the text after "can't parse entities: ".
pub fn parse(html: &str) -> Result<(String, Vec<Entity>), String> {
    let mut visible = String::new();
    let mut len16 = 0usize;
    let mut stack: Vec<Open> = Vec::new();
    let mut entities = Vec::new();
    let mut i = 0;
    while i < html.len() {
        let rest = &html[i..];
        if rest.starts_with('<') {
            let Some(close) = rest.find('>') else {
                return Err(format!("Unclosed start tag at byte offset {i}"));
            };
            let inner = &rest[1..close];
            if let Some(name) = inner.strip_prefix('/') {
                let name = name.trim().to_ascii_lowercase();
                let Some(open) = stack.pop() else {
                    return Err(format!("Unexpected end tag at byte offset {i}"));
                };
                if open.name != name {
                    return Err(format!(
                        "Unmatched end tag at byte offset {i}, expected \"</{}>\", found \"</{name}>\"",
                        open.name
                    ));
                }
                let length = len16 - open.start16;
                // `<code class="language-x">` inside `<pre>` is the pre's language.
                let pre_lang = open.name == "code"
                    && stack.last().is_some_and(|p| p.name == "pre")
                    && open.language.is_some();
                if pre_lang {
                    if let Some(pre) = stack.last_mut() {
                        pre.language = open.language.clone();
                    }
                } else if length > 0 {
                    entities.push(Entity {
                        kind: kind_of(&open.name).to_owned(),
                        offset: open.start16,
                        length,
                        url: open.url,
                        language: open.language,
                    });
                }
            } else {
                let (name, attrs) = match inner.find(|c: char| c.is_whitespace()) {
                    Some(p) => (&inner[..p], &inner[p..]),
                    None => (inner, ""),
                };
                let name = name.trim_end_matches('/').to_ascii_lowercase();
                if !SUPPORTED.contains(&name.as_str()) {
                    return Err(format!(
                        "Unsupported start tag \"{name}\" at byte offset {i}"
                    ));
                }
                check_nesting(&stack, &name, i)?;
                let attr = |key: &str| attribute(attrs, key);
                if name == "span" && attr("class").as_deref() != Some("tg-spoiler") {
                    return Err(format!(
                        "Tag \"span\" must have class \"tg-spoiler\" at byte offset {i}"
                    ));
                }
                let url = (name == "a").then(|| attr("href")).flatten();
                if name == "a" && url.as_deref().is_none_or(str::is_empty) {
                    return Err(format!(
                        "Can't find the URL of a text link at byte offset {i}"
                    ));
                }
                let language = (name == "code")
                    .then(|| attr("class"))
                    .flatten()
                    .and_then(|c| c.strip_prefix("language-").map(str::to_owned));
                stack.push(Open {
                    name,
                    start16: len16,
                    url,
                    language,
                });
            }
            i += close + 1;
        } else if rest.starts_with('&') {
            let (c, used) = decode_entity(rest);
            visible.push_str(&c);
            len16 += c.encode_utf16().count();
            i += used;
        } else {
            let next = rest.find(['<', '&']).unwrap_or(rest.len());
            let chunk = &rest[..next];
            visible.push_str(chunk);
            len16 += chunk.encode_utf16().count();
            i += next;
        }
    }
    if let Some(open) = stack.last() {
        return Err(format!(
            "Can't find end tag corresponding to start tag \"{}\"",
            open.name
        ));
    }
    entities.sort_by_key(|e| (e.offset, std::cmp::Reverse(e.length)));
    Ok((visible, entities))
}

/// Telegram's nesting rules: nothing inside `code`/`pre` (except `code` in
/// `pre`), no nested blockquotes, links and code never inside a link.
fn check_nesting(stack: &[Open], name: &str, at: usize) -> Result<(), String> {
    let inside = |n: &str| stack.iter().any(|o| o.name == n);
    let top = stack.last().map(|o| o.name.as_str());
    if inside("code") || (inside("pre") && !(name == "code" && top == Some("pre"))) {
        return Err(format!(
            "Can't use tag \"{name}\" inside a code entity at byte offset {at}"
        ));
    }
    if name == "blockquote" && inside("blockquote") {
        return Err(format!(
            "Blockquote entities can't be nested at byte offset {at}"
        ));
    }
    if (name == "a" || name == "code" || name == "pre") && inside("a") {
        return Err(format!(
            "Can't use tag \"{name}\" inside a link at byte offset {at}"
        ));
    }
    Ok(())
}

fn attribute(attrs: &str, key: &str) -> Option<String> {
    let pos = attrs.find(&format!("{key}="))?;
    let rest = &attrs[pos + key.len() + 1..];
    let quote = rest.chars().next()?;
    let value = if quote == '"' || quote == '\'' {
        let body = &rest[1..];
        &body[..body.find(quote)?]
    } else {
        rest.split_whitespace().next()?
    };
    Some(
        value
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
}

/// Decodes one entity at the start of `s`; unknown ones stay literal text.
fn decode_entity(s: &str) -> (String, usize) {
    for (name, c) in [
        ("&lt;", "<"),
        ("&gt;", ">"),
        ("&amp;", "&"),
        ("&quot;", "\""),
    ] {
        if s.starts_with(name) {
            return (c.to_owned(), name.len());
        }
    }
    if let Some(num) = s.strip_prefix("&#") {
        if let Some(end) = num.find(';') {
            let digits = &num[..end];
            let code = match digits.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok(),
                None => digits.parse().ok(),
            };
            if let Some(c) = code.and_then(char::from_u32) {
                return (c.to_string(), end + 3);
            }
        }
    }
    ("&".to_owned(), 1)
}
