//! Semantic recall (`EMBEDDINGS_*`): memories embedded off the reply path by
//! a background worker ([`worker`]), their vectors kept beside the rows and,
//! per user, in a bounded in-memory index ([`UserIndex`]) kept in step with the
//! database mostly off the recall's way ([`sync`]); a recall embeds its
//! message within `EMBEDDINGS_TIMEOUT_MS` and, when that fails, recalls by
//! words only, as without the setting. Chat messages are embedded by the same
//! worker ([`messages`]) for `query_my_chat_history` ([`history_search`]).
//!
//! The ranking (see `memory::recall`): a memory's relevance is the noisy-or
//! `R = L + S − L·S` of its word relevance `L` and its semantic relevance
//! `S = clamp((cos − min_similarity) / (1 − min_similarity), 0, 1)`; `R`
//! then goes through the same mix with the 30-day half-life and the value
//! weights (importance, use) as word recall.

mod client;
mod config;
mod history_search;
mod messages;
mod sync;
mod worker;

pub use client::{EmbedError, Embedder, MAX_INPUT_CHARS};
pub use config::EmbeddingsConfig;
pub use history_search::{MessageQuery, MessageScope, HISTORY_SCANNED};
pub use messages::{backfill_history, embed_pending_messages, role_name};
pub use switchboard_vectors::Query;
pub use sync::{ReadState, RECHECK_EVERY_MS, SLACK_MS};
pub use worker::{backfill, embed_pending, run_worker, Backfilled, SemanticError};

pub use switchboard_vectors::UserIndex;

/// One user's vectors in memory (the `switchboard-vectors` crate), and how
/// far the database has been read into them, under one lock.
#[derive(Debug, Default)]
struct Indexed {
    vectors: UserIndex,
    state: ReadState,
}

use crate::store::{MemoryOwner, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

/// Memories shortlisted by similarity per recall, besides the word matches.
pub const SEMANTIC_CANDIDATES: usize = 24;

/// The embedder and the per-user indexes of one process. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Semantic {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    embedder: Embedder,
    store: Store,
    users: Mutex<HashMap<MemoryOwner, Slot>>,
}

#[derive(Debug)]
enum Slot {
    /// Being read from the database in the background.
    Loading,
    Ready {
        index: Arc<RwLock<Indexed>>,
        used: Instant,
    },
}

/// What a recall's message matched by meaning.
#[derive(Debug)]
pub struct SemanticMatch {
    query: Query,
    index: Arc<RwLock<Indexed>>,
    /// The nearest memories and their cosine similarity.
    pub nearest: Vec<(i64, f32)>,
    min_similarity: f64,
}

impl SemanticMatch {
    /// The semantic relevance `S` of memory `id` (0 without a vector).
    pub fn relevance(&self, id: i64) -> f64 {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        let cos = index.vectors.similarity(&self.query, id).unwrap_or(0.0);
        scaled(f64::from(cos), self.min_similarity)
    }

    /// The nearest memories similar enough to count.
    pub fn related(&self) -> impl Iterator<Item = i64> + '_ {
        self.nearest
            .iter()
            .filter(|(_, cos)| f64::from(*cos) > self.min_similarity)
            .map(|(id, _)| *id)
    }
}

/// `S`: cosine similarity above the floor, scaled to 0 – 1.
pub fn scaled(cos: f64, floor: f64) -> f64 {
    ((cos - floor) / (1.0 - floor)).clamp(0.0, 1.0)
}

/// `R`: word relevance `lexical` and semantic relevance `semantic` together.
pub fn blend(lexical: f64, semantic: f64) -> f64 {
    (lexical + semantic - lexical * semantic).clamp(0.0, 1.0)
}

impl Semantic {
    pub fn new(store: Store, config: EmbeddingsConfig) -> Semantic {
        Semantic {
            inner: Arc::new(Inner {
                embedder: Embedder::new(config),
                store,
                users: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn embedder(&self) -> &Embedder {
        &self.inner.embedder
    }

    fn users(&self) -> std::sync::MutexGuard<'_, HashMap<MemoryOwner, Slot>> {
        self.inner
            .users
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The owner's memories nearest to `message`, or `None` (recall by words
    /// only) when the query cannot be embedded in time or the owner's index
    /// is still being read (its first recall after a start starts reading it).
    pub async fn matching(&self, owner: MemoryOwner, message: &str) -> Option<SemanticMatch> {
        let config = self.inner.embedder.config();
        let index = self.ready(owner)?;
        let (vector, refreshed) = tokio::join!(
            self.inner.embedder.embed_query(message),
            self.refresh(owner, &index)
        );
        if let Err(e) = refreshed {
            tracing::debug!(error = %e, "could not refresh the memory vectors");
        }
        let vector = match vector {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "query embedding failed; recalling by words only");
                return None;
            }
        };
        let query = Query::new(&vector)?;
        let nearest = index
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .vectors
            .nearest(&query, SEMANTIC_CANDIDATES);
        Some(SemanticMatch {
            query,
            index,
            nearest,
            min_similarity: config.min_similarity,
        })
    }

    /// Reads the owner's vectors now (a recall otherwise starts reading them
    /// in the background and recalls by words until they are in).
    pub async fn warm(&self, owner: MemoryOwner) {
        self.users().insert(owner, Slot::Loading);
        self.load(owner).await;
    }

    /// The owner's index when loaded; else starts loading it.
    fn ready(&self, owner: MemoryOwner) -> Option<Arc<RwLock<Indexed>>> {
        let mut users = self.users();
        match users.get_mut(&owner) {
            Some(Slot::Ready { index, used }) => {
                *used = Instant::now();
                return Some(Arc::clone(index));
            }
            Some(Slot::Loading) => return None,
            None => {}
        }
        users.insert(owner, Slot::Loading);
        drop(users);
        let this = self.clone();
        tokio::spawn(async move { this.load(owner).await });
        None
    }

    async fn load(&self, owner: MemoryOwner) {
        let index = Arc::new(RwLock::new(Indexed::default()));
        let now = chrono::Utc::now().timestamp_millis();
        if let Err(e) = self.catch_up_index(owner, &index, now).await {
            tracing::warn!(error = %e, "could not read the memory vectors; recalling by words only");
            self.users().remove(&owner);
            return;
        }
        let mut users = self.users();
        users.insert(
            owner,
            Slot::Ready {
                index,
                used: Instant::now(),
            },
        );
        evict(&mut users, self.inner.embedder.config().cache_bytes, owner);
    }

    /// Catches the owner's index up with the database as of `now`, as a
    /// recall does in the background: every vector written since it last
    /// looked, and the rows that landed behind it when a re-read is due.
    /// Nothing when the index is not in memory.
    pub async fn catch_up(
        &self,
        owner: MemoryOwner,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), crate::store::StoreError> {
        let index = match self.users().get(&owner) {
            Some(Slot::Ready { index, .. }) => Arc::clone(index),
            _ => return Ok(()),
        };
        self.catch_up_index(owner, &index, now.timestamp_millis())
            .await
    }

    /// How many of the owner's vectors are in memory and how far the
    /// database has been read (`None`: the index is not in memory).
    pub fn indexed(&self, owner: MemoryOwner) -> Option<(usize, ReadState)> {
        match self.users().get(&owner) {
            Some(Slot::Ready { index, .. }) => {
                let index = index.read().unwrap_or_else(PoisonError::into_inner);
                Some((index.vectors.len(), index.state))
            }
            _ => None,
        }
    }

    /// Users whose index is in memory, and the bytes those take.
    pub fn cached(&self) -> (usize, usize) {
        let users = self.users();
        let bytes = users
            .values()
            .map(|s| match s {
                Slot::Ready { index, .. } => (index.read().unwrap_or_else(PoisonError::into_inner))
                    .vectors
                    .bytes(),
                Slot::Loading => 0,
            })
            .sum();
        (users.len(), bytes)
    }
}

/// Drops the least recently used indexes (never `keep`'s) while over `budget`.
fn evict(users: &mut HashMap<MemoryOwner, Slot>, budget: usize, keep: MemoryOwner) {
    loop {
        let mut total = 0;
        let mut oldest: Option<(MemoryOwner, Instant)> = None;
        for (owner, slot) in users.iter() {
            if let Slot::Ready { index, used } = slot {
                total += (index.read().unwrap_or_else(PoisonError::into_inner))
                    .vectors
                    .bytes();
                if *owner != keep && oldest.is_none_or(|(_, t)| *used < t) {
                    oldest = Some((*owner, *used));
                }
            }
        }
        match oldest {
            Some((owner, _)) if total > budget => {
                users.remove(&owner);
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blend_is_a_noisy_or_of_the_two_relevances() {
        assert_eq!(blend(0.0, 0.0), 0.0);
        assert_eq!(blend(0.6, 0.0), 0.6);
        assert_eq!(blend(0.0, 0.6), 0.6);
        assert!((blend(0.5, 0.5) - 0.75).abs() < 1e-12);
        assert_eq!(scaled(0.2, 0.3), 0.0);
        assert!((scaled(0.65, 0.3) - 0.5).abs() < 1e-12);
        assert_eq!(scaled(1.0, 0.3), 1.0);
    }
}
