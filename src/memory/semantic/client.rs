//! The OpenAI-compatible embeddings client: `POST {base}/embeddings` with
//! `{model, input: [...]}`, answered by `{data: [{index, embedding}]}`.
//! The key goes in the `Authorization` header only; errors carry no URL and
//! no key.

use super::config::EmbeddingsConfig;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

/// Characters of one text sent at most (memories are short; this keeps a
/// pasted log under every model's input limit).
pub const MAX_INPUT_CHARS: usize = 2000;
/// The longest a worker's batch request may take.
const BATCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Why an embedding request failed; safe to log (no key, no URL).
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("the embeddings endpoint could not be reached ({0})")]
    Unreachable(String),
    #[error("the embeddings endpoint refused the request (HTTP {status}: {detail})")]
    Refused { status: u16, detail: String },
    #[error("the embeddings endpoint sent an answer I could not read ({0})")]
    Malformed(String),
    #[error("the embeddings endpoint took too long")]
    Timeout,
}

impl EmbedError {
    /// The texts themselves were refused (HTTP 400, 413 or 422: too long,
    /// empty): the same texts would be refused again. A wrong key, model or
    /// URL (401, 403, 404) or a rate limit is not the texts' fault.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            EmbedError::Refused {
                status: 400 | 413 | 422,
                ..
            }
        )
    }
}

/// Embeds texts with one configured model. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Embedder {
    http: reqwest::Client,
    config: EmbeddingsConfig,
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

impl Embedder {
    pub fn new(config: EmbeddingsConfig) -> Embedder {
        Embedder {
            http: reqwest::Client::new(),
            config,
        }
    }

    pub fn config(&self) -> &EmbeddingsConfig {
        &self.config
    }

    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// One query's vector, within the recall timeout.
    pub async fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut out = self
            .request(&[text.to_owned()], self.config.query_timeout)
            .await?;
        out.pop()
            .ok_or_else(|| EmbedError::Malformed("no embedding".into()))
    }

    /// The vectors of `texts`, in order (one request).
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.request(texts, BATCH_TIMEOUT).await
    }

    async fn request(
        &self,
        texts: &[String],
        timeout: Duration,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let input: Vec<String> = texts.iter().map(|t| clip(t)).collect();
        let mut request = self
            .http
            .post(format!("{}/embeddings", self.config.base_url))
            .timeout(timeout)
            .json(&json!({ "model": self.config.model, "input": input }));
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key.expose());
        }
        let failed = |e: reqwest::Error| {
            if e.is_timeout() {
                EmbedError::Timeout
            } else {
                EmbedError::Unreachable(crate::secrets::scrub_string(e.without_url().to_string()))
            }
        };
        let response = request.send().await.map_err(failed)?;
        let status = response.status();
        let body = response.bytes().await.map_err(failed)?;
        if !status.is_success() {
            let detail: String = String::from_utf8_lossy(&body).chars().take(200).collect();
            return Err(EmbedError::Refused {
                status: status.as_u16(),
                detail: crate::secrets::scrub_string(detail),
            });
        }
        let answer: Answer =
            serde_json::from_slice(&body).map_err(|e| EmbedError::Malformed(e.to_string()))?;
        order(answer.data, texts.len())
    }
}

/// The vectors by their `index`: one per input, all of one non-zero dimension.
fn order(items: Vec<Item>, n: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    if items.len() != n {
        return Err(EmbedError::Malformed(format!(
            "{} embeddings for {n} inputs",
            items.len()
        )));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
    for item in items {
        let slot = out
            .get_mut(item.index)
            .ok_or_else(|| EmbedError::Malformed(format!("index {} out of range", item.index)))?;
        *slot = Some(item.embedding);
    }
    let out: Vec<Vec<f32>> = out
        .into_iter()
        .collect::<Option<_>>()
        .ok_or_else(|| EmbedError::Malformed("an input has no embedding".into()))?;
    let dim = out.first().map_or(0, Vec::len);
    if dim == 0
        || out
            .iter()
            .any(|v| v.len() != dim || v.iter().any(|x| !x.is_finite()))
    {
        return Err(EmbedError::Malformed(
            "empty, uneven or non-finite vectors".into(),
        ));
    }
    Ok(out)
}

/// A text cut to [`MAX_INPUT_CHARS`] on a character boundary.
fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_INPUT_CHARS) {
        Some((at, _)) => text[..at].to_owned(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_put_in_input_order_and_checked() {
        let items = vec![
            Item {
                index: 1,
                embedding: vec![0.0, 1.0],
            },
            Item {
                index: 0,
                embedding: vec![1.0, 0.0],
            },
        ];
        let out = order(items, 2).unwrap();
        assert_eq!(out, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        let uneven = vec![
            Item {
                index: 0,
                embedding: vec![1.0],
            },
            Item {
                index: 1,
                embedding: vec![1.0, 2.0],
            },
        ];
        assert!(order(uneven, 2).is_err());
        let twice = vec![
            Item {
                index: 0,
                embedding: vec![1.0],
            },
            Item {
                index: 0,
                embedding: vec![1.0],
            },
        ];
        assert!(order(twice, 2).is_err());
        assert_eq!(
            clip(&"语".repeat(MAX_INPUT_CHARS + 5)).chars().count(),
            MAX_INPUT_CHARS
        );
    }
}
