//! A pass over a PDF's bytes before any parser sees them, building nothing:
//! how deeply arrays and dictionaries nest (a parser recurses once per
//! level), how many objects there are, whether it is encrypted, and how far
//! each Flate stream inflates. The same lexer checks the nesting of decoded
//! content and object streams.

use super::decode::{inflated_size, Budget};
use super::{Limits, Refusal};

/// What a lexer is reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A whole file: `stream` bodies are skipped (and measured).
    File,
    /// Decoded content: inline image data (`ID` … `EI`) is skipped.
    Content,
}

/// The file's bytes checked against `limits`; the number of objects it
/// declares. Inflated Flate streams are charged to `budget`; image streams
/// are not (their pixels are never decoded).
pub(super) fn file(bytes: &[u8], limits: &Limits, budget: &mut Budget) -> Result<u64, Refusal> {
    Lexer::new(bytes, Mode::File, limits).run(budget)
}

/// Decoded content (a page's content stream, an object stream) checked for
/// nesting deeper than `limits` allow.
pub(super) fn content(bytes: &[u8], limits: &Limits) -> Result<(), Refusal> {
    Lexer::new(bytes, Mode::Content, limits)
        .run(&mut Budget::new(0))
        .map(|_| ())
}

struct Lexer<'a> {
    b: &'a [u8],
    at: usize,
    mode: Mode,
    limits: &'a Limits,
    depth: usize,
    objects: u64,
    /// The object being read names `/Image` (its stream is pixels).
    image: bool,
}

fn is_white(c: u8) -> bool {
    matches!(c, 0 | b'\t' | b'\n' | 0x0c | b'\r' | b' ')
}

fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

impl<'a> Lexer<'a> {
    fn new(b: &'a [u8], mode: Mode, limits: &'a Limits) -> Lexer<'a> {
        Lexer {
            b,
            at: 0,
            mode,
            limits,
            depth: 0,
            objects: 0,
            image: false,
        }
    }

    fn peek(&self, ahead: usize) -> Option<u8> {
        self.b.get(self.at + ahead).copied()
    }

    fn run(mut self, budget: &mut Budget) -> Result<u64, Refusal> {
        while let Some(c) = self.peek(0) {
            match c {
                b'%' => self.skip_while(|c| c != b'\n' && c != b'\r'),
                b'(' => self.literal_string(),
                b'<' if self.peek(1) == Some(b'<') => {
                    self.at += 2;
                    self.open()?;
                }
                b'<' => self.skip_past(b">"),
                b'>' if self.peek(1) == Some(b'>') => {
                    self.at += 2;
                    self.depth = self.depth.saturating_sub(1);
                }
                b'[' => {
                    self.at += 1;
                    self.open()?;
                }
                b']' => {
                    self.at += 1;
                    self.depth = self.depth.saturating_sub(1);
                }
                b'/' => self.name()?,
                c if is_white(c) || is_delimiter(c) => self.at += 1,
                _ => self.keyword(budget)?,
            }
        }
        Ok(self.objects)
    }

    fn open(&mut self) -> Result<(), Refusal> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return Err(Refusal::TooDeep);
        }
        Ok(())
    }

    fn skip_while(&mut self, keep: impl Fn(u8) -> bool) {
        while self.peek(0).is_some_and(&keep) {
            self.at += 1;
        }
    }

    /// Moves past the next `marker`, or to the end.
    fn skip_past(&mut self, marker: &[u8]) {
        let rest = self.b.get(self.at..).unwrap_or_default();
        self.at = match find(rest, marker) {
            Some(i) => self.at + i + marker.len(),
            None => self.b.len(),
        };
    }

    /// `( … )` with balanced parentheses and backslash escapes.
    fn literal_string(&mut self) {
        let mut open = 0usize;
        while let Some(c) = self.peek(0) {
            self.at += 1;
            match c {
                b'\\' => self.at += 1,
                b'(' => open += 1,
                b')' => {
                    open = open.saturating_sub(1);
                    if open == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// A name, its `#xx` escapes decoded: `/Encr#79pt` is `/Encrypt`.
    fn name(&mut self) -> Result<(), Refusal> {
        self.at += 1;
        let start = self.at;
        self.skip_while(|c| !is_white(c) && !is_delimiter(c));
        let raw = self.b.get(start..self.at).unwrap_or_default();
        let name = unescape(raw);
        if name == b"Image" {
            self.image = true;
        }
        if self.mode == Mode::File && name == b"Encrypt" {
            return Err(Refusal::Encrypted);
        }
        Ok(())
    }

    fn keyword(&mut self, budget: &mut Budget) -> Result<(), Refusal> {
        let start = self.at;
        self.skip_while(|c| !is_white(c) && !is_delimiter(c));
        match (self.mode, self.b.get(start..self.at).unwrap_or_default()) {
            (Mode::File, b"obj") => {
                self.objects += 1;
                self.image = false;
                if self.objects > self.limits.max_objects {
                    return Err(Refusal::TooManyObjects);
                }
            }
            (Mode::File, b"stream") => self.stream(budget)?,
            (Mode::Content, b"ID") => {
                // One blank, the image's bytes, then `EI` on its own.
                self.at += 1;
                while self.at < self.b.len() {
                    self.skip_past(b"EI");
                    if self.peek(0).is_none_or(is_white) {
                        break;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A stream body: its data starts after the end of line that follows
    /// `stream` and is never lexed; unless it is an image, what it inflates
    /// to is counted. It is measured to the end of the file, not to the
    /// first `endstream`: a parser that trusts `/Length` may read past one.
    fn stream(&mut self, budget: &mut Budget) -> Result<(), Refusal> {
        self.skip_while(|c| c == b' ' || c == b'\t');
        match (self.peek(0), self.peek(1)) {
            (Some(b'\r'), Some(b'\n')) => self.at += 2,
            (Some(b'\r' | b'\n'), _) => self.at += 1,
            _ => {}
        }
        if !self.image {
            let data = self.b.get(self.at..).unwrap_or_default();
            match inflated_size(data, budget.left()) {
                Some(n) if budget.spend(n) => {}
                _ => return Err(Refusal::TooLarge),
            }
        }
        self.skip_past(b"endstream");
        self.depth = 0;
        Ok(())
    }
}

fn unescape(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while let Some(&c) = raw.get(i) {
        let hex = raw
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (c, hex) {
            (b'#', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_depth: 8,
            max_objects: 3,
            max_inflated: 1 << 20,
        }
    }

    fn check(bytes: &[u8]) -> Result<u64, Refusal> {
        file(bytes, &limits(), &mut Budget::new(limits().max_inflated))
    }

    #[test]
    fn nesting_is_counted_outside_strings_comments_and_streams() {
        assert_eq!(check(b"1 0 obj [[[[ ]]]] endobj"), Ok(1));
        assert_eq!(
            check(b"1 0 obj [[[[<<[[[[[ ]]]]]>>]]]] endobj"),
            Err(Refusal::TooDeep)
        );
        // Brackets in strings, hex strings, comments and stream data do not count.
        let quiet = b"1 0 obj << /T ([[[[[[[[[ \\) [[[) /H <5b5b> >> % [[[[[[[[[\n\
            stream\n[[[[[[[[[[[[[[[[[[[[[[\nendstream endobj";
        assert_eq!(check(quiet), Ok(1));
        // Siblings are not depth.
        assert_eq!(check(&b"[ ] ".repeat(1000)), Ok(0));
    }

    #[test]
    fn objects_and_encryption_are_found_by_name() {
        assert_eq!(check(b"1 0 obj 2 0 obj 3 0 obj"), Ok(3));
        assert_eq!(
            check(b"1 0 obj 2 0 obj 3 0 obj 4 0 obj"),
            Err(Refusal::TooManyObjects)
        );
        assert_eq!(
            check(b"trailer << /Encr#79pt 5 0 R >>"),
            Err(Refusal::Encrypted)
        );
        // `endobj` and `objects` are other words.
        assert_eq!(check(b"endobj (obj) /obj objects"), Ok(0));
    }

    #[test]
    fn inline_images_are_skipped_in_content() {
        let l = limits();
        assert!(content(b"BI /W 2 /H 2 ID [[[[[[[[[[[[ EI Q", &l).is_ok());
        assert_eq!(
            content(&b"[".repeat(9), &l),
            Err(Refusal::TooDeep),
            "content nests like a file"
        );
    }
}
