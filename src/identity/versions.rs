//! Editing, locking and restoring the identity: each change is a new version
//! (the newest is in use) and an audited `identity.*` event.

use super::{IdentityError, Profile, ProfileEdit};
use crate::memory::terms;
use crate::store::{
    IdentityVersion, MemoryKind, MemoryOwner, NewIdentityVersion, NewMemory, Store,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The kinds a lock of a user keeps and a restore puts back.
const USER_KINDS: [MemoryKind; 2] = [MemoryKind::Persona, MemoryKind::Preference];
/// Memories of those kinds a lock keeps at most.
const LOCK_MEMORIES: u32 = 200;

/// A kept memory in a lock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Kept {
    kind: String,
    content: String,
    importance: f64,
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    /// The new version (a copy of the restored one).
    pub version: i64,
    pub profile: Profile,
    /// Whose persona and preferences were put back, and how many.
    pub memories: Option<(MemoryOwner, usize)>,
}

/// The identity over the store.
#[derive(Debug, Clone)]
pub struct Identity {
    store: Store,
}

fn parse(v: &IdentityVersion) -> Result<Profile, IdentityError> {
    serde_json::from_str(&v.profile).map_err(|e| IdentityError::Corrupt(v.version, e.to_string()))
}

fn owner_json(owner: Option<MemoryOwner>) -> serde_json::Value {
    match owner {
        Some(o) => json!({ "platform": o.platform.as_str(), "user": o.user.0 }),
        None => serde_json::Value::Null,
    }
}

impl Identity {
    pub fn new(store: Store) -> Identity {
        Identity { store }
    }

    /// The profile in use and its version (0 and an empty profile before any edit).
    pub async fn current(&self) -> Result<(i64, Profile), IdentityError> {
        match self.store.identity_current().await? {
            Some(v) => Ok((v.version, parse(&v)?)),
            None => Ok((0, Profile::default())),
        }
    }

    /// The newest versions, newest first.
    pub async fn history(&self, limit: u32) -> Result<Vec<IdentityVersion>, IdentityError> {
        Ok(self.store.identity_versions(limit).await?)
    }

    async fn add(
        &self,
        action: &str,
        profile: &Profile,
        owner: Option<MemoryOwner>,
        memories: Option<&str>,
        note: &str,
        now: DateTime<Utc>,
    ) -> Result<i64, IdentityError> {
        let json =
            serde_json::to_string(profile).map_err(|e| IdentityError::Invalid(e.to_string()))?;
        let version = NewIdentityVersion {
            action,
            profile: &json,
            owner,
            memories,
            note,
        };
        Ok(self.store.add_identity_version(&version, now).await?)
    }

    /// Applies `edit` as a new version; audited as `identity.edited`.
    pub async fn edit(
        &self,
        edit: &ProfileEdit,
        now: DateTime<Utc>,
    ) -> Result<(i64, Profile), IdentityError> {
        let (from, current) = self.current().await?;
        let next = current.edited(edit)?;
        let version = self.add("edit", &next, None, None, "", now).await?;
        self.store
            .audit().record(
                "identity.edited",
                json!({ "version": version, "from": from, "name": next.name, "style_rules": next.style.len() }),
            )
            .await;
        Ok((version, next))
    }

    /// Snapshots the profile in use (and `owner`'s persona and preferences)
    /// as a new version; audited as `identity.locked`.
    pub async fn lock(
        &self,
        owner: Option<MemoryOwner>,
        note: &str,
        now: DateTime<Utc>,
    ) -> Result<i64, IdentityError> {
        let (_, profile) = self.current().await?;
        let memories = match owner {
            Some(o) => {
                let kept: Vec<Kept> = self
                    .store
                    .memories()
                    .of(o, &USER_KINDS, LOCK_MEMORIES, now)
                    .await?
                    .into_iter()
                    .map(|m| Kept {
                        kind: m.kind.as_str().to_owned(),
                        content: m.content,
                        importance: m.importance,
                    })
                    .collect();
                Some(
                    serde_json::to_string(&kept)
                        .map_err(|e| IdentityError::Invalid(e.to_string()))?,
                )
            }
            None => None,
        };
        let version = self
            .add(
                "lock",
                &profile,
                owner,
                memories.as_deref(),
                note.trim(),
                now,
            )
            .await?;
        self.store
            .audit()
            .record(
                "identity.locked",
                json!({ "version": version, "user": owner_json(owner), "note": note.trim() }),
            )
            .await;
        Ok(version)
    }

    /// Returns to version `v`: its profile becomes a new version, and a lock
    /// of a user puts their persona and preferences back as they were (what
    /// was added since goes). Audited as `identity.restored`.
    pub async fn restore(&self, v: i64, now: DateTime<Utc>) -> Result<Restored, IdentityError> {
        let old = self
            .store
            .identity_version(v)
            .await?
            .ok_or(IdentityError::NoSuchVersion(v))?;
        let profile = parse(&old)?;
        let mut restored_memories = None;
        if let (Some(owner), Some(json)) = (old.owner, old.memories.as_deref()) {
            let kept: Vec<Kept> =
                serde_json::from_str(json).map_err(|e| IdentityError::Corrupt(v, e.to_string()))?;
            let rows: Vec<(NewMemory, Vec<String>)> = kept
                .into_iter()
                .filter_map(|k| {
                    let kind = MemoryKind::parse(&k.kind).filter(|k| USER_KINDS.contains(k))?;
                    let memory = NewMemory {
                        kind,
                        source_ref: format!("identity:v{v}"),
                        importance: k.importance,
                        expires_at: None,
                        content: k.content,
                    };
                    let t = terms(&memory.content);
                    Some((memory, t))
                })
                .collect();
            self.store
                .replace_memories(owner, &USER_KINDS, &rows, now)
                .await?;
            restored_memories = Some((owner, rows.len()));
        }
        let note = format!("restored from version {v}");
        let version = self
            .add(
                "restore",
                &profile,
                old.owner,
                old.memories.as_deref(),
                &note,
                now,
            )
            .await?;
        self.store
            .audit()
            .record(
                "identity.restored",
                json!({
                    "version": version,
                    "from": v,
                    "user": owner_json(old.owner),
                    "memories": restored_memories.map(|(_, n)| n),
                }),
            )
            .await;
        Ok(Restored {
            version,
            profile,
            memories: restored_memories,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_store;
    use switchboard_platform::{Platform, UserId};

    #[tokio::test]
    async fn lock_and_restore_round_trip_with_a_users_persona() {
        let (store, _dir) = test_store().await;
        let id = Identity::new(store.clone());
        let now = Utc::now();
        let owner = MemoryOwner::new(Platform::Telegram, UserId(7));
        assert_eq!(id.current().await.unwrap(), (0, Profile::default()));
        let edit = ProfileEdit {
            name: Some("Ada".into()),
            style: Some(vec!["Be brief".into()]),
            ..ProfileEdit::default()
        };
        let (v1, _) = id.edit(&edit, now).await.unwrap();
        let pref = NewMemory {
            kind: MemoryKind::Preference,
            content: "The user likes haiku".into(),
            source_ref: "t".into(),
            importance: 0.7,
            expires_at: None,
        };
        store
            .memories()
            .insert(owner, &pref, &[], now)
            .await
            .unwrap();
        let locked = id
            .lock(Some(owner), "before the experiment", now)
            .await
            .unwrap();
        assert!(locked > v1);

        // Things change after the lock ...
        id.edit(
            &ProfileEdit {
                name: Some("Bob".into()),
                ..ProfileEdit::default()
            },
            now,
        )
        .await
        .unwrap();
        store
            .memories()
            .delete_of_kind(owner, MemoryKind::Preference)
            .await
            .unwrap();
        let mut later = pref.clone();
        later.content = "The user likes limericks".into();
        store
            .memories()
            .insert(owner, &later, &[], now)
            .await
            .unwrap();
        assert_eq!(id.current().await.unwrap().1.name, "Bob");

        // ... and the restore brings the snapshot back.
        let r = id.restore(locked, now).await.unwrap();
        assert_eq!(r.profile.name, "Ada");
        assert_eq!(r.memories, Some((owner, 1)));
        let (v, p) = id.current().await.unwrap();
        assert_eq!((v, p.name.as_str()), (r.version, "Ada"));
        let prefs: Vec<String> = store
            .memories()
            .of(owner, &[MemoryKind::Preference], 10, now)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.content)
            .collect();
        assert_eq!(prefs, ["The user likes haiku"]);
        assert!(matches!(
            id.restore(999, now).await,
            Err(IdentityError::NoSuchVersion(999))
        ));
        let kinds: Vec<String> = store
            .audit()
            .recent(20)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect();
        for kind in ["identity.edited", "identity.locked", "identity.restored"] {
            assert!(kinds.iter().any(|k| k == kind), "{kind} audited: {kinds:?}");
        }
        let history = id.history(10).await.unwrap();
        assert_eq!(history.len(), 4);
        assert_eq!(history[0].action, "restore");
    }
}
