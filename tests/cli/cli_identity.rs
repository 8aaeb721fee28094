//! `switchboard identity`: edit, show, lock with a user's persona and
//! preferences, change both, restore the lock — every change audited.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::cli_admin::Env;

use chrono::Utc;
use switchboard::store::{MemoryKind, MemoryOwner, NewMemory, Store};
use switchboard_platform::{Platform, UserId};

async fn preferences(store: &Store, owner: MemoryOwner) -> Vec<String> {
    store
        .memories()
        .of(owner, &[MemoryKind::Preference], 10, Utc::now())
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect()
}

#[tokio::test]
async fn identity_lock_and_restore_round_trip() {
    let env = Env::new();
    let out = env.ok(&["identity", "show"]).await;
    assert!(out.contains("No identity set"), "{out}");
    let out = env
        .ok(&[
            "identity",
            "edit",
            "--name",
            "Ada",
            "--persona",
            "A calm research assistant.",
            "--style",
            "Answer briefly",
            "--style",
            "Cite sources",
        ])
        .await;
    assert!(
        out.contains("Identity version 1") && out.contains("style: Cite sources"),
        "{out}"
    );

    let owner = MemoryOwner::new(Platform::Telegram, UserId(42));
    let store = env.store().await;
    let pref = NewMemory {
        kind: MemoryKind::Preference,
        content: "The user likes haiku".into(),
        source_ref: "test".into(),
        importance: 0.7,
        expires_at: None,
    };
    store
        .memories()
        .insert(owner, &pref, &[], Utc::now())
        .await
        .unwrap();
    store.close().await;

    let out = env
        .ok(&[
            "identity",
            "lock",
            "--platform",
            "telegram",
            "--user",
            "42",
            "--note",
            "before the experiment",
        ])
        .await;
    assert!(out.contains("Locked as version 2"), "{out}");

    // Both change after the lock.
    env.ok(&["identity", "edit", "--name", "Bob", "--clear-style"])
        .await;
    let store = env.store().await;
    store
        .memories()
        .delete_of_kind(owner, MemoryKind::Preference)
        .await
        .unwrap();
    let mut later = pref.clone();
    later.content = "The user likes limericks".into();
    store
        .memories()
        .insert(owner, &later, &[], Utc::now())
        .await
        .unwrap();
    store.close().await;
    let out = env.ok(&["identity", "show"]).await;
    assert!(
        out.contains("name: Bob") && out.contains("style: (none)"),
        "{out}"
    );

    let out = env.ok(&["identity", "restore", "v2"]).await;
    assert!(out.contains("Restored version 2 as version 4"), "{out}");
    assert!(
        out.contains("name: Ada") && out.contains("style: Answer briefly"),
        "{out}"
    );
    assert!(
        out.contains("Put back 1 persona and preference memories of telegram user 42"),
        "{out}"
    );
    let store = env.store().await;
    assert_eq!(preferences(&store, owner).await, ["The user likes haiku"]);

    let show = env.ok(&["identity", "show"]).await;
    assert!(show.contains("Identity version 4"), "{show}");
    assert!(
        show.contains("v2    lock") && show.contains("before the experiment"),
        "{show}"
    );
    assert!(show.contains("restored from version 2"), "{show}");

    let events = store.audit().recent(20).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "identity.edited").count(),
        2,
        "{kinds:?}"
    );
    let locked = events.iter().find(|e| e.kind == "identity.locked").unwrap();
    assert_eq!(locked.detail["user"]["user"], 42);
    let restored = events
        .iter()
        .find(|e| e.kind == "identity.restored")
        .unwrap();
    assert_eq!(
        (
            restored.detail["from"].as_i64(),
            restored.detail["memories"].as_i64()
        ),
        (Some(2), Some(1))
    );
    store.close().await;

    let bad = env.run(&["identity", "restore", "99"]).await;
    assert_eq!(bad.code, Some(1), "{bad}");
    assert!(
        bad.stderr.contains("there is no identity version 99"),
        "{bad}"
    );
    let nothing = env.run(&["identity", "edit"]).await;
    assert_eq!(nothing.code, Some(1), "{nothing}");
}
