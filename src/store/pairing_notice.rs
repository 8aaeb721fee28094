//! Telling a user that the operator approved their pairing code: where they
//! asked (their DM chat) and whether they were told.

use super::{now, Store, StoreError};
use sqlx::Row;
use switchboard_platform::{ChatId, Platform, UserId};

/// An approved pairing whose user has not been told yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovedPairing {
    pub code: String,
    pub platform: Platform,
    pub user: UserId,
    /// The DM chat the user asked in.
    pub chat: ChatId,
}

impl Store {
    /// Remembers the DM chat a new pairing code was given in.
    pub async fn set_pairing_chat(&self, code: &str, chat: ChatId) -> Result<(), StoreError> {
        sqlx::query("UPDATE pairing_codes SET chat_id = $1 WHERE code = $2")
            .bind(chat.0)
            .bind(code)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Approved pairings on `platform` whose user was not told yet.
    pub async fn unannounced_pairings(
        &self,
        platform: Platform,
    ) -> Result<Vec<ApprovedPairing>, StoreError> {
        let rows = sqlx::query(
            "SELECT code, user_id, chat_id FROM pairing_codes
             WHERE platform = $1 AND status = 'approved' AND notified_at IS NULL AND chat_id IS NOT NULL
             ORDER BY created_at",
        )
        .bind(platform.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ApprovedPairing {
                    code: row.try_get("code")?,
                    platform,
                    user: UserId(row.try_get("user_id")?),
                    chat: ChatId(row.try_get("chat_id")?),
                })
            })
            .collect()
    }

    /// Claims the announcement of `code`: true for exactly one caller (one
    /// process tells the user, once).
    pub async fn claim_pairing_notice(&self, code: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE pairing_codes SET notified_at = $1 WHERE code = $2 AND notified_at IS NULL",
        )
        .bind(now())
        .bind(code)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
