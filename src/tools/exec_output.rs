//! Bounded capture of command output (head + tail) and progress parsed from it.

use std::collections::VecDeque;

/// Keeps the first and last bytes of a stream within a budget, counting the rest.
#[derive(Debug)]
pub(crate) struct OutputCapture {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl OutputCapture {
    /// `max_chars` bounds the rendered output (not counting the omission marker).
    pub(crate) fn new(max_chars: usize) -> Self {
        let head_cap = max_chars / 2;
        Self {
            head_cap,
            tail_cap: max_chars - head_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_cap {
            let take = bytes.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// Bytes seen in total.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The output as text: everything if it fit, else head, a
    /// `[… N bytes omitted …]` marker and tail.
    pub(crate) fn render(&self) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if kept == self.total {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        // Cut at character boundaries so the seams do not show U+FFFD.
        let head = match std::str::from_utf8(&self.head) {
            Err(e) if e.error_len().is_none() => &self.head[..e.valid_up_to()],
            _ => &self.head[..],
        };
        let skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xc0) == 0x80)
            .count();
        let tail = &tail[skip..];
        let omitted = self.total - head.len() as u64 - tail.len() as u64;
        format!(
            "{}\n[… {omitted} bytes omitted …]\n{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(tail)
        )
    }
}

/// Longest line fragment kept for the progress detail.
const MAX_LINE_BYTES: usize = 4096;
/// Width of the progress detail.
const DETAIL_CHARS: usize = 120;

/// Follows the output line by line (`\n` or `\r`) for the progress report: the
/// last non-empty line and the last percentage seen.
#[derive(Debug, Default)]
pub(crate) struct ProgressTracker {
    partial: Vec<u8>,
    last_line: Vec<u8>,
    percent: Option<u8>,
    changed: bool,
}

impl ProgressTracker {
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        let mut pieces = chunk.split(|b| matches!(b, b'\n' | b'\r')).peekable();
        while let Some(piece) = pieces.next() {
            let room = MAX_LINE_BYTES.saturating_sub(self.partial.len());
            self.partial
                .extend_from_slice(&piece[..piece.len().min(room)]);
            if pieces.peek().is_some() {
                self.finish_line();
            }
        }
    }

    /// Treats a trailing unterminated line as complete (at the end of the output).
    pub(crate) fn flush(&mut self) {
        if !self.partial.is_empty() {
            self.finish_line();
        }
    }

    fn finish_line(&mut self) {
        if self.partial.iter().any(|b| !b.is_ascii_whitespace()) {
            std::mem::swap(&mut self.last_line, &mut self.partial);
            if let Some(p) = last_percent(&self.last_line) {
                self.percent = Some(p);
            }
            self.changed = true;
        }
        self.partial.clear();
    }

    /// `(detail, percent)` if anything changed since the last call.
    pub(crate) fn take_update(&mut self) -> Option<(String, Option<u8>)> {
        if !self.changed {
            return None;
        }
        self.changed = false;
        Some(self.current())
    }

    /// The last non-empty line (ANSI escapes removed, shortened) and percentage.
    pub(crate) fn current(&self) -> (String, Option<u8>) {
        let text = String::from_utf8_lossy(&strip_ansi(&self.last_line)).into_owned();
        (crate::text::clip(text.trim(), DETAIL_CHARS), self.percent)
    }
}

/// The last `N%` / `N.M%` in a line, clamped to 0–100.
pub(crate) fn last_percent(line: &[u8]) -> Option<u8> {
    let mut found = None;
    for (k, _) in line.iter().enumerate().filter(|(_, b)| **b == b'%') {
        let before = &line[..k];
        let frac = before
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let mut int_end = before.len();
        if frac > 0 && int_end > frac && before[int_end - frac - 1] == b'.' {
            int_end -= frac + 1;
        }
        let digits = before[..int_end]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 {
            continue;
        }
        let value = before[int_end - digits..int_end]
            .iter()
            .fold(0u64, |acc, d| {
                acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
            });
        found = Some(u8::try_from(value.min(100)).unwrap_or(100));
    }
    found
}

/// Removes `ESC [ … letter` sequences (colours, cursor moves) and lone escapes.
fn strip_ansi(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line[i] == 0x1b {
            i += 1;
            if line.get(i) == Some(&b'[') {
                i += 1;
                while i < line.len() && !line[i].is_ascii_alphabetic() {
                    i += 1;
                }
            }
            i += 1;
        } else {
            out.push(line[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = OutputCapture::new(10);
        c.push(b"hello");
        c.push(b" you");
        assert_eq!(c.render(), "hello you");
        assert_eq!(c.total(), 9);
    }

    #[test]
    fn large_output_keeps_head_and_tail() {
        let mut c = OutputCapture::new(10);
        for chunk in [&b"0123456789"[..], b"abcdefghij", b"KLMNO"] {
            c.push(chunk);
        }
        assert_eq!(c.render(), "01234\n[… 15 bytes omitted …]\nKLMNO");
        c.push(b"pq");
        assert_eq!(c.render(), "01234\n[… 17 bytes omitted …]\nMNOpq");
        assert_eq!(c.total(), 27);
    }

    #[test]
    fn seams_fall_on_char_boundaries() {
        let mut c = OutputCapture::new(6);
        c.push("ééééééééé".as_bytes()); // 18 bytes
        let out = c.render();
        assert!(!out.contains('\u{fffd}'), "{out}");
        assert!(out.starts_with("é\n[…"), "{out}");
        assert!(out.ends_with("\né"), "{out}");
    }

    #[test]
    fn percent_parsing() {
        assert_eq!(last_percent(b"42%"), Some(42));
        assert_eq!(last_percent(b"step 1/3 10% then 55.5% done"), Some(55));
        assert_eq!(last_percent(b"  150 %"), None);
        assert_eq!(last_percent(b"250%"), Some(100));
        assert_eq!(last_percent(b"%d and .5%"), None);
        assert_eq!(last_percent(b"no percent"), None);
        assert_eq!(last_percent(b"99999999999999999999999%"), Some(100));
    }

    #[test]
    fn tracker_follows_lines_and_carriage_returns() {
        let mut t = ProgressTracker::default();
        t.push(b"starting\n  \n");
        assert_eq!(t.take_update(), Some(("starting".into(), None)));
        assert_eq!(t.take_update(), None);
        t.push(b"dl 10%\rdl 4");
        t.push(b"0%\r\x1b[32mok\x1b[0m\n");
        assert_eq!(t.take_update(), Some(("ok".into(), Some(40))));
        t.push(b"tail without newline");
        assert_eq!(t.take_update(), None);
        t.flush();
        assert_eq!(t.current().0, "tail without newline");
        t.push(&vec![b'x'; 10_000]);
        t.flush();
        assert_eq!(t.current().0.chars().count(), DETAIL_CHARS + 1);
    }
}
