//! Embedding the chat history off the reply path: the background worker and
//! `switchboard memory backfill` take the messages with no vector of the
//! model in batches, as for memories. User and assistant texts are embedded
//! (clipped to [`super::MAX_INPUT_CHARS`] by the client); tool results,
//! system rows and empty texts are settled without a vector.

use super::client::Embedder;
use super::worker::{Backfilled, SemanticError};
use crate::llm::{Message, Role};
use crate::store::{QueuedMessage, Store, StoreError};
use chrono::Utc;

/// The role stored beside a message's vector; searches filter on it.
pub fn role_name(role: &Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::System => "system",
    }
}

/// A queued message's role and the text to embed (`None`: nothing to embed).
fn embeddable(row: &QueuedMessage) -> (&'static str, Option<String>) {
    let Ok(message) = serde_json::from_str::<Message>(&row.payload) else {
        return ("unreadable", None);
    };
    let role = role_name(&message.role);
    let text = matches!(message.role, Role::User | Role::Assistant)
        .then(|| message.content.trim().to_owned())
        .filter(|t| !t.is_empty());
    (role, text)
}

/// Embeds up to one batch of waiting messages; returns how many it settled
/// (0: nothing waits). A text the endpoint refuses alone is settled without
/// a vector so one bad row cannot stop the queue.
pub async fn embed_pending_messages(
    store: &Store,
    embedder: &Embedder,
) -> Result<usize, SemanticError> {
    let model = embedder.model();
    let rows = store
        .history()
        .unembedded(model, embedder.config().batch)
        .await?;
    let mut texts = Vec::new();
    let mut todo = Vec::new();
    for row in &rows {
        match embeddable(row) {
            (role, Some(text)) => {
                texts.push(text);
                todo.push((row.id, role));
            }
            (role, None) => save(store, model, row.id, role, None).await?,
        }
    }
    if texts.is_empty() {
        return Ok(rows.len());
    }
    match embedder.embed(&texts).await {
        Ok(vectors) => {
            for ((id, role), v) in todo.iter().zip(&vectors) {
                save(store, model, *id, role, Some(v)).await?;
            }
        }
        Err(e) if e.is_refusal() => {
            for ((id, role), text) in todo.iter().zip(&texts) {
                match embedder.embed(std::slice::from_ref(text)).await {
                    Ok(v) => save(store, model, *id, role, v.first().map(Vec::as_slice)).await?,
                    Err(e) if e.is_refusal() => {
                        tracing::warn!(message = id, error = %e, "the embeddings endpoint refused a message; skipped");
                        save(store, model, *id, role, None).await?;
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
    model: &str,
    id: i64,
    role: &str,
    vector: Option<&[f32]>,
) -> Result<(), StoreError> {
    store
        .history()
        .save_vector(id, model, role, vector, Utc::now())
        .await
}

/// Embeds every waiting chat message, calling `progress(settled, waiting)`
/// after each batch; an error stops it (running it again resumes).
pub async fn backfill_history(
    store: &Store,
    embedder: &Embedder,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Backfilled, SemanticError> {
    let model = embedder.model();
    let requeued = store.history().forget_other_vectors(model).await?;
    let mut settled = 0u64;
    loop {
        let n = embed_pending_messages(store, embedder).await?;
        if n == 0 {
            break;
        }
        settled += n as u64;
        let now = store.history().embedding_progress(model).await?;
        progress(settled, now.waiting);
    }
    let end = store.history().embedding_progress(model).await?;
    Ok(Backfilled {
        requeued,
        settled,
        embedded: end.embedded,
    })
}
