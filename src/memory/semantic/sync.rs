//! Keeping a user's in-memory index in step with the database.
//!
//! A recall reads, on its way, only the few vectors written after the
//! index's cursor (at most [`ON_THE_WAY`]). Anything bigger is read by a
//! background catch-up, one per user at a time, page by page, so no recall
//! waits for it and the index's lock is held one page at a time:
//! - a batch of new vectors (a back-fill, another process's worker);
//! - once every [`RECHECK_EVERY_MS`], the rows up to [`SLACK_MS`] behind
//!   the previous re-read: a row can land behind the cursor, written by a
//!   process whose clock is a little slow, or committed a moment after its
//!   `embedded_at`. Each re-read starts [`SLACK_MS`] before the previous one
//!   did, so a row at most that late is read by the first re-read after it
//!   commits. A re-read reads the rows' places (id, `embedded_at`) only,
//!   and the vectors of just those the index lacks.

use super::{Indexed, Semantic, UserIndex};
use crate::store::{MemoryOwner, StoreError, StoredVector, VectorCursor};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// New vectors a recall reads on its way at most.
const ON_THE_WAY: u32 = 64;
/// Vectors read per page by the catch-up.
const PAGE: u32 = 500;
/// Places (id, `embedded_at`) read per page by a re-read.
const STAMP_PAGE: u32 = 5_000;
/// How late a row may land behind the cursor and still be read (epoch ms):
/// clocks of several gateway processes on one PostgreSQL differ a little.
pub const SLACK_MS: i64 = 5_000;
/// How often the rows behind the cursor are read again (ms).
pub const RECHECK_EVERY_MS: i64 = 5_000;

/// Where an index stands against the database.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadState {
    /// The last vector read, in write order.
    pub cursor: VectorCursor,
    /// When the rows behind the cursor were last read again (epoch ms, this
    /// process's clock); `None` before the first read.
    pub rechecked_at: Option<i64>,
    /// A background catch-up runs.
    pub catching_up: bool,
}

fn read(index: &RwLock<Indexed>) -> RwLockReadGuard<'_, Indexed> {
    index.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(index: &RwLock<Indexed>) -> RwLockWriteGuard<'_, Indexed> {
    index.write().unwrap_or_else(PoisonError::into_inner)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Semantic {
    /// On a recall's way: the few vectors written after the cursor. Starts
    /// the background catch-up when more may be waiting or a re-read of the
    /// rows behind the cursor is due.
    pub(super) async fn refresh(
        &self,
        owner: MemoryOwner,
        index: &Arc<RwLock<Indexed>>,
    ) -> Result<(), StoreError> {
        let full = self.read_page(owner, index, ON_THE_WAY).await?;
        let due = read(index)
            .state
            .rechecked_at
            .is_none_or(|at| now_ms() - at >= RECHECK_EVERY_MS);
        if full || due {
            self.start_catch_up(owner, index);
        }
        Ok(())
    }

    /// Everything after the cursor, page by page, and the rows behind it
    /// again when a re-read is due at `now` (epoch ms). A fresh index is read
    /// whole. What a recall starts in the background.
    pub(super) async fn catch_up_index(
        &self,
        owner: MemoryOwner,
        index: &RwLock<Indexed>,
        now: i64,
    ) -> Result<(), StoreError> {
        let rechecked = read(index).state.rechecked_at;
        let recheck = match rechecked {
            Some(at) if now - at >= RECHECK_EVERY_MS => Some(VectorCursor::at(at - SLACK_MS)),
            _ => None,
        };
        if let Some(from) = recheck {
            self.reread(owner, index, from).await?;
        }
        while self.read_page(owner, index, PAGE).await? {}
        if rechecked.is_none() || recheck.is_some() {
            write(index).state.rechecked_at = Some(now);
        }
        Ok(())
    }

    /// The rows after `from` the index lacks, or holds an older vector of:
    /// their places are read (the database's index alone), and only those
    /// rows' vectors.
    async fn reread(
        &self,
        owner: MemoryOwner,
        index: &RwLock<Indexed>,
        mut from: VectorCursor,
    ) -> Result<(), StoreError> {
        let memories = self.inner.store.memories();
        let model = self.inner.embedder.model();
        loop {
            let places = memories
                .vector_stamps_after(owner, model, from, STAMP_PAGE)
                .await?;
            let Some(last) = places.last() else { break };
            from = *last;
            let missing: Vec<i64> = {
                let index = read(index);
                places
                    .iter()
                    .filter(|p| index.vectors.stamp(p.id) != Some(p.embedded_at))
                    .map(|p| p.id)
                    .collect()
            };
            for ids in missing.chunks(PAGE as usize) {
                let mut rows = memories.vectors_of(owner, model, ids).await?;
                rows.sort_by_key(VectorCursor::of);
                self.take(index, &rows);
            }
            if places.len() < STAMP_PAGE as usize {
                break;
            }
        }
        Ok(())
    }

    /// Starts [`Self::catch_up_index`] in the background unless one runs.
    fn start_catch_up(&self, owner: MemoryOwner, index: &Arc<RwLock<Indexed>>) {
        {
            let mut index = write(index);
            if index.state.catching_up {
                return;
            }
            index.state.catching_up = true;
        }
        let running = Running(Arc::clone(index));
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(e) = this.catch_up_index(owner, &running.0, now_ms()).await {
                tracing::debug!(error = %e, "could not catch up with the memory vectors");
            }
        });
    }

    /// Reads up to `limit` vectors after the cursor into the index; whether
    /// the page was full (more may follow).
    async fn read_page(
        &self,
        owner: MemoryOwner,
        index: &RwLock<Indexed>,
        limit: u32,
    ) -> Result<bool, StoreError> {
        let after = read(index).state.cursor;
        let rows = self.page(owner, after, limit).await?;
        self.take(index, &rows);
        Ok(rows.len() == limit as usize)
    }

    async fn page(
        &self,
        owner: MemoryOwner,
        after: VectorCursor,
        limit: u32,
    ) -> Result<Vec<StoredVector>, StoreError> {
        self.inner
            .store
            .memories()
            .vectors_after(owner, self.inner.embedder.model(), after, limit)
            .await
    }

    /// Puts `rows` into the index, moves the cursor on past them, and keeps
    /// the index within the cache budget.
    fn take(&self, index: &RwLock<Indexed>, rows: &[StoredVector]) {
        let Some(last) = rows.last() else { return };
        let budget = self.inner.embedder.config().cache_bytes;
        let mut index = write(index);
        for row in rows {
            index.vectors.upsert(row.id, &row.vector, row.embedded_at);
        }
        index.state.cursor = index.state.cursor.max(VectorCursor::of(last));
        // One user alone may not outgrow the whole budget: their newest stay.
        let per = UserIndex::bytes_per_vector(index.vectors.dim()).max(1);
        index.vectors.keep_newest(budget / per);
    }
}

/// Marks the index's catch-up over when the task ends, however it ends.
struct Running(Arc<RwLock<Indexed>>);

impl Drop for Running {
    fn drop(&mut self) {
        write(&self.0).state.catching_up = false;
    }
}
