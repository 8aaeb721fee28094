//! The semantic half of `query_my_chat_history`: the query embedded within
//! `EMBEDDINGS_TIMEOUT_MS`, then one session's message vectors read newest
//! first in batches (never another session's) and the closest kept, each
//! with its semantic relevance `S` (see the module docs of `semantic`).

use super::client::Embedder;
use super::scaled;
use crate::store::{HistoryWindow, SessionId, Store, StoreError};
use std::collections::{HashMap, HashSet};

/// Message vectors compared at most per search (newest first); `since` and
/// `until` reach older ones.
pub const HISTORY_SCANNED: usize = 20_000;
/// Vectors read per database round trip.
const BATCH: u32 = 500;

/// A search query embedded for comparing with message vectors.
#[derive(Debug, Clone)]
pub struct MessageQuery {
    unit: Vec<f64>,
    floor: f64,
    model: String,
}

/// Which messages a semantic history search compares, and how many it keeps.
#[derive(Debug, Clone, Copy)]
pub struct MessageScope<'a> {
    pub session: &'a SessionId,
    /// Stored roles covered (`messages::role_name`); give one twice for one.
    pub roles: [&'a str; 2],
    pub window: HistoryWindow,
    /// The closest kept.
    pub k: usize,
}

impl MessageQuery {
    /// `query` embedded within `EMBEDDINGS_TIMEOUT_MS`; `None` when that
    /// fails (search by words only then).
    pub async fn embed(embedder: &Embedder, query: &str) -> Option<MessageQuery> {
        match embedder.embed_query(query).await {
            Ok(v) => Some(MessageQuery {
                unit: unit(&v)?,
                floor: embedder.config().min_similarity,
                model: embedder.model().to_owned(),
            }),
            Err(e) => {
                tracing::warn!(error = %e, "query embedding failed; searching the history by words only");
                None
            }
        }
    }

    /// The semantic relevance `S` > 0 of the `scope.k` messages nearest the
    /// query, and of those of `also` among the compared: by message id.
    pub async fn nearest(
        &self,
        store: &Store,
        scope: MessageScope<'_>,
        also: &HashSet<i64>,
    ) -> Result<HashMap<i64, f64>, StoreError> {
        let mut window = scope.window;
        let (mut best, mut extra) = (Vec::new(), HashMap::new());
        let mut scanned = 0usize;
        while scanned < HISTORY_SCANNED {
            let rows = store
                .history()
                .vectors(scope.session, &self.model, scope.roles, window, BATCH)
                .await?;
            let Some(last) = rows.last() else { break };
            window.before = Some(last.id);
            scanned += rows.len();
            for row in &rows {
                let Some(cos) = cosine(&self.unit, &row.vector) else {
                    continue;
                };
                let s = scaled(cos, self.floor);
                if s > 0.0 {
                    best.push((row.id, s));
                    if also.contains(&row.id) {
                        extra.insert(row.id, s);
                    }
                }
            }
            if best.len() > 4 * scope.k {
                keep_best(&mut best, scope.k);
            }
        }
        keep_best(&mut best, scope.k);
        extra.extend(best);
        Ok(extra)
    }
}

/// Sorts best first (ties: the newer, higher id) and keeps `k`.
fn keep_best(best: &mut Vec<(i64, f64)>, k: usize) {
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    best.truncate(k);
}

fn unit(v: &[f32]) -> Option<Vec<f64>> {
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    (norm > 0.0 && norm.is_finite()).then(|| v.iter().map(|x| f64::from(*x) / norm).collect())
}

/// Cosine similarity of a unit query and a stored vector (`None`: another
/// dimension or a zero vector).
fn cosine(unit_query: &[f64], v: &[f32]) -> Option<f64> {
    if v.len() != unit_query.len() {
        return None;
    }
    let (mut dot, mut norm) = (0.0f64, 0.0f64);
    for (q, x) in unit_query.iter().zip(v) {
        let x = f64::from(*x);
        dot += q * x;
        norm += x * x;
    }
    (norm > 0.0).then(|| dot / norm.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_unit_query_and_raw_vector() {
        let q = unit(&[3.0, 4.0]).unwrap();
        assert!((cosine(&q, &[6.0, 8.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!(cosine(&q, &[4.0, -3.0]).unwrap().abs() < 1e-12);
        assert_eq!(cosine(&q, &[1.0]), None);
        assert_eq!(cosine(&q, &[0.0, 0.0]), None);
        assert!(unit(&[0.0, 0.0]).is_none());
        let mut best = vec![(1, 0.5), (2, 0.9), (3, 0.5)];
        keep_best(&mut best, 2);
        assert_eq!(best, [(2, 0.9), (3, 0.5)]);
    }
}
