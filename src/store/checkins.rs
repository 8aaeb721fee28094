//! Opt-in check-in settings per user and the rate-limit claim on sending one.

use super::memories::MemoryOwner;
use super::{ms, SessionId, Store, StoreError};
use chrono::{DateTime, Utc};
use sqlx::Row;

/// A user's check-in settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckinSettings {
    pub enabled: bool,
    /// `HH:MM` in `timezone`.
    pub at_time: String,
    pub timezone: String,
    /// The direct-message session check-ins are sent in, and its conversation (JSON).
    pub session_id: SessionId,
    pub origin: String,
}

impl Store {
    /// Sets the owner's check-in settings.
    pub async fn set_checkins(
        &self,
        owner: MemoryOwner,
        s: &CheckinSettings,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO checkins (platform, user_id, enabled, at_time, timezone, session_id, origin)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (platform, user_id) DO UPDATE SET enabled = excluded.enabled, at_time = excluded.at_time,
               timezone = excluded.timezone, session_id = excluded.session_id, origin = excluded.origin",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(i64::from(s.enabled))
        .bind(&s.at_time)
        .bind(&s.timezone)
        .bind(&s.session_id)
        .bind(&s.origin)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The owner's check-in settings, if they ever set them.
    pub async fn checkins(
        &self,
        owner: MemoryOwner,
    ) -> Result<Option<CheckinSettings>, StoreError> {
        let row = sqlx::query(
            "SELECT enabled, at_time, timezone, session_id, origin FROM checkins WHERE platform = $1 AND user_id = $2",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(CheckinSettings {
                enabled: r.try_get::<i64, _>("enabled")? != 0,
                at_time: r.try_get("at_time")?,
                timezone: r.try_get("timezone")?,
                session_id: r.try_get("session_id")?,
                origin: r.try_get("origin")?,
            })
        })
        .transpose()
    }

    /// Claims the owner's next check-in: true for the one caller that finds
    /// check-ins on and none scheduled since `not_since`.
    pub async fn claim_checkin(
        &self,
        owner: MemoryOwner,
        not_since: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE checkins SET last_sent_at = $1 WHERE platform = $2 AND user_id = $3 AND enabled = 1
             AND (last_sent_at IS NULL OR last_sent_at <= $4)",
        )
        .bind(ms(now))
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(ms(not_since))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
