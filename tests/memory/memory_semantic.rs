//! Semantic recall (`EMBEDDINGS_*`) through the strict fake embeddings server,
//! on SQLite and PostgreSQL: hits by meaning that word search misses, the
//! blend with the half-life, the fall-back to word recall when the endpoint
//! is down or late, the back-fill and its resumption, and re-embedding after
//! a model change.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common;
use crate::support;

use chrono::{Duration, Utc};
use std::time::Instant;
use support::fake_embeddings::FakeEmbeddings;
use switchboard::memory::semantic::{
    backfill, blend, embed_pending, run_worker, Embedder, RECHECK_EVERY_MS,
};
use switchboard::memory::{
    mixed_score, recall, terms, EmbeddingsConfig, MemoryBook, MemoryConfig, RecallHit,
};
use switchboard::store::{MemoryKind, MemoryOwner, NewMemory, Store, VectorCursor};
use switchboard_platform::{Platform, Secret, UserId};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "fake-embed-1";

fn owner() -> MemoryOwner {
    MemoryOwner::new(Platform::Telegram, UserId(7))
}

async fn add(store: &Store, content: &str, days: i64) -> i64 {
    let m = NewMemory {
        kind: MemoryKind::Fact,
        content: content.into(),
        source_ref: "test".into(),
        importance: 0.5,
        expires_at: None,
    };
    let at = Utc::now() - Duration::days(days);
    store
        .memories()
        .insert(owner(), &m, &terms(content), at)
        .await
        .unwrap()
}

fn config(fake: &FakeEmbeddings, model: &str) -> EmbeddingsConfig {
    let mut c = EmbeddingsConfig::new(&fake.base_url(), model);
    c.api_key = Some(Secret::new("sk-embed-test"));
    c.batch = 4;
    c
}

/// A book recalling by meaning too, its owner's vectors read.
async fn semantic_book(store: &Store, c: EmbeddingsConfig) -> MemoryBook {
    let book = MemoryBook::new(
        store.clone(),
        MemoryConfig {
            embeddings: Some(c),
            ..MemoryConfig::default()
        },
    );
    book.semantic().unwrap().warm(owner()).await;
    book
}

async fn recall_by(book: &MemoryBook, query: &str) -> Vec<RecallHit> {
    book.recall(owner(), query, 800, Utc::now(), &|_| true)
        .await
        .unwrap()
}

fn ids(hits: &[RecallHit]) -> Vec<i64> {
    hits.iter().map(|h| h.memory.id).collect()
}

async fn embed_all(store: &Store, c: &EmbeddingsConfig) {
    let embedder = Embedder::new(c.clone());
    while embed_pending(store, &embedder).await.unwrap() > 0 {}
}

#[tokio::test]
async fn semantic_hit_found_that_word_search_misses() {
    let fake = FakeEmbeddings::start(MODEL).await;
    fake.require_key("sk-embed-test");
    for (store, _dir) in memory_common::stores().await {
        let car = add(&store, "Drives an old automobile to work", 3).await;
        let tea = add(&store, "Drinks green tea every morning", 3).await;
        add(&store, "Keeps a vegetable garden", 3).await;
        // The background worker embeds what is there and what comes later.
        let stop = CancellationToken::new();
        let worker = tokio::spawn(run_worker(
            store.clone(),
            Embedder::new(config(&fake, MODEL)),
            stop.clone(),
        ));
        let vet = add(&store, "Takes the kitten to the vet in spring", 1).await;
        let deadline = Instant::now() + std::time::Duration::from_secs(20);
        while store
            .memories()
            .embedding_progress(MODEL)
            .await
            .unwrap()
            .waiting
            > 0
        {
            assert!(Instant::now() < deadline, "the worker did not embed");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        stop.cancel();
        worker.await.unwrap();

        // Word recall knows no "car" and no "cat".
        let words = recall(&store, owner(), "what car do I have", 800, Utc::now())
            .await
            .unwrap();
        assert!(!ids(&words).contains(&car), "{words:?}");
        let book = semantic_book(&store, config(&fake, MODEL)).await;
        let hits = recall_by(&book, "what car do I have").await;
        assert_eq!(ids(&hits).first(), Some(&car), "{hits:?}");
        assert!(!ids(&hits).contains(&tea), "unrelated: {hits:?}");
        let hits = recall_by(&book, "is my cat healthy").await;
        assert_eq!(ids(&hits), [vet], "{hits:?}");
        // Words still count: "tea" is found by both ways.
        let hits = recall_by(&book, "green tea").await;
        assert_eq!(ids(&hits), [tea], "{hits:?}");
        // The key went in the header only; every request was well formed.
        assert!(!fake.requests().is_empty());
    }
}

#[tokio::test]
async fn semantic_ranking_blends_with_the_half_life() {
    let fake = FakeEmbeddings::start(MODEL).await;
    for (store, _dir) in memory_common::stores().await {
        // The same meaning ("car") and no shared word with the query: equal
        // similarity, so recency decides.
        let old = add(&store, "Drives a sedan", 120).await;
        let fresh = add(&store, "Drives an automobile", 1).await;
        // Words and meaning together beat meaning alone, as fresh.
        let both = add(&store, "Parks the car in a garage", 1).await;
        embed_all(&store, &config(&fake, MODEL)).await;
        let book = semantic_book(&store, config(&fake, MODEL)).await;
        let hits = recall_by(&book, "car").await;
        assert_eq!(ids(&hits), [both, fresh, old], "{hits:?}");
        let fresh_hit = &hits[1];
        let old_hit = &hits[2];
        assert!((fresh_hit.relevance - old_hit.relevance).abs() < 1e-6);
        // The score is the mixed score of the blended relevance.
        let now = Utc::now();
        let expected = mixed_score(fresh_hit.relevance, &fresh_hit.memory, now);
        assert!((fresh_hit.score - expected).abs() < 1e-3, "{fresh_hit:?}");
        // Above the word relevance alone (0.8 for a query of one word).
        assert!(hits[0].relevance > 0.8, "{hits:?}");
        // cos("car", "parks car garage") = 1/√3; S = (cos − 0.3) / 0.7.
        let s = (1.0 / 3f64.sqrt() - 0.3) / 0.7;
        assert!((hits[0].relevance - blend(0.8, s)).abs() < 0.01, "{hits:?}");
        assert!(fresh_hit.score > old_hit.score);
    }
}

#[tokio::test]
async fn recall_falls_back_to_words_when_embeddings_fail() {
    let fake = FakeEmbeddings::start(MODEL).await;
    for (store, _dir) in memory_common::stores().await {
        add(&store, "Drives an old automobile", 3).await;
        let tea = add(&store, "Drinks green tea", 3).await;
        embed_all(&store, &config(&fake, MODEL)).await;
        let mut c = config(&fake, MODEL);
        c.query_timeout = std::time::Duration::from_millis(150);
        let book = semantic_book(&store, c).await;
        let words = recall(&store, owner(), "car and tea", 800, Utc::now())
            .await
            .unwrap();
        assert_eq!(ids(&words), [tea]);

        fake.set_down(true);
        let hits = recall_by(&book, "car and tea").await;
        assert_eq!(ids(&hits), ids(&words));
        assert_eq!(hits[0].relevance, words[0].relevance);

        fake.set_down(false);
        fake.set_delay(std::time::Duration::from_secs(3));
        let started = Instant::now();
        let hits = recall_by(&book, "car and tea").await;
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(ids(&hits), ids(&words));
        fake.set_delay(std::time::Duration::ZERO);
        assert_eq!(recall_by(&book, "car and tea").await.len(), 2);
    }
}

#[tokio::test]
async fn backfill_fills_old_rows_and_resumes() {
    let fake = FakeEmbeddings::start(MODEL).await;
    for (store, _dir) in memory_common::stores().await {
        for i in 0..9 {
            add(
                &store,
                &format!("Old memory number {i} about automobile {i}"),
                30,
            )
            .await;
        }
        let refused = add(&store, "A text the endpoint refuses", 30).await;
        fake.refuse("A text the endpoint refuses");
        let c = config(&fake, MODEL);
        let embedder = Embedder::new(c.clone());
        let before = fake.requests().iter().map(Vec::len).sum::<usize>();
        // One batch, then the endpoint goes down: the back-fill stops.
        assert_eq!(embed_pending(&store, &embedder).await.unwrap(), 4);
        fake.set_down(true);
        let mut seen = Vec::new();
        assert!(backfill(&store, &embedder, &mut |s, w| seen.push((s, w)))
            .await
            .is_err());
        let p = store.memories().embedding_progress(MODEL).await.unwrap();
        assert_eq!((p.embedded, p.waiting), (4, 6));
        // Run again: it resumes with the six left, none embedded twice.
        fake.set_down(false);
        let done = backfill(&store, &embedder, &mut |s, w| seen.push((s, w)))
            .await
            .unwrap();
        assert_eq!((done.settled, done.embedded), (6, 9));
        assert_eq!(seen.last(), Some(&(6, 0)));
        let sent: Vec<String> = fake.requests().concat();
        let embedded: Vec<&String> = sent[before..]
            .iter()
            .filter(|t| t.starts_with("Old memory"))
            .collect();
        assert_eq!(embedded.len(), 9, "{sent:?}");
        // The refused text is skipped (settled without a vector), not retried.
        assert_eq!(embed_pending(&store, &embedder).await.unwrap(), 0);
        let vectors = store
            .memories()
            .vectors_after(owner(), MODEL, VectorCursor::START, 100)
            .await
            .unwrap();
        assert_eq!(vectors.len(), 9);
        assert!(vectors
            .iter()
            .all(|v| v.id != refused && v.vector.len() == 256));
    }
}

#[tokio::test]
async fn the_index_catches_up_with_batches_and_rows_landing_behind_it() {
    let fake = FakeEmbeddings::start(MODEL).await;
    for (store, _dir) in memory_common::stores().await {
        let mut c = config(&fake, MODEL);
        c.batch = 256;
        add(&store, "Drives an old automobile to work", 3).await;
        embed_all(&store, &c).await;
        let book = semantic_book(&store, c.clone()).await;
        let semantic = book.semantic().unwrap();
        let count = || semantic.indexed(owner()).unwrap().0;
        assert_eq!(count(), 1);
        // A batch bigger than a recall reads on its way (64) and than a
        // page (500) is read whole by the catch-up, in write order.
        for i in 0..600 {
            let m = NewMemory {
                kind: MemoryKind::Fact,
                content: format!("note {i} about the garden"),
                source_ref: "test".into(),
                importance: 0.5,
                expires_at: None,
            };
            store
                .memories()
                .insert(owner(), &m, &terms(&m.content), Utc::now())
                .await
                .unwrap();
        }
        embed_all(&store, &c).await;
        recall_by(&book, "garden").await;
        assert!(count() > 1);
        semantic.catch_up(owner(), Utc::now()).await.unwrap();
        assert_eq!(count(), 601);
        // The catch-up that recall started in the background is over too.
        let deadline = Instant::now() + std::time::Duration::from_secs(20);
        while semantic.indexed(owner()).unwrap().1.catching_up {
            assert!(Instant::now() < deadline, "the catch-up did not end");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }

        // Another process with a clock two seconds slow writes a vector: it
        // lands behind what the index has read, so reading what is new
        // misses it, and the next re-read of the rows behind finds it.
        let text = "Rides a bicycle downhill";
        let late = add(&store, text, 1).await;
        let vector = Embedder::new(c.clone())
            .embed(&[text.to_owned()])
            .await
            .unwrap()
            .remove(0);
        let slow_clock = Utc::now() - Duration::seconds(2);
        assert!(store
            .memories()
            .save_embedding(late, text, MODEL, Some(&vector), slow_clock)
            .await
            .unwrap());
        let rechecked = semantic.indexed(owner()).unwrap().1.rechecked_at.unwrap();
        let at = |ms: i64| chrono::DateTime::from_timestamp_millis(rechecked + ms).unwrap();
        semantic
            .catch_up(owner(), at(RECHECK_EVERY_MS - 1))
            .await
            .unwrap();
        assert_eq!(count(), 601, "a re-read is not due yet");
        semantic
            .catch_up(owner(), at(RECHECK_EVERY_MS))
            .await
            .unwrap();
        assert_eq!(count(), 602);
    }
}

#[tokio::test]
async fn a_model_change_re_embeds_every_memory() {
    let fake = FakeEmbeddings::start(MODEL).await;
    for (store, _dir) in memory_common::stores().await {
        fake.set_model(MODEL);
        for i in 0..5 {
            add(&store, &format!("memory {i} of a physician"), 2).await;
        }
        embed_all(&store, &config(&fake, MODEL)).await;
        assert_eq!(
            store
                .memories()
                .embedding_progress(MODEL)
                .await
                .unwrap()
                .embedded,
            5
        );
        // The old model is gone: the fake refuses it (404), so nothing may
        // use it; a row queued meanwhile waits (not skipped) for a model
        // that works.
        fake.set_model("fake-embed-2");
        let late = add(&store, "memory 5 of a gp", 1).await;
        assert!(embed_pending(&store, &Embedder::new(config(&fake, MODEL)))
            .await
            .is_err());
        let p = store.memories().embedding_progress(MODEL).await.unwrap();
        assert_eq!((p.embedded, p.waiting), (5, 1));
        let embedder = Embedder::new(config(&fake, "fake-embed-2"));
        let done = backfill(&store, &embedder, &mut |_, _| {}).await.unwrap();
        assert_eq!((done.requeued, done.settled, done.embedded), (5, 6, 6));
        assert_eq!(
            store
                .memories()
                .embedding_progress(MODEL)
                .await
                .unwrap()
                .embedded,
            0
        );
        let book = semantic_book(&store, config(&fake, "fake-embed-2")).await;
        let hits = recall_by(&book, "my doctor").await;
        assert_eq!(hits.len(), 6);
        assert!(ids(&hits).contains(&late));
        // An edited memory loses its vector and is embedded again.
        let first = store
            .memories()
            .of(owner(), &[], 10, Utc::now())
            .await
            .unwrap()
            .remove(0);
        let edited = NewMemory {
            kind: first.kind,
            content: "memory about a kitten".into(),
            source_ref: first.source_ref.clone(),
            importance: first.importance,
            expires_at: None,
        };
        store
            .memories()
            .update(
                owner(),
                first.id,
                &edited,
                &terms(&edited.content),
                Utc::now(),
            )
            .await
            .unwrap();
        let p = store
            .memories()
            .embedding_progress("fake-embed-2")
            .await
            .unwrap();
        assert_eq!((p.embedded, p.waiting), (5, 1));
        assert_eq!(embed_pending(&store, &embedder).await.unwrap(), 1);
        let hits = recall_by(&book, "my cat").await;
        assert_eq!(ids(&hits), [first.id], "{hits:?}");
    }
}
