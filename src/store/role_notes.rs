//! A sub-agent role's own history with one user: its finished tasks and
//! findings, kept per user and role (the newest [`ROLE_NOTES_KEPT`]).

use super::memories::MemoryOwner;
use super::{dt, ms, Store, StoreError};
use chrono::{DateTime, Utc};
use sqlx::Row;

/// Notes kept per user and role.
pub const ROLE_NOTES_KEPT: i64 = 20;

/// The role notes: one per finished task of a role that keeps memory.
#[derive(Debug, Clone, Copy)]
pub struct RoleNotes<'a> {
    pub(super) db: &'a Store,
}

/// One finished task of a role, for one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleNote {
    pub task: String,
    pub findings: String,
    pub at: DateTime<Utc>,
}

impl RoleNotes<'_> {
    /// Adds a note of `role` for `owner`, keeping their newest
    /// [`ROLE_NOTES_KEPT`] with that role.
    pub async fn add(
        self,
        owner: MemoryOwner,
        role: &str,
        note: &RoleNote,
    ) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        sqlx::query(
            "INSERT INTO role_notes (platform, user_id, role, task, findings, created_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(role)
        .bind(&note.task)
        .bind(&note.findings)
        .bind(ms(note.at))
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "DELETE FROM role_notes WHERE platform = $1 AND user_id = $2 AND role = $3
             AND id NOT IN (SELECT id FROM role_notes WHERE platform = $1 AND user_id = $2
                            AND role = $3 ORDER BY id DESC LIMIT $4)",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(role)
        .bind(ROLE_NOTES_KEPT)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The newest `limit` notes of `role` for `owner`, oldest first.
    pub async fn recent(
        self,
        owner: MemoryOwner,
        role: &str,
        limit: u32,
    ) -> Result<Vec<RoleNote>, StoreError> {
        let rows = sqlx::query(
            "SELECT task, findings, created_at FROM role_notes
             WHERE platform = $1 AND user_id = $2 AND role = $3 ORDER BY id DESC LIMIT $4",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(role)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        let mut notes = rows
            .iter()
            .map(|r| {
                Ok(RoleNote {
                    task: r.try_get("task")?,
                    findings: r.try_get("findings")?,
                    at: dt(r.try_get("created_at")?),
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()?;
        notes.reverse();
        Ok(notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_store;
    use switchboard_platform::{Platform, UserId};

    #[tokio::test]
    async fn notes_are_per_user_and_role_and_bounded() {
        let (store, _dir) = test_store().await;
        let ada = MemoryOwner::new(Platform::Telegram, UserId(1));
        let bob = MemoryOwner::new(Platform::Telegram, UserId(2));
        let note = |n: i64| RoleNote {
            task: format!("task {n}"),
            findings: format!("found {n}"),
            at: dt(1_000 + n),
        };
        for n in 0..(ROLE_NOTES_KEPT + 3) {
            store
                .role_notes()
                .add(ada, "analyst", &note(n))
                .await
                .unwrap();
        }
        store
            .role_notes()
            .add(bob, "analyst", &note(99))
            .await
            .unwrap();
        store
            .role_notes()
            .add(ada, "research", &note(77))
            .await
            .unwrap();
        let ada_notes = store.role_notes().recent(ada, "analyst", 50).await.unwrap();
        assert_eq!(ada_notes.len(), ROLE_NOTES_KEPT as usize);
        assert_eq!(ada_notes[0], note(3), "the oldest dropped");
        assert_eq!(ada_notes.last(), Some(&note(ROLE_NOTES_KEPT + 2)));
        let two = store.role_notes().recent(ada, "analyst", 2).await.unwrap();
        assert_eq!(two, [note(ROLE_NOTES_KEPT + 1), note(ROLE_NOTES_KEPT + 2)]);
        assert_eq!(
            store.role_notes().recent(bob, "analyst", 5).await.unwrap(),
            [note(99)]
        );
        assert_eq!(
            store.role_notes().recent(ada, "research", 5).await.unwrap(),
            [note(77)]
        );
        assert!(store
            .role_notes()
            .recent(bob, "research", 5)
            .await
            .unwrap()
            .is_empty());
    }
}
