//! Semantic recall settings (`EMBEDDINGS_*`), read with the memory settings.
//! Unset `EMBEDDINGS_BASE_URL`: no embeddings, recall exactly as without.

use crate::env::{positive, ConfigError};
use std::time::Duration;
use switchboard_platform::Secret;

/// An OpenAI-compatible `/embeddings` endpoint and how recall uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingsConfig {
    /// `EMBEDDINGS_BASE_URL`: the API root; requests go to `{base}/embeddings`.
    pub base_url: String,
    /// `EMBEDDINGS_MODEL` (required with the URL).
    pub model: String,
    /// `EMBEDDINGS_API_KEY`: a bearer key, never logged.
    pub api_key: Option<Secret>,
    /// `EMBEDDINGS_TIMEOUT_MS` (default 250): the longest a recall waits for
    /// its query's embedding before recalling by words only.
    pub query_timeout: Duration,
    /// `EMBEDDINGS_BATCH` (default 64, at most 2048): texts per request of
    /// the background worker and the back-fill.
    pub batch: u32,
    /// `EMBEDDINGS_MIN_SIMILARITY` (default 0.3): cosine similarity below
    /// which a memory counts as unrelated.
    pub min_similarity: f64,
    /// `EMBEDDINGS_CACHE_MB` (default 256): memory for the per-user vector
    /// indexes; the least recently used users are dropped beyond it.
    pub cache_bytes: usize,
}

impl EmbeddingsConfig {
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(250);
    pub const DEFAULT_BATCH: u32 = 64;
    pub const MAX_BATCH: u32 = 2048;
    pub const DEFAULT_MIN_SIMILARITY: f64 = 0.3;
    pub const DEFAULT_CACHE_MB: usize = 256;

    /// A config with the defaults for an endpoint and model.
    pub fn new(base_url: &str, model: &str) -> EmbeddingsConfig {
        EmbeddingsConfig {
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            api_key: None,
            query_timeout: Self::DEFAULT_TIMEOUT,
            batch: Self::DEFAULT_BATCH,
            min_similarity: Self::DEFAULT_MIN_SIMILARITY,
            cache_bytes: Self::DEFAULT_CACHE_MB << 20,
        }
    }

    /// Reads the variables; `None` when `EMBEDDINGS_BASE_URL` is unset.
    pub fn from_lookup(
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<EmbeddingsConfig>, ConfigError> {
        let Some(base) = get("EMBEDDINGS_BASE_URL").filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        let base = base.trim();
        match url::Url::parse(base) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
            _ => return Err(ConfigError::Invalid {
                var: "EMBEDDINGS_BASE_URL",
                problem: "not an http(s) URL".into(),
                fix:
                    "use the API root, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1",
            }),
        }
        let model = get("EMBEDDINGS_MODEL")
            .map(|m| m.trim().to_owned())
            .filter(|m| !m.is_empty())
            .ok_or(ConfigError::Missing {
                var: "EMBEDDINGS_MODEL",
                fix: "name the embedding model, e.g. text-embedding-3-small, or unset EMBEDDINGS_BASE_URL",
            })?;
        let mut c = EmbeddingsConfig::new(base, &model);
        c.api_key = get("EMBEDDINGS_API_KEY")
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty())
            .map(Secret::new);
        if let Some(ms) = positive(get, "EMBEDDINGS_TIMEOUT_MS")? {
            c.query_timeout = Duration::from_millis(ms);
        }
        if let Some(n) = positive(get, "EMBEDDINGS_BATCH")? {
            c.batch = u32::try_from(n)
                .ok()
                .filter(|n| *n <= Self::MAX_BATCH)
                .ok_or_else(|| ConfigError::Invalid {
                    var: "EMBEDDINGS_BATCH",
                    problem: format!("{n} is more than {}", Self::MAX_BATCH),
                    fix: "use 1 to 2048 (OpenAI's limit), or unset it for 64",
                })?;
        }
        if let Some(mb) = positive(get, "EMBEDDINGS_CACHE_MB")? {
            c.cache_bytes = usize::try_from(mb)
                .unwrap_or(usize::MAX)
                .saturating_mul(1 << 20);
        }
        if let Some(raw) = get("EMBEDDINGS_MIN_SIMILARITY").filter(|v| !v.trim().is_empty()) {
            c.min_similarity = raw
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| (0.0..1.0).contains(v))
                .ok_or_else(|| ConfigError::Invalid {
                    var: "EMBEDDINGS_MIN_SIMILARITY",
                    problem: format!("{raw:?} is not a number from 0 up to 1"),
                    fix: "use a cosine similarity such as 0.3, or unset it",
                })?;
        }
        Ok(Some(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<EmbeddingsConfig>, ConfigError> {
        let map: HashMap<&str, &str> = pairs.iter().copied().collect();
        EmbeddingsConfig::from_lookup(&|k| map.get(k).map(|v| (*v).to_owned()))
    }

    #[test]
    fn unset_is_off_and_every_variable_is_checked() {
        assert_eq!(read(&[]).unwrap(), None);
        let e = read(&[("EMBEDDINGS_BASE_URL", "http://e/v1")]).unwrap_err();
        assert!(e.to_string().contains("EMBEDDINGS_MODEL"), "{e}");
        let e = read(&[("EMBEDDINGS_BASE_URL", "e/v1"), ("EMBEDDINGS_MODEL", "m")]).unwrap_err();
        assert!(e.to_string().contains("EMBEDDINGS_BASE_URL"), "{e}");
        let c = read(&[
            ("EMBEDDINGS_BASE_URL", "http://e/v1/"),
            ("EMBEDDINGS_MODEL", "m"),
            ("EMBEDDINGS_API_KEY", "sk-emb"),
            ("EMBEDDINGS_TIMEOUT_MS", "100"),
            ("EMBEDDINGS_BATCH", "16"),
            ("EMBEDDINGS_MIN_SIMILARITY", "0.5"),
            ("EMBEDDINGS_CACHE_MB", "8"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.base_url, "http://e/v1");
        assert_eq!(c.api_key.as_ref().map(Secret::expose), Some("sk-emb"));
        assert_eq!(
            (c.query_timeout, c.batch, c.min_similarity, c.cache_bytes),
            (Duration::from_millis(100), 16, 0.5, 8 << 20)
        );
        let base = [
            ("EMBEDDINGS_BASE_URL", "http://e"),
            ("EMBEDDINGS_MODEL", "m"),
        ];
        for bad in [
            ("EMBEDDINGS_BATCH", "5000"),
            ("EMBEDDINGS_MIN_SIMILARITY", "1.5"),
            ("EMBEDDINGS_TIMEOUT_MS", "0"),
        ] {
            let mut vars = base.to_vec();
            vars.push(bad);
            let e = read(&vars).unwrap_err();
            assert!(e.to_string().contains(bad.0), "{e}");
        }
    }
}
