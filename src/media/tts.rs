//! Text to speech through an OpenAI-compatible `/audio/speech` endpoint
//! (OpenAI, a local Kokoro or Piper server, …): an answer's Markdown read as
//! plain sentences, capped, synthesized as Ogg Opus.

use super::config::TtsConfig;
use super::Media;
use futures::StreamExt;
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

/// The most characters of an answer spoken (OpenAI's limit on `input`); a
/// longer answer is spoken up to its last sentence within it.
pub const TTS_MAX_INPUT_CHARS: usize = 4096;
/// The largest audio accepted from the endpoint (4,096 characters of
/// speech in Opus is a few MB).
pub const TTS_MAX_OUTPUT_BYTES: usize = 16 << 20;

/// Why a synthesis failed; the text is safe to show (no key, no URL
/// credentials).
#[derive(Debug, thiserror::Error)]
pub enum TtsError {
    #[error("the speech service could not be reached ({0})")]
    Unreachable(String),
    #[error("the speech service refused the text (HTTP {status}: {detail})")]
    Refused { status: u16, detail: String },
    #[error("the speech service took too long")]
    Timeout,
    #[error("the speech service sent more than {} MB of audio", TTS_MAX_OUTPUT_BYTES >> 20)]
    TooLarge,
    #[error("there is nothing to say")]
    Nothing,
}

impl Media {
    /// Whether voice replies are set up (`TTS_BASE_URL`).
    pub fn speaks(&self) -> bool {
        self.config.tts.is_some()
    }

    /// The audio of `markdown` spoken (Ogg Opus as the endpoint sent it;
    /// the caller checks it).
    pub async fn speak(&self, markdown: &str) -> Result<Vec<u8>, TtsError> {
        let Some(tts) = &self.config.tts else {
            return Err(TtsError::Nothing);
        };
        let input = capped(&spoken(markdown), TTS_MAX_INPUT_CHARS);
        if input.trim().is_empty() {
            return Err(TtsError::Nothing);
        }
        synthesize(&self.http, tts, &input).await
    }
}

/// `POST {base}/audio/speech` asking for `opus`; the body read up to
/// [`TTS_MAX_OUTPUT_BYTES`].
async fn synthesize(
    client: &reqwest::Client,
    tts: &TtsConfig,
    input: &str,
) -> Result<Vec<u8>, TtsError> {
    let body = serde_json::json!({
        "model": tts.model,
        "input": input,
        "voice": tts.voice,
        "response_format": "opus",
    });
    let mut request = client
        .post(format!("{}/audio/speech", tts.base_url))
        .timeout(tts.timeout)
        .json(&body);
    if let Some(key) = &tts.api_key {
        request = request.bearer_auth(key.expose());
    }
    let fail = |e: reqwest::Error| {
        if e.is_timeout() {
            TtsError::Timeout
        } else {
            TtsError::Unreachable(crate::secrets::scrub_string(e.without_url().to_string()))
        }
    };
    let response = request.send().await.map_err(fail)?;
    let status = response.status();
    if response
        .content_length()
        .is_some_and(|n| n > TTS_MAX_OUTPUT_BYTES as u64)
    {
        return Err(TtsError::TooLarge);
    }
    let mut audio = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(fail)?;
        if audio.len() + chunk.len() > TTS_MAX_OUTPUT_BYTES {
            return Err(TtsError::TooLarge);
        }
        audio.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let detail: String = String::from_utf8_lossy(&audio).chars().take(200).collect();
        return Err(TtsError::Refused {
            status: status.as_u16(),
            detail: crate::secrets::scrub_string(detail),
        });
    }
    Ok(audio)
}

/// What of `markdown` is read aloud: its words, without markup, code
/// blocks, tables' rules or link targets; one line per block.
pub(crate) fn spoken(markdown: &str) -> String {
    let mut out = String::new();
    let mut in_code_block = false;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Text(t) | Event::Code(t) if !in_code_block => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item) => out.push('\n'),
            _ => {}
        }
    }
    out.trim().to_owned()
}

/// `text` within `max` characters: cut after the last sentence end (or
/// else the last space) that fits.
pub(crate) fn capped(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    let cut = head
        .rfind(['.', '!', '?', '。', '\n'])
        .map(|i| i + head[i..].chars().next().map_or(1, char::len_utf8))
        .or_else(|| head.rfind(' '))
        .unwrap_or(head.len());
    head[..cut].trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_code_are_not_read_aloud() {
        let md = "# Plan\n\nUse **bold** and `ls` [here](https://x.example).\n\n```\nrm -rf /\n```\n\n- one\n- two";
        assert_eq!(spoken(md), "Plan\nUse bold and ls here.\none\ntwo");
    }

    #[test]
    fn long_text_is_cut_at_a_sentence_within_the_cap() {
        let text = format!("{} Second sentence here.", "First.".repeat(3));
        assert_eq!(capped(&text, 25), "First.First.First.");
        assert_eq!(capped("no sentence ends here at all", 12), "no sentence");
        assert_eq!(capped("short.", TTS_MAX_INPUT_CHARS), "short.");
        let long = "é".repeat(5000);
        assert_eq!(capped(&long, TTS_MAX_INPUT_CHARS).chars().count(), 4096);
    }
}
