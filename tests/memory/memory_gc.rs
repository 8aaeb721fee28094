//! Garbage collection by value: over a soft limit the least valuable go in the
//! background (an important, often-recalled old memory outlives newer trivial
//! ones), the hard limit collects before an insert and refuses it when all is
//! pinned, and `/memory pin` shields a memory from every collection.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common::{backends, db_url, harness, open_store};

use chrono::{Duration, Utc};
use switchboard::memory::{MemoryBook, MemoryConfig, MemoryError, Saved};
use switchboard::store::{MemoryKind, MemoryOwner, NewMemory, Store};
use switchboard_platform::{Platform, UserId};

fn owner() -> MemoryOwner {
    MemoryOwner::new(Platform::Console, UserId(1))
}

fn fact(content: &str, importance: f64) -> NewMemory {
    NewMemory {
        kind: MemoryKind::Fact,
        content: content.into(),
        source_ref: "test".into(),
        importance,
        expires_at: None,
    }
}

/// `n` distinct trivial facts saved a day ago; returns nothing (ids are not needed).
async fn fillers(store: &Store, from: usize, n: usize) {
    let rows: Vec<(NewMemory, Vec<String>)> = (from..from + n)
        .map(|i| {
            (
                fact(&format!("filler note {i} zeta{i}"), 0.1),
                vec![format!("zeta{i}")],
            )
        })
        .collect();
    store
        .memories()
        .insert_many(owner(), &rows, Utc::now() - Duration::days(1))
        .await
        .unwrap();
}

async fn count(store: &Store) -> u32 {
    store
        .memories()
        .count(owner(), MemoryKind::Fact, Utc::now())
        .await
        .unwrap()
}

#[tokio::test]
async fn collection_keeps_the_valuable_old_memory_and_the_pinned_one() {
    for db in backends().await {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&db_url(&db, dir.path())).await;
        let book = MemoryBook::new(store.clone(), MemoryConfig::default());
        let now = Utc::now();
        // Old, important and recalled often.
        let valued = store
            .memories()
            .insert(
                owner(),
                &fact("The user's server runs in Frankfurt", 0.9),
                &[],
                now - Duration::days(200),
            )
            .await
            .unwrap();
        for _ in 0..12 {
            store
                .memories()
                .touch(owner(), &[valued], now - Duration::days(2))
                .await
                .unwrap();
        }
        // Older and worth nothing, but pinned.
        let pinned = store
            .memories()
            .insert(
                owner(),
                &fact("An old pinned note", 0.0),
                &[],
                now - Duration::days(300),
            )
            .await
            .unwrap();
        assert!(book.pin(owner(), pinned, true).await.unwrap());
        fillers(&store, 0, 48).await;
        assert_eq!(count(&store).await, 50);

        // Past the soft limit (50) the inserts still go in ...
        let newest = book
            .save(owner(), fact("The user's cat is called Miso", 0.2), now)
            .await
            .unwrap();
        book.save(owner(), fact("Bought milk on Tuesday", 0.1), now)
            .await
            .unwrap();
        assert!(matches!(newest, Saved::Added(_)));
        assert_eq!(count(&store).await, 52);
        // ... and the background pass trims back by value, not by age.
        assert_eq!(book.collect_marked(now).await.unwrap(), 2);
        assert_eq!(count(&store).await, 50);
        for id in [valued, pinned, newest.id()] {
            assert!(
                store.memories().get(owner(), id).await.unwrap().is_some(),
                "memory {id} kept"
            );
        }
        // Nothing left to do until a kind passes its soft limit again.
        assert_eq!(book.collect_marked(now).await.unwrap(), 0);
        assert_eq!(book.collect(now).await.unwrap(), 0);
    }
}

#[tokio::test]
async fn the_hard_limit_collects_first_and_refuses_when_all_is_pinned() {
    for db in backends().await {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&db_url(&db, dir.path())).await;
        let config = MemoryConfig {
            hard_limit_pct: 110,
            ..MemoryConfig::default()
        };
        let book = MemoryBook::new(store.clone(), config);
        let now = Utc::now();
        // Over the hard limit (55) already, e.g. an import.
        fillers(&store, 0, 60).await;
        book.save(owner(), fact("The user's train leaves at nine", 0.5), now)
            .await
            .unwrap();
        // Collected down below the soft limit first, then inserted.
        assert_eq!(count(&store).await, 50);

        for m in store
            .memories()
            .of(owner(), &[MemoryKind::Fact], 100, now)
            .await
            .unwrap()
        {
            assert!(book.pin(owner(), m.id, true).await.unwrap());
        }
        fillers(&store, 100, 5).await;
        for m in store
            .memories()
            .of(owner(), &[MemoryKind::Fact], 100, now)
            .await
            .unwrap()
        {
            book.pin(owner(), m.id, true).await.unwrap();
        }
        assert_eq!(count(&store).await, 55);
        let refused = book
            .save(owner(), fact("One fact too many", 0.5), now)
            .await;
        assert!(
            matches!(refused, Err(MemoryError::Full("fact"))),
            "{refused:?}"
        );
        assert_eq!(
            book.collect(now).await.unwrap(),
            0,
            "pinned memories are never collected"
        );
        assert_eq!(count(&store).await, 55);
    }
}

#[tokio::test]
async fn users_pin_and_unpin_from_the_chat() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        let book = MemoryBook::new(h.running.store.clone(), MemoryConfig::default());
        let id = book
            .save(
                owner(),
                fact("The user's locker code is not stored here", 0.5),
                Utc::now(),
            )
            .await
            .unwrap()
            .id();
        h.channel.dm(1, &format!("/memory pin {id}")).await;
        h.wait_for("the pin", |l| {
            l.any_contains(&format!("Pinned memory #{id}"))
        })
        .await;
        let m = h
            .running
            .store
            .memories()
            .get(owner(), id)
            .await
            .unwrap()
            .unwrap();
        assert!(m.pinned);
        h.channel.dm(1, "/memory").await;
        h.wait_for("the list", |l| l.any_contains(&format!("`#{id}` 📌")))
            .await;
        h.channel.dm(1, &format!("/memory unpin {id}")).await;
        h.wait_for("the unpin", |l| {
            l.any_contains(&format!("Unpinned memory #{id}"))
        })
        .await;
        assert!(
            !h.running
                .store
                .memories()
                .get(owner(), id)
                .await
                .unwrap()
                .unwrap()
                .pinned
        );
        h.channel.dm(1, "/memory pin 999999").await;
        h.wait_for("the refusal", |l| {
            l.any_contains("You have no memory #999999")
        })
        .await;
        h.stop().await;
    }
}
