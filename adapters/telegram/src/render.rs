//! Markdown → Telegram HTML with pulldown-cmark: escaping, code blocks, links,
//! emphasis, lists as text bullets and headings as bold.
//!
//! Telegram's HTML is a small subset (`b i s u a code pre blockquote`) with
//! nesting rules: nothing inside `code`/`pre`, no nested blockquotes, no `code`
//! inside a link. The renderer never produces those.
//!
//! The visible text can be longer than the Markdown: a list right after a
//! paragraph gains a blank line, lazily numbered lists (`1.` every item) are
//! renumbered up to `10.`, `100.`, a rule after a paragraph gains a line. So a
//! chunk that fits in Markdown may not fit once Telegram parses the entities:
//! [`visible_len`] measures what Telegram counts, and `fit` cuts again.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// Renders `markdown` as Telegram HTML (`parse_mode = HTML`).
pub(crate) fn markdown_to_html(markdown: &str) -> String {
    let mut r = Renderer::default();
    for event in Parser::new_ext(markdown, Options::ENABLE_STRIKETHROUGH) {
        r.event(event);
    }
    r.finish()
}

/// Whether Telegram would see no text at all in `html` (e.g. a streamed draft
/// that is only `# ` renders as `<b></b>`): such a chunk goes out as plain text.
pub(crate) fn has_no_visible_text(html: &str) -> bool {
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag && !c.is_whitespace() => return false,
            _ => {}
        }
    }
    true
}

/// The text Telegram shows for `html` (and counts against its limits): tags
/// stripped, character entities decoded.
pub(crate) fn visible_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find(['<', '&']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with('<') {
            rest = rest.find('>').map_or("", |end| &rest[end + 1..]);
        } else {
            let (c, used) = decode_entity(rest);
            out.push(c);
            rest = &rest[used..];
        }
    }
    out.push_str(rest);
    out
}

/// [`visible_text`]'s length in UTF-16 units, Telegram's unit for its limits.
pub(crate) fn visible_len(html: &str) -> usize {
    visible_text(html).encode_utf16().count()
}

/// The character an entity at the start of `s` stands for, and its length in
/// bytes; an `&` that starts no entity is itself.
fn decode_entity(s: &str) -> (char, usize) {
    for (name, c) in [
        ("&lt;", '<'),
        ("&gt;", '>'),
        ("&amp;", '&'),
        ("&quot;", '"'),
    ] {
        if s.starts_with(name) {
            return (c, name.len());
        }
    }
    let numeric = s.strip_prefix("&#").and_then(|num| {
        let end = num.find(';')?;
        let digits = &num[..end];
        let code = match digits.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => digits.parse().ok(),
        };
        Some((char::from_u32(code?)?, end + 3))
    });
    numeric.unwrap_or(('&', 1))
}

/// `&`, `<` and `>` as entities: the only characters Telegram's HTML requires escaping.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

fn escape_attr(text: &str) -> String {
    escape(text).replace('"', "&quot;")
}

/// Schemes Telegram turns into links; anything else is shown as text.
fn linkable(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    ["http://", "https://", "tg://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s))
}

/// How a link was opened, so its end knows what to close.
enum LinkState {
    /// `<a href>` emitted at byte `start` of the output.
    Anchor { start: usize, url: String },
    /// Shown as text followed by ` (url)`.
    Text { start: usize, url: String },
}

#[derive(Default)]
struct Renderer {
    out: String,
    /// Nothing emitted yet in the current container (document, quote, list item).
    at_start: bool,
    started: bool,
    /// Open lists: the next number for ordered ones.
    lists: Vec<Option<u64>>,
    links: Vec<LinkState>,
    bold: usize,
    italic: usize,
    strike: usize,
    quote: usize,
    in_code_block: bool,
    /// The open code block has an inner `<code class>` to close.
    code_has_lang: bool,
}

impl Renderer {
    fn event(&mut self, event: Event<'_>) {
        if !self.started {
            self.started = true;
            self.at_start = true;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => self.inline_code(&code),
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::InlineMath(m) | Event::DisplayMath(m) => self.text(&m),
            Event::FootnoteReference(name) => self.text(&format!("[{name}]")),
            Event::SoftBreak | Event::HardBreak => self.out.push('\n'),
            Event::Rule => {
                self.block_break();
                self.out.push_str("———");
                self.at_start = false;
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
        }
    }

    /// Separates a new block from what precedes it in the same container.
    fn block_break(&mut self) {
        if self.at_start {
            return;
        }
        let want = if self.lists.is_empty() { 2 } else { 1 };
        let have = self.out.len() - self.out.trim_end_matches('\n').len();
        for _ in have..want {
            self.out.push('\n');
        }
    }

    /// A code block: `<pre>`, with the fence's language when it has one.
    fn open_code_block(&mut self, kind: CodeBlockKind<'_>) {
        self.block_break();
        self.in_code_block = true;
        let lang: String = match kind {
            CodeBlockKind::Fenced(info) => info
                .split_whitespace()
                .next()
                .unwrap_or("")
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || "+-_#.".contains(*c))
                .collect(),
            CodeBlockKind::Indented => String::new(),
        };
        self.code_has_lang = !lang.is_empty();
        if lang.is_empty() {
            self.out.push_str("<pre>");
        } else {
            self.out
                .push_str(&format!("<pre><code class=\"language-{lang}\">"));
        }
    }

    /// A list item: indented by depth, numbered or bulleted.
    fn open_item(&mut self) {
        self.block_break();
        let depth = self.lists.len().saturating_sub(1);
        self.out.push_str(&"  ".repeat(depth));
        let marker = match self.lists.last_mut() {
            Some(Some(n)) => {
                let m = format!("{n}. ");
                *n += 1;
                m
            }
            _ => "• ".to_owned(),
        };
        self.out.push_str(&marker);
        self.at_start = true;
    }

    /// A link (or an image, shown as a link): an anchor when its URL may be
    /// linked and it is not inside another, else its text with the URL after.
    fn open_link(&mut self, url: String) {
        let start = self.out.len();
        if linkable(&url) && self.links.is_empty() {
            self.out
                .push_str(&format!("<a href=\"{}\">", escape_attr(&url)));
            self.links.push(LinkState::Anchor {
                start: self.out.len(),
                url,
            });
        } else {
            self.links.push(LinkState::Text { start, url });
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::MetadataBlock(_) => self.block_break(),
            Tag::Heading { .. } => {
                self.block_break();
                self.open_bold();
            }
            Tag::BlockQuote(_) => {
                self.block_break();
                if self.quote == 0 {
                    self.out.push_str("<blockquote>");
                    self.at_start = true;
                }
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => self.open_code_block(kind),
            Tag::List(first) => {
                self.block_break();
                self.lists.push(first);
                self.at_start = true;
            }
            Tag::Item => self.open_item(),
            Tag::Emphasis => {
                if self.italic == 0 {
                    self.out.push_str("<i>");
                }
                self.italic += 1;
            }
            Tag::Strong => self.open_bold(),
            Tag::Strikethrough => {
                if self.strike == 0 {
                    self.out.push_str("<s>");
                }
                self.strike += 1;
            }
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.open_link(dest_url.to_string())
            }
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Table(_)
            | Tag::TableHead
            | Tag::TableRow => self.block_break(),
            Tag::TableCell => {
                if !self.out.ends_with('\n') && !self.at_start {
                    self.out.push_str(" | ");
                }
            }
            Tag::Superscript | Tag::Subscript => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => self.close_bold(),
            TagEnd::BlockQuote(_) => {
                self.quote = self.quote.saturating_sub(1);
                if self.quote == 0 {
                    self.trim_trailing_newlines();
                    self.out.push_str("</blockquote>");
                    self.at_start = false;
                }
            }
            TagEnd::CodeBlock => {
                if self.out.ends_with('\n') {
                    self.out.pop();
                }
                self.out.push_str(if self.code_has_lang {
                    "</code></pre>"
                } else {
                    "</pre>"
                });
                self.in_code_block = false;
                self.at_start = false;
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.at_start = false;
            }
            TagEnd::Item => self.at_start = false,
            TagEnd::Emphasis => {
                self.italic = self.italic.saturating_sub(1);
                if self.italic == 0 {
                    self.out.push_str("</i>");
                }
            }
            TagEnd::Strong => self.close_bold(),
            TagEnd::Strikethrough => {
                self.strike = self.strike.saturating_sub(1);
                if self.strike == 0 {
                    self.out.push_str("</s>");
                }
            }
            TagEnd::Link | TagEnd::Image => self.close_link(),
            TagEnd::TableHead | TagEnd::TableRow => self.out.push('\n'),
            _ => {}
        }
    }

    fn open_bold(&mut self) {
        if self.bold == 0 {
            self.out.push_str("<b>");
        }
        self.bold += 1;
    }

    fn close_bold(&mut self) {
        self.bold = self.bold.saturating_sub(1);
        if self.bold == 0 {
            self.out.push_str("</b>");
        }
        self.at_start = false;
    }

    fn close_link(&mut self) {
        match self.links.pop() {
            Some(LinkState::Anchor { start, url }) => {
                if self.out.len() == start {
                    // An anchor needs visible text: show the URL itself.
                    push_escaped(&mut self.out, &url);
                }
                self.out.push_str("</a>");
            }
            Some(LinkState::Text { start, url }) => {
                let shown = &self.out[start..];
                if shown.is_empty() {
                    push_escaped(&mut self.out, &url);
                } else if !url.is_empty() && shown != escape(&url) {
                    self.out.push_str(" (");
                    push_escaped(&mut self.out, &url);
                    self.out.push(')');
                }
            }
            None => {}
        }
        self.at_start = false;
    }

    fn text(&mut self, text: &str) {
        push_escaped(&mut self.out, text);
        if !text.is_empty() {
            self.at_start = false;
        }
    }

    fn inline_code(&mut self, code: &str) {
        // Telegram forbids `code` inside a link; there it stays plain text.
        if self.links.is_empty() && !self.in_code_block {
            self.out.push_str("<code>");
            push_escaped(&mut self.out, code);
            self.out.push_str("</code>");
            self.at_start = false;
        } else {
            self.text(code);
        }
    }

    fn trim_trailing_newlines(&mut self) {
        let len = self.out.trim_end_matches('\n').len();
        self.out.truncate(len);
    }

    fn finish(mut self) -> String {
        let len = self.out.trim_end().len();
        self.out.truncate(len);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(md: &str) -> String {
        markdown_to_html(md)
    }

    #[test]
    fn escapes_html_specials_everywhere() {
        assert_eq!(html("a < b && c > d"), "a &lt; b &amp;&amp; c &gt; d");
        assert_eq!(html("`<tag> & x`"), "<code>&lt;tag&gt; &amp; x</code>");
        assert_eq!(html("<b>not bold</b>"), "&lt;b&gt;not bold&lt;/b&gt;");
        assert_eq!(
            html("```\nif a < b { x & y }\n```"),
            "<pre>if a &lt; b { x &amp; y }</pre>"
        );
    }

    #[test]
    fn inline_formatting() {
        assert_eq!(
            html("**bold** *it* ~~gone~~ `code`"),
            "<b>bold</b> <i>it</i> <s>gone</s> <code>code</code>"
        );
        assert_eq!(html("***both***"), "<i><b>both</b></i>");
    }

    #[test]
    fn code_blocks_carry_their_language() {
        assert_eq!(
            html("Intro\n\n```rust\nfn main() {}\n```\n\nAfter"),
            "Intro\n\n<pre><code class=\"language-rust\">fn main() {}</code></pre>\n\nAfter"
        );
        assert_eq!(html("    indented\n    code"), "<pre>indented\ncode</pre>");
    }

    #[test]
    fn links_and_unlinkable_urls() {
        assert_eq!(
            html("see [docs](https://x.test/a?b=1&c=\"2\")"),
            "see <a href=\"https://x.test/a?b=1&amp;c=&quot;2&quot;\">docs</a>"
        );
        assert_eq!(html("[file](./notes.md)"), "file (./notes.md)");
        assert_eq!(
            html("<https://x.test>"),
            "<a href=\"https://x.test\">https://x.test</a>"
        );
        assert_eq!(
            html("[`code` link](https://x.test)"),
            "<a href=\"https://x.test\">code link</a>"
        );
        assert_eq!(
            html("![](https://x.test/i.png)"),
            "<a href=\"https://x.test/i.png\">https://x.test/i.png</a>"
        );
    }

    #[test]
    fn lists_become_text_bullets() {
        assert_eq!(html("- one\n- two"), "• one\n• two");
        assert_eq!(html("3. three\n4. four"), "3. three\n4. four");
        assert_eq!(
            html("- a\n  - nested\n- b\n\nafter"),
            "• a\n  • nested\n• b\n\nafter"
        );
    }

    #[test]
    fn headings_are_bold_and_quotes_flat() {
        assert_eq!(html("# Title\n\nbody"), "<b>Title</b>\n\nbody");
        assert_eq!(html("## **Bold** title"), "<b>Bold title</b>");
        assert_eq!(
            html("> quoted\n> > deeper"),
            "<blockquote>quoted\n\ndeeper</blockquote>"
        );
    }

    #[test]
    fn detects_markup_without_text() {
        assert!(has_no_visible_text(&html("# ")));
        assert!(has_no_visible_text(&html("**")) == html("**").trim().is_empty());
        assert!(has_no_visible_text("<b> </b>"));
        assert!(!has_no_visible_text(&html("# T")));
        assert!(!has_no_visible_text("&lt;"));
    }

    #[test]
    fn visible_text_is_what_telegram_counts() {
        assert_eq!(
            visible_text("<b>a &lt; b</b> &amp; <a href=\"https://e.test/?a=1&amp;b=&quot;\">&quot;x&quot;</a> &#65;&#x42; & c"),
            "a < b & \"x\" AB & c"
        );
        assert_eq!(visible_len("<i>😀</i>&gt;"), 3, "UTF-16 units");
        assert_eq!(visible_text("<pre>unclosed"), "unclosed");
    }

    #[test]
    fn visible_text_can_outgrow_the_source() {
        let grows = |md: &str, shown: &str| {
            let visible = visible_text(&html(md));
            assert_eq!(visible, shown, "{md:?}");
            assert!(visible_len(&html(md)) > md.encode_utf16().count(), "{md:?}");
        };
        grows("text\n- a", "text\n\n• a");
        grows("text\n***", "text\n\n———");
        let lazy: String = (0..12).map(|_| "1. x\n").collect();
        let renumbered: Vec<String> = (1..=12).map(|i| format!("{i}. x")).collect();
        grows(&lazy, &renumbered.join("\n"));
    }
}
