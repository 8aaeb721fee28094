//! Token estimates without a tokenizer: CJK-aware character weights.

use super::types::{ChatRequest, Message, SignedReasoning};

/// Per-message framing (role, separators) that every chat format adds.
const MESSAGE_OVERHEAD: usize = 4;

/// Whether `c` belongs to a script written without spaces between words
/// (Chinese, Japanese, Korean, Thai, Lao, Khmer, Myanmar, Tibetan).
pub fn is_unsegmented(c: char) -> bool {
    matches!(u32::from(c),
        0x0E00..=0x0EFF      // Thai, Lao
        | 0x0F00..=0x0FFF    // Tibetan
        | 0x1000..=0x109F    // Myanmar
        | 0x1100..=0x11FF    // Hangul Jamo
        | 0x1780..=0x17FF    // Khmer
        | 0x3040..=0x30FF    // Hiragana, Katakana
        | 0x3100..=0x312F    // Bopomofo
        | 0x3130..=0x318F    // Hangul compatibility Jamo
        | 0x31F0..=0x31FF    // Katakana extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x20000..=0x2FA1F) // CJK extensions B and later
}

/// Estimated tokens of `text`: about one token per CJK (or other unsegmented)
/// character, four ASCII characters per token, two other characters per token.
///
/// Deliberately on the high side: BPE tokenizers spend 0.6–1.5 tokens on a Han
/// character, and underestimating is what makes a request overflow the window.
pub fn estimate_tokens(text: &str) -> usize {
    let (mut dense, mut ascii, mut other) = (0usize, 0usize, 0usize);
    for c in text.chars() {
        if c.is_ascii() {
            ascii += 1;
        } else if is_unsegmented(c) || matches!(u32::from(c), 0x3000..=0x303F | 0xFF00..=0xFF65) {
            // CJK punctuation and full-width forms cost about a token each too.
            dense += 1;
        } else {
            other += 1;
        }
    }
    dense + ascii.div_ceil(4) + other.div_ceil(2)
}

/// Estimated tokens of one message as sent: content, tool calls, reasoning
/// (signed blocks too, though they go back only within their tool loop).
pub fn estimate_message_tokens(message: &Message) -> usize {
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|c| estimate_tokens(&c.name) + estimate_tokens(&c.arguments) + MESSAGE_OVERHEAD)
        .sum();
    let reasoning = message.reasoning.as_deref().map_or(0, estimate_tokens);
    let signed: usize = message
        .signed_reasoning
        .iter()
        .map(|block| match block {
            SignedReasoning::Thinking { thinking, .. } => estimate_tokens(thinking),
            SignedReasoning::RedactedThinking { data } => estimate_tokens(data),
        })
        .sum();
    MESSAGE_OVERHEAD + estimate_tokens(&message.content) + calls + reasoning + signed
}

/// Estimated tokens of a whole request: system prompt, tool schemas, messages.
pub fn estimate_request_tokens(request: &ChatRequest) -> usize {
    let tools: usize = request
        .tools
        .iter()
        .map(|t| {
            estimate_tokens(&t.name)
                + estimate_tokens(&t.description)
                + estimate_tokens(&t.parameters.to_string())
        })
        .sum();
    estimate_tokens(&request.system)
        + tools
        + request
            .messages
            .iter()
            .map(estimate_message_tokens)
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cjk_costs_a_token_per_character_and_ascii_a_quarter() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(estimate_tokens("用户喜欢喝咖啡"), 7);
        assert_eq!(estimate_tokens("こんにちは"), 5);
        assert_eq!(estimate_tokens("안녕하세요"), 5);
        assert_eq!(estimate_tokens("привет"), 3);
        // Mixed text: 3 Han characters + 10 ASCII characters.
        assert_eq!(estimate_tokens("我喜欢 Rust lang"), 3 + 3);
    }

    #[test]
    fn the_same_length_in_chinese_weighs_far_more_than_in_english() {
        let zh = "这是一段用于估算的中文文本".repeat(10);
        let en = "x".repeat(zh.chars().count());
        assert!(estimate_tokens(&zh) >= 3 * estimate_tokens(&en));
    }

    #[test]
    fn messages_count_content_calls_and_overhead() {
        let mut m = Message::assistant("hello");
        let base = estimate_message_tokens(&m);
        assert_eq!(base, MESSAGE_OVERHEAD + 2);
        m.tool_calls.push(crate::llm::ToolCall {
            id: "c".into(),
            name: "read_file".into(),
            arguments: "{\"path\":\"a\"}".into(),
        });
        assert!(estimate_message_tokens(&m) > base + 4);
    }
}
