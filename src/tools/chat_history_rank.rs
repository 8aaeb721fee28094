//! `query_my_chat_history` by words and meaning (`EMBEDDINGS_*` set): the
//! candidates are the newest messages holding every word and the session's
//! messages nearest the query in meaning; each is ranked by the noisy-or
//! `R = L + S − L·S` of its word relevance `L` and semantic relevance `S`
//! (as memory recall), mixed with the 30-day half-life. A query that cannot
//! be embedded in time is answered by words only, newest first, as without
//! the setting.

use super::history_scan::{scan, Found, Needle, Who, MAX_PAGE, PER_PAGE};
use super::read_back::storage;
use super::spec::{ToolContext, ToolError};
use crate::memory::recency;
use crate::memory::semantic::{blend, Embedder, MessageQuery, MessageScope};
use crate::store::{HistoryRow, HistoryWindow, Store};
use chrono::{DateTime, Utc};
use std::collections::HashSet;

/// `L` of a message holding every word of the query (memory recall gives a
/// memory holding every query term the same).
const WORD_RELEVANCE: f64 = 0.8;
/// Candidates of each kind: every page that may be asked for.
const CANDIDATES: usize = MAX_PAGE * PER_PAGE;

/// One search's arguments.
pub(super) struct Search<'a> {
    pub ctx: &'a ToolContext,
    pub needle: &'a Needle,
    pub who: Who,
    pub window: HistoryWindow,
    /// Matches before the page asked for.
    pub skip: usize,
    /// The query as the model wrote it (embedded as it is).
    pub text: &'a str,
}

/// The page after `q.skip` of the hybrid ranking (or of the word matches,
/// newest first, when the query cannot be embedded).
pub(super) async fn ranked(
    store: &Store,
    embedder: &Embedder,
    roles: [&str; 2],
    q: Search<'_>,
) -> Result<Found, ToolError> {
    let (words, query) = tokio::join!(
        scan(store, q.ctx, q.needle, q.who, q.window, (0, CANDIDATES)),
        MessageQuery::embed(embedder, q.text)
    );
    let words = words?;
    let Some(query) = query else {
        return Ok(page_of_words(words, q.skip));
    };
    let word_ids: HashSet<i64> = words.hits.iter().map(|r| r.id).collect();
    let scope = MessageScope {
        session: &q.ctx.session_id,
        roles,
        window: q.window,
        k: CANDIDATES,
    };
    let meaning = query
        .nearest(store, scope, &word_ids)
        .await
        .map_err(storage)?;
    let missing: Vec<i64> = meaning
        .keys()
        .filter(|id| !word_ids.contains(id))
        .copied()
        .collect();
    let related = store
        .history()
        .rows_of(&q.ctx.session_id, &missing)
        .await
        .map_err(storage)?;
    let now = Utc::now();
    let mut scored: Vec<(f64, HistoryRow)> = words
        .hits
        .into_iter()
        .chain(related.into_iter().filter(|r| q.who.covers(&r.message)))
        .map(|r| {
            let lexical = if word_ids.contains(&r.id) {
                WORD_RELEVANCE
            } else {
                0.0
            };
            let semantic = meaning.get(&r.id).copied().unwrap_or(0.0);
            (score(blend(lexical, semantic), r.at, now), r)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.id.cmp(&a.1.id)));
    let total = scored.len();
    Ok(Found {
        hits: scored
            .into_iter()
            .skip(q.skip)
            .take(PER_PAGE)
            .map(|(_, r)| r)
            .collect(),
        more: total > q.skip + PER_PAGE,
        cut_short: words.cut_short,
        ranked: true,
    })
}

/// The mixed score of a message: relevance and recency, as for memories
/// (messages have no importance or use count).
fn score(relevance: f64, at: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    0.7 * relevance + 0.3 * recency(at, now)
}

/// The page after `skip` of the newest word matches: what the search by
/// words alone answers.
fn page_of_words(words: Found, skip: usize) -> Found {
    let more = words.hits.len() > skip + PER_PAGE || words.more;
    Found {
        hits: words.hits.into_iter().skip(skip).take(PER_PAGE).collect(),
        more,
        cut_short: words.cut_short,
        ranked: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn words_and_meaning_beat_either_and_recency_breaks_ties() {
        let now = Utc::now();
        let both = score(blend(WORD_RELEVANCE, 0.5), now, now);
        let words = score(blend(WORD_RELEVANCE, 0.0), now, now);
        let meaning = score(blend(0.0, 0.5), now, now);
        assert!(both > words && words > meaning, "{both} {words} {meaning}");
        let old = score(blend(0.0, 0.5), now - Duration::days(60), now);
        assert!(meaning > old);
        assert!((meaning - old - 0.3 * 0.75).abs() < 1e-9);
    }
}
