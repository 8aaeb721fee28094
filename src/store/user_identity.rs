//! A user's own identity settings (`user_identities`): one JSON profile per
//! user, every change audited.

use super::memories::MemoryOwner;
use super::{now, Store, StoreError};

impl Store {
    /// The user's own profile (JSON), if they set one.
    pub async fn user_identity(&self, owner: MemoryOwner) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT profile FROM user_identities WHERE platform = $1 AND user_id = $2",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Sets (`Some`) or removes (`None`) the user's own profile; audited
    /// with what changed.
    pub async fn set_user_identity(
        &self,
        owner: MemoryOwner,
        profile: Option<&str>,
        change: &str,
    ) -> Result<(), StoreError> {
        match profile {
            Some(json) => {
                sqlx::query(
                    "INSERT INTO user_identities (platform, user_id, profile, updated_at) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (platform, user_id) DO UPDATE SET profile = excluded.profile, updated_at = excluded.updated_at",
                )
                .bind(owner.platform.as_str())
                .bind(owner.user.0)
                .bind(json)
                .bind(now())
                .execute(&self.pool)
                .await?;
            }
            None => {
                sqlx::query("DELETE FROM user_identities WHERE platform = $1 AND user_id = $2")
                    .bind(owner.platform.as_str())
                    .bind(owner.user.0)
                    .execute(&self.pool)
                    .await?;
            }
        }
        self.audit().record(
            "identity.user_edit",
            serde_json::json!({ "platform": owner.platform.as_str(), "user": owner.user.0, "change": change }),
        )
        .await;
        Ok(())
    }
}
