//! Cheap HTML → readable text: drops scripts/styles/markup, keeps block structure.

/// Elements whose whole content is dropped.
const SKIPPED: [&str; 7] = [
    "script", "style", "noscript", "template", "svg", "iframe", "object",
];
/// Elements that start on a new line.
const BLOCKS: [&str; 34] = [
    "p",
    "div",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "pre",
    "blockquote",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "main",
    "aside",
    "figure",
    "figcaption",
    "form",
    "title",
    "details",
    "summary",
    "address",
];

/// Converts an HTML document to plain text. Not a parser: tolerant of broken
/// markup, linear time, good enough for a model to read a page.
pub(crate) fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    let mut pre_depth = 0usize;
    while let Some(lt) = rest.find('<') {
        push_text(&mut out, &rest[..lt], pre_depth > 0);
        rest = &rest[lt..];
        if rest.starts_with("<!--") {
            rest = find_ci(rest, "-->").map_or("", |i| &rest[i + 3..]);
            continue;
        }
        let opens_tag = rest[1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '!' | '?'));
        if !opens_tag {
            push_text(&mut out, "<", pre_depth > 0);
            rest = &rest[1..];
            continue;
        }
        let Some(gt) = rest.find('>') else {
            rest = "";
            break;
        };
        let inner = &rest[1..gt];
        rest = &rest[gt + 1..];
        let closing = inner.starts_with('/');
        let name: String = inner
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if name.is_empty() {
            continue; // <!DOCTYPE>, <?xml?>, stray '<'
        }
        if !closing && SKIPPED.contains(&name.as_str()) && !inner.ends_with('/') {
            let end = format!("</{name}");
            rest = match find_ci(rest, &end) {
                Some(i) => rest[i..].find('>').map_or("", |j| &rest[i + j + 1..]),
                None => "",
            };
            continue;
        }
        if name == "pre" {
            pre_depth = if closing {
                pre_depth.saturating_sub(1)
            } else {
                pre_depth + 1
            };
        }
        match name.as_str() {
            "li" if !closing => out.push_str("\n- "),
            "li" => {}
            "td" | "th" if !closing => out.push(' '),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "p" | "table" | "pre" | "blockquote" => {
                out.push_str("\n\n")
            }
            n if BLOCKS.contains(&n) => out.push('\n'),
            _ => {}
        }
    }
    push_text(&mut out, rest, pre_depth > 0);
    tidy(&out)
}

/// Appends decoded text; outside `<pre>` runs of whitespace become one space.
fn push_text(out: &mut String, raw: &str, preformatted: bool) {
    if raw.is_empty() {
        return;
    }
    let text = decode_entities(raw);
    if preformatted {
        out.push_str(&text);
        return;
    }
    for (i, word) in text.split_ascii_whitespace().enumerate() {
        let at_line_start = out.is_empty() || out.ends_with(['\n', ' ']);
        if (i > 0 || text.starts_with(|c: char| c.is_ascii_whitespace())) && !at_line_start {
            out.push(' ');
        }
        out.push_str(word);
    }
    if text.ends_with(|c: char| c.is_ascii_whitespace()) && !out.ends_with(['\n', ' ']) {
        out.push(' ');
    }
}

/// Trims line ends and collapses runs of blank lines to one.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.trim_end().replace('\u{a0}', " ");
        if line.trim().is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        out.push_str(&line);
    }
    out
}

/// Byte index of the first ASCII-case-insensitive occurrence of `needle`.
fn find_ci(haystack: &str, needle: &str) -> Option<usize> {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    if n.is_empty() || h.len() < n.len() {
        return None;
    }
    (0..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = rest
            .find(';')
            .filter(|&semi| semi <= 10)
            .and_then(|semi| entity(&rest[1..semi]).map(|c| (c, semi)));
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(code);
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "middot" => '·',
        "bull" => '•',
        "euro" => '€',
        _ => return None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn strips_markup_scripts_and_styles() {
        let html = r#"<!DOCTYPE html><html><head><title>T&amp;C</title>
            <style>body { color: red }</style><script>var x = "<p>no</p>";</script></head>
            <body><!-- hidden --><h1>Heading</h1><p>Some <b>bold</b>
            text&nbsp;here &#8212; &#x41;.</p><ul><li>one</li><li>two</li></ul>
            <SCRIPT type="x">alert(1)</SCRIPT><p>a &unknown; b</p></body></html>"#;
        let text = html_to_text(html);
        assert_eq!(
            text,
            "T&C\n\nHeading\n\nSome bold text here — A.\n\n- one\n- two\n\na &unknown; b"
        );
    }

    #[test]
    fn keeps_preformatted_whitespace_and_survives_broken_markup() {
        let text = html_to_text("<pre>a  b\n  c</pre><p>x</p><div unclosed");
        assert_eq!(text, "a  b\n  c\n\nx");
        assert_eq!(html_to_text("<script>never closed"), "");
        assert_eq!(html_to_text("1 < 2 and 3 > 2"), "1 < 2 and 3 > 2");
        assert_eq!(html_to_text("no tags"), "no tags");
    }

    #[test]
    fn find_ci_is_case_insensitive() {
        assert_eq!(find_ci("ab</ScRiPt>", "</script"), Some(2));
        assert_eq!(find_ci("ab", "abc"), None);
    }
}
