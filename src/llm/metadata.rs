//! Model metadata: context windows inferred from model names, and how much
//! of a window a request may fill.

/// What the runtime needs to know about the active model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub name: String,
    pub context_window: u32,
}

impl ModelInfo {
    /// Uses `configured` when given, else infers the window from the name.
    pub fn new(name: impl Into<String>, configured: Option<u32>) -> Self {
        let name = name.into();
        let context_window = configured.unwrap_or_else(|| context_window_for(&name));
        Self {
            name,
            context_window,
        }
    }
}

/// The safety reserve of a window: min(max(16,384, 25%), 50%) (spec §7),
/// room for the reply and for the estimate's error.
pub fn reserve(window: usize) -> usize {
    (window / 4).max(16_384).min(window / 2)
}

/// The estimated tokens above which a request no longer fits a window: the
/// runtime compacts before it, and a fallback is not sent a request sized for
/// a larger window past it.
pub fn threshold(window: usize) -> usize {
    window - reserve(window)
}

/// Context window inferred from a model name (spec §3); unknown models get 64K.
pub fn context_window_for(model: &str) -> u32 {
    let m = model.to_ascii_lowercase();
    if m.contains("claude") {
        200_000
    } else if m.contains("gemini") {
        1_000_000
    } else if m.contains("gpt") || m.starts_with("o1") || m.starts_with("o3") || m.starts_with("o4")
    {
        128_000
    } else {
        // DeepSeek and unknown models.
        64_000
    }
}

/// Whether a model reads images, inferred from its name (`LLM_VISION=auto`):
/// the current families of the three vendors, and the open vision models'
/// usual markers (`-vl`, `vision`, `llava`, …). Unknown names are text-only.
pub fn sees_images(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let family = m.contains("claude-3")
        || m.contains("claude-sonnet")
        || m.contains("claude-opus")
        || m.contains("claude-haiku")
        || m.contains("gemini")
        || m.contains("gpt-4o")
        || m.contains("gpt-4.1")
        || m.contains("gpt-4-turbo")
        || m.contains("gpt-5")
        || m.starts_with("o3")
        || m.starts_with("o4");
    let open = [
        "vision",
        "-vl",
        "vl-",
        "llava",
        "pixtral",
        "gemma3",
        "gemma-3",
        "minicpm-v",
        "moondream",
    ]
    .iter()
    .any(|marker| m.contains(marker));
    family || open
}

#[cfg(test)]
mod tests {
    #[test]
    fn vision_follows_model_families() {
        for seeing in [
            "gpt-4o-mini",
            "claude-sonnet-4",
            "gemini-2.5-flash",
            "qwen2.5-vl:7b",
            "llava:13b",
            "llama3.2-vision",
        ] {
            assert!(sees_images(seeing), "{seeing}");
        }
        for blind in ["deepseek-chat", "llama3.1:8b", "gpt-3.5-turbo", "mistral"] {
            assert!(!sees_images(blind), "{blind}");
        }
    }

    use super::*;

    #[test]
    fn windows_follow_model_families() {
        assert_eq!(context_window_for("claude-sonnet-4"), 200_000);
        assert_eq!(context_window_for("gemini-2.5-pro"), 1_000_000);
        assert_eq!(context_window_for("gpt-4o-mini"), 128_000);
        assert_eq!(context_window_for("deepseek-chat"), 64_000);
        assert_eq!(context_window_for("llama3.1:8b"), 64_000);
        assert_eq!(
            ModelInfo::new("llama3.1:8b", Some(8192)).context_window,
            8192
        );
    }
}
