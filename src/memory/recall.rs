//! Recall for one message: exact id/code matches, keyword coverage and BM25
//! full-text relevance mixed with a 30-day half-life; persona and preferences
//! pinned first; the whole selection within a token budget.

use super::semantic::{blend, Semantic, SemanticMatch};
use super::terms::{codes, id_refs, is_single_char, query_terms};
use crate::llm::{estimate_tokens, is_unsegmented};
use crate::store::{MemoryKind, MemoryOwner, MemoryRecord, Store, StoreError};
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};

/// Recency half-life of the ranking, in days.
pub const HALF_LIFE_DAYS: f64 = 30.0;
/// Full-text candidates considered per message (the newest matches).
const FTS_CANDIDATES: u32 = 120;
/// Recalled (non-pinned) memories shown at most.
const MAX_RANKED: usize = 12;
/// Persona and preferences loaded for pinning.
const PINNED_CANDIDATES: u32 = 60;

/// One recalled memory.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallHit {
    pub memory: MemoryRecord,
    /// How well it matches the message (0 for a pinned memory that does not).
    pub relevance: f64,
    /// Relevance mixed with recency and importance: the ranking key.
    pub score: f64,
    pub pinned: bool,
}

/// The share of recency in the mixed score: `0.5 ^ (age / half-life)`.
pub fn recency(updated: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    let days = (now - updated).num_seconds().max(0) as f64 / 86_400.0;
    0.5f64.powf(days / HALF_LIFE_DAYS)
}

/// The mixed ranking score of a memory with this relevance.
pub fn mixed_score(relevance: f64, memory: &MemoryRecord, now: DateTime<Utc>) -> f64 {
    let importance = 0.75 + 0.5 * memory.importance.clamp(0.0, 1.0);
    let used = 1.0 + 0.05 * (1.0 + memory.access_count.max(0) as f64).ln();
    (0.7 * relevance + 0.3 * recency(memory.updated_at, now)) * importance * used
}

/// The line a memory takes in the `<relevant-memories>` block.
pub fn memory_line(m: &MemoryRecord) -> String {
    let content = m.content.replace('\n', " ");
    match m.kind {
        MemoryKind::Persona | MemoryKind::Preference => {
            format!("- [{} #{}] {content}", m.kind.as_str(), m.id)
        }
        _ => format!(
            "- [{} #{} · {}] {content}",
            m.kind.as_str(),
            m.id,
            m.updated_at.format("%Y-%m-%d")
        ),
    }
}

/// Recalls the owner's memories for `message` within `budget` tokens, pinned
/// ones first (read only: see [`record_access`]).
///
/// Candidates: the newest full-text matches of the message's terms, substring
/// matches of what the index cannot hold (a lone CJK character, a code with
/// punctuation), memories named by id, and the pinned kinds. Relevance: the
/// query terms a memory holds, each weighted by its rarity among the
/// candidates (so 咖啡 counts more than a term every memory has), plus exact
/// code and id matches; then mixed with recency and importance.
pub async fn recall(
    store: &Store,
    owner: MemoryOwner,
    message: &str,
    budget: usize,
    now: DateTime<Utc>,
) -> Result<Vec<RecallHit>, StoreError> {
    recall_visible(store, owner, message, budget, now, &|_| true).await
}

/// [`recall`] limited to the kinds `visible` allows (e.g. what a shared chat
/// may see); the budget is spent on those only.
pub async fn recall_visible(
    store: &Store,
    owner: MemoryOwner,
    message: &str,
    budget: usize,
    now: DateTime<Utc>,
    visible: &(dyn Fn(MemoryKind) -> bool + Sync),
) -> Result<Vec<RecallHit>, StoreError> {
    recall_semantic(store, None, owner, message, budget, now, visible).await
}

/// [`recall_visible`] with semantic recall when `semantic` is set: the
/// message's embedding is asked for while the word candidates are read, the
/// memories nearest by meaning join the candidates, and each candidate's
/// relevance is the blend of both (see `memory::semantic`). When the
/// embedding fails or is late, this is exactly word recall.
pub async fn recall_semantic(
    store: &Store,
    semantic: Option<&Semantic>,
    owner: MemoryOwner,
    message: &str,
    budget: usize,
    now: DateTime<Utc>,
    visible: &(dyn Fn(MemoryKind) -> bool + Sync),
) -> Result<Vec<RecallHit>, StoreError> {
    let terms = query_terms(message);
    let codes = codes(message);
    let ids = id_refs(message);
    let lexical = candidates(store, owner, &terms, &codes, &ids, now);
    let (found, meaning) = match semantic {
        Some(s) => tokio::join!(lexical, s.matching(owner, message)),
        None => (lexical.await, None),
    };
    let Candidates {
        mut found,
        pinned: pinned_rows,
    } = found?;
    if let Some(meaning) = &meaning {
        add_related(store, owner, meaning, &mut found, &pinned_rows, now).await?;
    }
    let weigh = Weights::new(&terms, found.values().chain(&pinned_rows));
    let relevance = |m: &MemoryRecord| {
        let code = if codes.iter().any(|c| contains_ci(&m.content, c)) {
            0.6
        } else {
            0.0
        };
        let id = if ids.contains(&m.id) { 1.0 } else { 0.0 };
        let lexical = (0.8 * weigh.coverage(m.id) + code + id).min(1.0);
        match &meaning {
            Some(meaning) => blend(lexical, meaning.relevance(m.id)),
            None => lexical,
        }
    };
    let hit = |m: MemoryRecord, pinned: bool| {
        let relevance = relevance(&m);
        RecallHit {
            score: mixed_score(relevance, &m, now),
            relevance,
            memory: m,
            pinned,
        }
    };

    let mut pinned: Vec<RecallHit> = pinned_rows
        .into_iter()
        .filter(|m| visible(m.kind))
        .map(|m| {
            found.remove(&m.id);
            hit(m, true)
        })
        .collect();
    // Persona first, then matching preferences, then the rest, each by score.
    pinned.sort_by(|a, b| {
        let rank = |h: &RecallHit| (h.memory.kind != MemoryKind::Persona, h.relevance <= 0.0);
        rank(a).cmp(&rank(b)).then(b.score.total_cmp(&a.score))
    });
    let mut ranked: Vec<RecallHit> = found
        .into_values()
        // Reflections enter the system prompt on their own (`reflect.rs`).
        .filter(|m| {
            !matches!(
                m.kind,
                MemoryKind::Persona | MemoryKind::Preference | MemoryKind::Reflection
            )
        })
        .filter(|m| visible(m.kind))
        .map(|m| hit(m, false))
        .filter(|h| h.relevance > 0.0)
        .collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(fit_budget(pinned, ranked, budget))
}

/// Adds the memories near the message in meaning that are not candidates yet.
async fn add_related(
    store: &Store,
    owner: MemoryOwner,
    meaning: &SemanticMatch,
    found: &mut HashMap<i64, MemoryRecord>,
    pinned: &[MemoryRecord],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let more: Vec<i64> = meaning
        .related()
        .filter(|id| !found.contains_key(id) && !pinned.iter().any(|m| m.id == *id))
        .collect();
    for m in store.memories().live_of(owner, &more, now).await? {
        found.entry(m.id).or_insert(m);
    }
    Ok(())
}

/// What a message could recall: the memories its terms, codes and ids find,
/// and the owner's persona and preferences (candidates on every turn).
struct Candidates {
    found: HashMap<i64, MemoryRecord>,
    pinned: Vec<MemoryRecord>,
}

async fn candidates(
    store: &Store,
    owner: MemoryOwner,
    terms: &[String],
    codes: &[String],
    ids: &[i64],
    now: DateTime<Utc>,
) -> Result<Candidates, StoreError> {
    // The three reads are independent: run them at once on separate connections.
    let singles: Vec<&String> = terms
        .iter()
        .filter(|t| is_single_char(t) && !t.is_ascii())
        .take(3)
        .collect();
    let (fts, pinned_rows, single_hits) = tokio::join!(
        store
            .memories()
            .search(owner, terms, None, FTS_CANDIDATES, now),
        store.memories().of(
            owner,
            &[MemoryKind::Persona, MemoryKind::Preference],
            PINNED_CANDIDATES,
            now
        ),
        async {
            let mut hits = Vec::new();
            for needle in &singles {
                hits.extend(store.memories().containing(owner, needle, 10, now).await?);
            }
            Ok::<_, StoreError>(hits)
        },
    );
    let pinned_rows = pinned_rows?;
    let mut found: HashMap<i64, MemoryRecord> = HashMap::new();
    for m in fts?.into_iter().chain(single_hits?) {
        found.entry(m.id).or_insert(m);
    }
    // Codes the term index missed (punctuation inside), and memories named by id.
    let missing: Vec<&String> = codes
        .iter()
        .filter(|c| !found.values().any(|m| contains_ci(&m.content, c)))
        .take(2)
        .collect();
    for code in missing {
        for m in store.memories().containing(owner, code, 10, now).await? {
            found.entry(m.id).or_insert(m);
        }
    }
    for id in ids {
        if let Some(m) = store
            .memories()
            .get(owner, *id)
            .await?
            .filter(|m| m.expires_at.is_none_or(|e| e > now))
        {
            found.entry(m.id).or_insert(m);
        }
    }
    Ok(Candidates {
        found,
        pinned: pinned_rows,
    })
}

/// Query terms weighted by rarity among the candidates (an inverse document
/// frequency over what was found); terms no candidate holds carry no weight.
struct Weights {
    /// Weight of each query term (0 when no candidate holds it).
    weights: Vec<f64>,
    total: f64,
    /// Which query terms each candidate holds, by memory id.
    held: HashMap<i64, Vec<usize>>,
}

impl Weights {
    fn new<'a>(query: &[String], candidates: impl Iterator<Item = &'a MemoryRecord>) -> Weights {
        let mut held: HashMap<i64, Vec<usize>> = HashMap::new();
        for m in candidates {
            let lower = m.content.to_lowercase();
            held.entry(m.id).or_insert_with(|| {
                (0..query.len())
                    .filter(|&i| holds(&lower, &query[i]))
                    .collect()
            });
        }
        let n = held.len() as f64;
        let mut df = vec![0usize; query.len()];
        for i in held.values().flatten() {
            df[*i] += 1;
        }
        let weights: Vec<f64> = df
            .iter()
            .map(|&d| {
                if d == 0 {
                    0.0
                } else {
                    (1.0 + (n + 1.0) / (d as f64 + 0.5)).ln()
                }
            })
            .collect();
        let total = weights.iter().sum();
        Weights {
            weights,
            total,
            held,
        }
    }

    /// The weighted share of the query's terms memory `id` holds (0.0 – 1.0).
    fn coverage(&self, id: i64) -> f64 {
        if self.total <= 0.0 {
            return 0.0;
        }
        let held = self.held.get(&id).map_or(&[][..], Vec::as_slice);
        held.iter().map(|&i| self.weights[i]).sum::<f64>() / self.total
    }
}

/// Whether lowercase `text` holds query term `term`: a CJK bigram or character
/// anywhere, an alphanumeric word only as a whole word ("tea" is not in "team").
fn holds(text: &str, term: &str) -> bool {
    if !term.is_ascii() {
        return text.contains(term);
    }
    text.match_indices(term).any(|(at, _)| {
        let before = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() || is_unsegmented(c));
        let after = text[at + term.len()..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric() || is_unsegmented(c));
        before && after
    })
}

/// Records that the memories among `hits` that matched were used (pinned
/// ones shown on every message are not counted). Kept off the reply's path.
pub async fn record_access(
    store: &Store,
    owner: MemoryOwner,
    hits: &[RecallHit],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let used: Vec<i64> = hits
        .iter()
        .filter(|h| h.relevance > 0.0)
        .map(|h| h.memory.id)
        .collect();
    store.memories().touch(owner, &used, now).await
}

/// Pinned memories take up to half the budget, recalled ones the rest, and
/// pinned ones that did not fit fill what is left.
fn fit_budget(pinned: Vec<RecallHit>, ranked: Vec<RecallHit>, budget: usize) -> Vec<RecallHit> {
    let cost = |h: &RecallHit| estimate_tokens(&memory_line(&h.memory)) + 1;
    let mut used = 0;
    let mut head = Vec::new();
    let mut later = Vec::new();
    for h in pinned {
        if used + cost(&h) <= budget / 2 {
            used += cost(&h);
            head.push(h);
        } else {
            later.push(h);
        }
    }
    let mut tail = Vec::new();
    for h in ranked {
        if tail.len() < MAX_RANKED && used + cost(&h) <= budget {
            used += cost(&h);
            tail.push(h);
        }
    }
    for h in later {
        if used + cost(&h) <= budget {
            used += cost(&h);
            head.push(h);
        }
    }
    let mut seen = HashSet::new();
    head.into_iter()
        .chain(tail)
        .filter(|h| seen.insert(h.memory.id))
        .collect()
}

fn contains_ci(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn record(id: i64, kind: MemoryKind, content: &str, age_days: i64) -> MemoryRecord {
        let t = Utc::now() - Duration::days(age_days);
        MemoryRecord {
            id,
            kind,
            content: content.into(),
            source_ref: String::new(),
            importance: 0.5,
            access_count: 0,
            last_access: None,
            expires_at: None,
            created_at: t,
            updated_at: t,
            pinned: false,
        }
    }

    #[test]
    fn terms_are_held_as_whole_words_or_cjk_substrings() {
        assert!(holds("the user drinks tea daily", "tea"));
        assert!(!holds("the team meets daily", "tea"));
        assert!(holds("用户喜欢喝咖啡", "咖啡"));
        assert!(holds("关注600519的分红", "600519"));
        assert!(holds("rust语言", "rust"));
    }

    #[test]
    fn recency_halves_every_thirty_days() {
        let now = Utc::now();
        assert!((recency(now, now) - 1.0).abs() < 1e-9);
        assert!((recency(now - Duration::days(30), now) - 0.5).abs() < 1e-3);
        assert!((recency(now - Duration::days(60), now) - 0.25).abs() < 1e-3);
        let fresh = record(1, MemoryKind::Fact, "x", 0);
        let old = record(2, MemoryKind::Fact, "x", 90);
        assert!(mixed_score(0.8, &fresh, now) > mixed_score(0.8, &old, now));
        // Relevance still dominates recency.
        assert!(mixed_score(1.0, &old, now) > mixed_score(0.3, &fresh, now));
    }

    #[test]
    fn the_budget_keeps_pinned_first_and_stops_in_time() {
        let hit = |id, kind, pinned| RecallHit {
            memory: record(id, kind, &"some memory text ".repeat(4), 1),
            relevance: 0.5,
            score: 1.0,
            pinned,
        };
        let pinned: Vec<RecallHit> = (1..=10)
            .map(|i| hit(i, MemoryKind::Preference, true))
            .collect();
        let ranked: Vec<RecallHit> = (11..=30).map(|i| hit(i, MemoryKind::Fact, false)).collect();
        let chosen = fit_budget(pinned, ranked, 200);
        let total: usize = chosen
            .iter()
            .map(|h| estimate_tokens(&memory_line(&h.memory)) + 1)
            .sum();
        assert!(total <= 200, "{total}");
        assert!(chosen.first().is_some_and(|h| h.pinned));
        assert!(
            chosen.iter().any(|h| !h.pinned),
            "recalled memories keep room"
        );
        let first_unpinned = chosen
            .iter()
            .position(|h| !h.pinned)
            .unwrap_or(chosen.len());
        assert!(chosen[..first_unpinned].iter().all(|h| h.pinned));
    }
}
