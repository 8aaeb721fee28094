//! Scrubbing streamed text (model deltas) where a secret may be split across chunks.

use super::scrubber::Scrubber;
use std::sync::Arc;

/// Scrubs a stream of text chunks: whatever could be the start of a secret is
/// held back until the next chunk shows whether it completes one.
#[derive(Debug)]
pub struct StreamScrubber {
    scrubber: Arc<Scrubber>,
    pending: String,
}

impl StreamScrubber {
    pub fn new(scrubber: Arc<Scrubber>) -> StreamScrubber {
        StreamScrubber {
            scrubber,
            pending: String::new(),
        }
    }

    /// Takes the next chunk; returns the text safe to show now (possibly empty).
    pub fn push(&mut self, chunk: &str) -> String {
        if self.scrubber.is_empty() {
            return chunk.to_owned();
        }
        self.pending.push_str(chunk);
        let scrubbed = self.scrubber.scrub(&self.pending).into_owned();
        // Any secret still incomplete at the end starts within the longest
        // suffix that is a secret's beginning, so holding that back is enough.
        let held = self.scrubber.partial_suffix(&scrubbed);
        let split = scrubbed.len() - held;
        self.pending = scrubbed[split..].to_owned();
        let mut out = scrubbed;
        out.truncate(split);
        out
    }

    /// The end of the stream: what was held back (it completed no secret).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        self.scrubber.scrub(&rest).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(secrets: &[&str], chunks: &[&str]) -> Vec<String> {
        let mut s = StreamScrubber::new(Arc::new(Scrubber::new(secrets.iter().copied())));
        let mut out: Vec<String> = chunks.iter().map(|c| s.push(c)).collect();
        out.push(s.finish());
        out
    }

    #[test]
    fn a_secret_split_across_chunks_is_never_shown_in_part() {
        let out = run(
            &["sk-live-SPLIT-1234"],
            &["key: sk-li", "ve-SP", "LIT-1234 done"],
        );
        assert_eq!(out.concat(), "key: [REDACTED] done");
        for shown in &out {
            assert!(!shown.contains("sk-li"), "{out:?}");
        }
        assert_eq!(out[0], "key: ", "text before the secret is not delayed");
    }

    #[test]
    fn held_text_that_completes_nothing_is_released() {
        let out = run(&["sk-live-SPLIT-1234"], &["a sk-", "lively day"]);
        assert_eq!(out, ["a ", "sk-lively day", ""]);
        let out = run(&["sk-live-SPLIT-1234"], &["ends with sk-live"]);
        assert_eq!(out.concat(), "ends with sk-live");
    }

    #[test]
    fn without_secrets_chunks_pass_unchanged() {
        assert_eq!(run(&[], &["a", "b"]), ["a", "b", ""]);
    }
}
