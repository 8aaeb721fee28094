//! Embedding off the reply path: the background worker takes the memories
//! with no embedding (new, edited, or of another model) in batches, and the
//! back-fill (`switchboard memory backfill`) runs the same loop to the end
//! with its progress; the worker embeds chat messages too (`messages`). Both
//! resume where they stopped: the queue is simply the rows still without a
//! vector.

use super::client::{EmbedError, Embedder};
use crate::store::{Store, StoreError, Unembedded};
use chrono::Utc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often an idle worker looks for new memories.
const IDLE_POLL: Duration = Duration::from_secs(2);
/// The longest wait after a failure (it doubles from one second).
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Why a round of embedding stopped.
#[derive(Debug, thiserror::Error)]
pub enum SemanticError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// Embeds up to one batch of waiting memories; returns how many rows it
/// settled (0: nothing waits). A text the endpoint refuses alone is marked
/// skipped so one bad row cannot stop the queue.
pub async fn embed_pending(store: &Store, embedder: &Embedder) -> Result<usize, SemanticError> {
    let rows = store.memories().unembedded(embedder.config().batch).await?;
    if rows.is_empty() {
        return Ok(0);
    }
    let texts: Vec<String> = rows.iter().map(|r| r.content.clone()).collect();
    match embedder.embed(&texts).await {
        Ok(vectors) => {
            for (row, v) in rows.iter().zip(&vectors) {
                save(store, embedder, row, Some(v)).await?;
            }
        }
        Err(e) if e.is_refusal() => {
            // Find the text it refused: one at a time.
            for row in &rows {
                match embedder.embed(std::slice::from_ref(&row.content)).await {
                    Ok(v) => save(store, embedder, row, v.first().map(Vec::as_slice)).await?,
                    Err(e) if e.is_refusal() => {
                        tracing::warn!(memory = row.id, error = %e, "the embeddings endpoint refused a memory; skipped");
                        save(store, embedder, row, None).await?;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Err(e) => return Err(e.into()),
    }
    Ok(rows.len())
}

async fn save(
    store: &Store,
    embedder: &Embedder,
    row: &Unembedded,
    vector: Option<&[f32]>,
) -> Result<(), StoreError> {
    store
        .memories()
        .save_embedding(row.id, &row.content, embedder.model(), vector, Utc::now())
        .await?;
    Ok(())
}

/// The background worker: re-queues vectors of another model, then embeds
/// new memories and chat messages as they come, until `shutdown`.
pub async fn run_worker(store: Store, embedder: Embedder, shutdown: CancellationToken) {
    forget_other_models(&store, embedder.model()).await;
    let mut backoff = Duration::from_secs(1);
    loop {
        let round = async {
            let memories = embed_pending(&store, &embedder).await?;
            let messages = super::messages::embed_pending_messages(&store, &embedder).await?;
            Ok::<_, SemanticError>(memories + messages)
        };
        let wait = match round.await {
            Ok(0) => IDLE_POLL,
            Ok(_) => {
                backoff = Duration::from_secs(1);
                Duration::ZERO
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?backoff, "embedding memories or messages failed");
                let wait = backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                wait
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Re-queues memories and drops message vectors embedded by another model.
async fn forget_other_models(store: &Store, model: &str) {
    let memories = store.memories().forget_other_embeddings(model).await;
    let messages = store.history().forget_other_vectors(model).await;
    match (memories, messages) {
        (Ok(0), Ok(0)) => {}
        (Ok(memories), Ok(messages)) => {
            tracing::info!(
                memories,
                messages,
                model,
                "embedding model changed; re-embedding"
            )
        }
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!(error = %e, "could not check the embedding model of memories and messages")
        }
    }
}

/// What a back-fill did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backfilled {
    /// Rows re-queued because another model had embedded them.
    pub requeued: u64,
    /// Rows settled by this run.
    pub settled: u64,
    /// Rows with a vector of the model at the end.
    pub embedded: u64,
}

/// Embeds every waiting memory, calling `progress(settled, waiting)` after
/// each batch; an error stops it (running it again resumes).
pub async fn backfill(
    store: &Store,
    embedder: &Embedder,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Backfilled, SemanticError> {
    let requeued = store
        .memories()
        .forget_other_embeddings(embedder.model())
        .await?;
    let mut settled = 0u64;
    loop {
        let n = embed_pending(store, embedder).await?;
        if n == 0 {
            break;
        }
        settled += n as u64;
        let now = store
            .memories()
            .embedding_progress(embedder.model())
            .await?;
        progress(settled, now.waiting);
    }
    let end = store
        .memories()
        .embedding_progress(embedder.model())
        .await?;
    Ok(Backfilled {
        requeued,
        settled,
        embedded: end.embedded,
    })
}
