//! Versions of the agent identity: append-only rows, the newest in use; a
//! lock of one user keeps their persona and preferences, a restore of it puts
//! them back in one transaction.

use super::memories::{insert, MemoryKind, MemoryOwner, NewMemory};
use super::{dt, ms, Store, StoreError};
use chrono::{DateTime, Utc};
use sqlx::any::AnyRow;
use sqlx::Row;
use switchboard_platform::{Platform, UserId};

/// One stored version of the identity.
#[derive(Debug, Clone, PartialEq)]
pub struct IdentityVersion {
    pub version: i64,
    /// `edit`, `lock` or `restore`.
    pub action: String,
    /// The profile as JSON (see `identity::Profile`).
    pub profile: String,
    /// A lock of one user: whose memories it keeps.
    pub owner: Option<MemoryOwner>,
    /// Their persona and preferences as JSON, for a lock of a user.
    pub memories: Option<String>,
    pub note: String,
    pub created_at: DateTime<Utc>,
}

/// A version to add.
#[derive(Debug, Clone, PartialEq)]
pub struct NewIdentityVersion<'a> {
    pub action: &'a str,
    pub profile: &'a str,
    pub owner: Option<MemoryOwner>,
    pub memories: Option<&'a str>,
    pub note: &'a str,
}

const COLUMNS: &str = "version, action, profile, platform, user_id, memories, note, created_at";

fn version(row: &AnyRow) -> Result<IdentityVersion, StoreError> {
    let platform: Option<String> = row.try_get("platform")?;
    let user: Option<i64> = row.try_get("user_id")?;
    let owner = match (platform, user) {
        (Some(p), Some(u)) => Some(MemoryOwner::new(
            Platform::parse(&p)
                .ok_or_else(|| StoreError::Corrupt(format!("identity platform {p:?}")))?,
            UserId(u),
        )),
        _ => None,
    };
    Ok(IdentityVersion {
        version: row.try_get("version")?,
        action: row.try_get("action")?,
        profile: row.try_get("profile")?,
        owner,
        memories: row.try_get("memories")?,
        note: row.try_get("note")?,
        created_at: dt(row.try_get("created_at")?),
    })
}

impl Store {
    /// Adds a version; returns its number.
    pub async fn add_identity_version(
        &self,
        new: &NewIdentityVersion<'_>,
        at: DateTime<Utc>,
    ) -> Result<i64, StoreError> {
        let v: i64 = sqlx::query_scalar(
            "INSERT INTO identity_versions (action, profile, platform, user_id, memories, note, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING version",
        )
        .bind(new.action)
        .bind(new.profile)
        .bind(new.owner.map(|o| o.platform.as_str()))
        .bind(new.owner.map(|o| o.user.0))
        .bind(new.memories)
        .bind(new.note)
        .bind(ms(at))
        .fetch_one(&self.pool)
        .await?;
        Ok(v)
    }

    /// The version in use (the newest), if any.
    pub async fn identity_current(&self) -> Result<Option<IdentityVersion>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM identity_versions ORDER BY version DESC LIMIT 1"
        ))
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(version).transpose()
    }

    /// One version.
    pub async fn identity_version(&self, v: i64) -> Result<Option<IdentityVersion>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM identity_versions WHERE version = $1"
        ))
        .bind(v)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(version).transpose()
    }

    /// The newest `limit` versions, newest first.
    pub async fn identity_versions(&self, limit: u32) -> Result<Vec<IdentityVersion>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM identity_versions ORDER BY version DESC LIMIT $1"
        ))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(version).collect()
    }

    /// Replaces the owner's memories of `kinds` with `memories` (each with its
    /// search terms), in one transaction.
    pub async fn replace_memories(
        &self,
        owner: MemoryOwner,
        kinds: &[MemoryKind],
        memories: &[(NewMemory, Vec<String>)],
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        for kind in kinds {
            sqlx::query("DELETE FROM memories WHERE platform = $1 AND user_id = $2 AND kind = $3")
                .bind(owner.platform.as_str())
                .bind(owner.user.0)
                .bind(kind.as_str())
                .execute(&mut *tx)
                .await?;
        }
        for (memory, terms) in memories {
            insert(&mut tx, owner, memory, terms, at).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
