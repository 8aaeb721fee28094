//! Provider-neutral chat types: messages, tool calls, tool definitions, stream chunks.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call requested by the model. `arguments` is the raw JSON text the
/// model produced (it may be invalid; the runtime reports that to the model).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The longest tool-call id every protocol accepts (OpenAI's limit is 40).
const PORTABLE_ID_LEN: usize = 40;

/// A call id as every protocol accepts it: `[A-Za-z0-9_-]`, at most 40
/// characters. Ids minted elsewhere — Gemini's carry a thought signature after
/// a `.` — are shortened deterministically, so a call and its result still
/// match when a fallback endpoint of another protocol continues the turn.
pub(crate) fn portable_call_id(id: &str) -> std::borrow::Cow<'_, str> {
    use std::hash::{Hash, Hasher};
    let valid = |s: &str| {
        !s.is_empty()
            && s.len() <= PORTABLE_ID_LEN
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    if valid(id) {
        return std::borrow::Cow::Borrowed(id);
    }
    match id.split('.').next() {
        Some(head) if valid(head) => std::borrow::Cow::Owned(head.to_owned()),
        _ => {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            id.hash(&mut hasher);
            std::borrow::Cow::Owned(format!("call_{:016x}", hasher.finish()))
        }
    }
}

/// One message of a conversation as sent to a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    /// Tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this result answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Reasoning text of an assistant message as an OpenAI-compatible endpoint
    /// sent it (`reasoning_content`), sent back on the next round for
    /// endpoints that require it. Anthropic's and Gemini's thinking is not kept
    /// here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Reasoning blocks the provider signed (Anthropic extended thinking), in
    /// the order they came: sent back verbatim while the tool loop they
    /// belong to goes on; other providers ignore them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signed_reasoning: Vec<SignedReasoning>,
    /// Images of a user message or a tool result, by reference: history
    /// rows keep the reference, the bytes stay in the media store until a
    /// call loads them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// An image the user sent or a tool produced, as the model sees it: checked
/// (and resized where needed) by the gateway (see `crate::media`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// `image/jpeg` or `image/png` (a tool's image may also be
    /// `image/gif` or `image/webp`).
    pub mime: String,
    /// The content hash the media store files it under.
    pub hash: String,
    pub width: u32,
    pub height: u32,
    /// The bytes in base64, loaded just before a model call and never
    /// stored: a message without them shows the model a placeholder.
    #[serde(skip)]
    pub data: Option<std::sync::Arc<str>>,
}

impl Image {
    /// What the model reads where the image itself is not sent (an old turn,
    /// a model without vision, a file since collected).
    pub fn placeholder(&self) -> String {
        format!(
            "[image {}x{} sent earlier; no longer shown]",
            self.width, self.height
        )
    }
}

/// The bytes are left out: base64 of a photo is hundreds of kilobytes.
impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("mime", &self.mime)
            .field("hash", &self.hash)
            .field("size", &(self.width, self.height))
            .field("loaded", &self.data.is_some())
            .finish()
    }
}

/// A reasoning block as its provider signed it; only the unmodified block
/// (text and signature, or the encrypted data) is accepted back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SignedReasoning {
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Reasoning the provider's safety systems encrypted.
    RedactedThinking {
        data: String,
    },
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content.into())
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, content.into())
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content.into())
    }

    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            ..Self::plain(Role::Tool, content.into())
        }
    }

    fn plain(role: Role, content: String) -> Self {
        Self {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: None,
            signed_reasoning: Vec::new(),
            images: Vec::new(),
        }
    }

    /// The images loaded for this call, each with its base64 bytes.
    pub fn loaded_images(&self) -> impl Iterator<Item = (&Image, &str)> {
        self.images
            .iter()
            .filter_map(|i| i.data.as_deref().map(|d| (i, d)))
    }

    /// Placeholders of the images not loaded for this call, one per line.
    pub fn image_placeholders(&self) -> Option<String> {
        let lines: Vec<String> = self
            .images
            .iter()
            .filter(|i| i.data.is_none())
            .map(Image::placeholder)
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    /// The text with the placeholders of unloaded images after it.
    pub fn text_with_placeholders(&self) -> std::borrow::Cow<'_, str> {
        match self.image_placeholders() {
            None => std::borrow::Cow::Borrowed(self.content.as_str()),
            Some(p) if self.content.is_empty() => std::borrow::Cow::Owned(p),
            Some(p) => std::borrow::Cow::Owned(format!("{}\n{p}", self.content)),
        }
    }
}

/// A tool as advertised to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Token usage of one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// One piece of a streamed model response.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    Text(String),
    Thinking(String),
    /// A complete signed reasoning block (after its `Thinking` deltas), to be
    /// kept with the assistant message.
    SignedReasoning(SignedReasoning),
    /// The reply's whole reasoning as an OpenAI-compatible endpoint sent it
    /// (`reasoning_content`), after its `Thinking` deltas: kept with the
    /// assistant message to go back as `reasoning_content`. Other protocols'
    /// thinking never goes back that way.
    ReasoningContent(String),
    /// Complete tool calls (fragments already assembled by the provider).
    ToolCalls(Vec<ToolCall>),
    Usage(Usage),
}

/// Everything a provider needs for one model call.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDefinition>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_messages_keep_an_images_reference_not_its_bytes() {
        let mut result =
            Message::tool_result("call_1", "[image result 1: image/png, 9 bytes — attached]");
        result.images.push(Image {
            mime: "image/png".into(),
            hash: "abc123".into(),
            width: 2,
            height: 1,
            data: Some("cG5nIGJ5dGVz".into()),
        });
        let stored = serde_json::to_string(&result).unwrap();
        assert!(
            stored.contains("abc123") && !stored.contains("cG5nIGJ5dGVz"),
            "{stored}"
        );
        let back: Message = serde_json::from_str(&stored).unwrap();
        assert_eq!(back.images[0].hash, "abc123");
        assert!(back.images[0].data.is_none());
    }

    #[test]
    fn call_ids_are_made_portable_deterministically() {
        assert_eq!(portable_call_id("call_abc-1"), "call_abc-1");
        assert_eq!(portable_call_id("toolu_01XyZ"), "toolu_01XyZ");
        let gemini = "gc_0123456789abcdef0123456789abcdef.Q2lnbmF0dXJl+/==";
        assert_eq!(
            portable_call_id(gemini),
            "gc_0123456789abcdef0123456789abcdef"
        );
        let odd = "weird id with spaces and a very long tail that goes on";
        let once = portable_call_id(odd).into_owned();
        assert_eq!(portable_call_id(odd), once);
        assert!(once.starts_with("call_") && once.len() <= 40);
    }
}
