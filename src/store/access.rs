//! Admitted users and one-time pairing codes.

use super::{dt, now, Store, StoreError};
use chrono::{DateTime, Utc};
use rand::Rng;
use sqlx::Row;
use switchboard_platform::{Platform, UserId};

/// A pairing request waiting for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairingCode {
    pub code: String,
    pub platform: Platform,
    pub user: UserId,
    pub display_name: String,
    pub expires_at: DateTime<Utc>,
}

/// A user admitted by pairing or by the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmittedUser {
    pub platform: Platform,
    pub user: UserId,
    pub display_name: String,
    pub admitted_at: DateTime<Utc>,
    /// `pairing` or `operator`.
    pub admitted_by: String,
}

/// Unambiguous characters only: no 0/O, 1/I/L.
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_LEN: usize = 8;

impl Store {
    pub async fn is_admitted(&self, platform: Platform, user: UserId) -> Result<bool, StoreError> {
        let row = sqlx::query("SELECT 1 FROM users WHERE platform = $1 AND user_id = $2")
            .bind(platform.as_str())
            .bind(user.0)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }

    pub async fn admit(
        &self,
        platform: Platform,
        user: UserId,
        name: &str,
        by: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO users (platform, user_id, display_name, admitted_at, admitted_by) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (platform, user_id) DO UPDATE SET display_name = excluded.display_name",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .bind(name)
        .bind(now())
        .bind(by)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Every admitted user, oldest admission first.
    pub async fn admitted_users(&self) -> Result<Vec<AdmittedUser>, StoreError> {
        let rows = sqlx::query(
            "SELECT platform, user_id, display_name, admitted_at, admitted_by FROM users
             ORDER BY admitted_at, platform, user_id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(AdmittedUser {
                    platform: platform_of(row)?,
                    user: UserId(row.try_get("user_id")?),
                    display_name: row.try_get("display_name")?,
                    admitted_at: dt(row.try_get("admitted_at")?),
                    admitted_by: row.try_get("admitted_by")?,
                })
            })
            .collect()
    }

    /// Takes a user's admission back; false when they were not admitted. Their
    /// next message is treated like a stranger's (a new pairing code).
    pub async fn revoke_admission(
        &self,
        platform: Platform,
        user: UserId,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM users WHERE platform = $1 AND user_id = $2")
            .bind(platform.as_str())
            .bind(user.0)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// The user's pending, unexpired code, or a new one valid for `ttl`.
    /// Returns the code and whether it is new (so the user is told only once).
    pub async fn pairing_code(
        &self,
        platform: Platform,
        user: UserId,
        name: &str,
        ttl: chrono::Duration,
    ) -> Result<(PairingCode, bool), StoreError> {
        let ts = now();
        let existing = sqlx::query(
            "SELECT code, expires_at FROM pairing_codes
             WHERE platform = $1 AND user_id = $2 AND status = 'pending' AND expires_at > $3",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .bind(ts)
        .fetch_optional(&self.pool)
        .await?;
        if let Some(row) = existing {
            let code = PairingCode {
                code: row.try_get("code")?,
                platform,
                user,
                display_name: name.to_owned(),
                expires_at: dt(row.try_get("expires_at")?),
            };
            return Ok((code, false));
        }
        let code = {
            let mut rng = rand::rng();
            (0..CODE_LEN)
                .map(|_| char::from(CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())]))
                .collect::<String>()
        };
        let expires_at = ts + ttl.num_milliseconds();
        sqlx::query(
            "INSERT INTO pairing_codes (code, platform, user_id, display_name, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&code)
        .bind(platform.as_str())
        .bind(user.0)
        .bind(name)
        .bind(ts)
        .bind(expires_at)
        .execute(&self.pool)
        .await?;
        Ok((
            PairingCode {
                code,
                platform,
                user,
                display_name: name.to_owned(),
                expires_at: dt(expires_at),
            },
            true,
        ))
    }

    /// Pending, unexpired pairing requests.
    pub async fn pending_pairings(&self) -> Result<Vec<PairingCode>, StoreError> {
        let rows = sqlx::query(
            "SELECT code, platform, user_id, display_name, expires_at FROM pairing_codes
             WHERE status = 'pending' AND expires_at > $1 ORDER BY created_at LIMIT 200",
        )
        .bind(now())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(pairing_from_row).collect()
    }

    /// Approves or denies a pending, unexpired code. Approving admits the user.
    /// `None` when no such pending code exists.
    pub async fn decide_pairing(
        &self,
        code: &str,
        approve: bool,
    ) -> Result<Option<PairingCode>, StoreError> {
        let status = if approve { "approved" } else { "denied" };
        let row = sqlx::query(
            "UPDATE pairing_codes SET status = $1 WHERE code = $2 AND status = 'pending' AND expires_at > $3
             RETURNING code, platform, user_id, display_name, expires_at",
        )
        .bind(status)
        .bind(code.trim().to_ascii_uppercase())
        .bind(now())
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let pairing = pairing_from_row(&row)?;
        if approve {
            self.admit(
                pairing.platform,
                pairing.user,
                &pairing.display_name,
                "pairing",
            )
            .await?;
        }
        Ok(Some(pairing))
    }
}

pub(super) fn platform_of(row: &sqlx::any::AnyRow) -> Result<Platform, StoreError> {
    let platform: String = row.try_get("platform")?;
    Platform::parse(&platform).ok_or_else(|| StoreError::Corrupt(format!("platform {platform}")))
}

pub(super) fn pairing_from_row(row: &sqlx::any::AnyRow) -> Result<PairingCode, StoreError> {
    Ok(PairingCode {
        code: row.try_get("code")?,
        platform: platform_of(row)?,
        user: UserId(row.try_get("user_id")?),
        display_name: row.try_get("display_name")?,
        expires_at: dt(row.try_get("expires_at")?),
    })
}

#[cfg(test)]
mod tests {
    use crate::store::test_store;
    use switchboard_platform::{Platform, UserId};

    #[tokio::test]
    async fn pairing_code_is_reused_then_approved_once() {
        let (store, _dir) = test_store().await;
        let ttl = chrono::Duration::hours(1);
        let (c1, new1) = store
            .pairing_code(Platform::Telegram, UserId(5), "Ann", ttl)
            .await
            .unwrap();
        let (c2, new2) = store
            .pairing_code(Platform::Telegram, UserId(5), "Ann", ttl)
            .await
            .unwrap();
        assert!(new1 && !new2);
        assert_eq!(c1.code, c2.code);
        assert_eq!(c1.code.len(), 8);
        assert_eq!(store.pending_pairings().await.unwrap().len(), 1);
        assert!(!store
            .is_admitted(Platform::Telegram, UserId(5))
            .await
            .unwrap());
        let lower = c1.code.to_lowercase();
        assert!(store.decide_pairing(&lower, true).await.unwrap().is_some());
        assert!(store
            .is_admitted(Platform::Telegram, UserId(5))
            .await
            .unwrap());
        assert!(
            store
                .decide_pairing(&c1.code, true)
                .await
                .unwrap()
                .is_none(),
            "a code works once"
        );
    }

    #[tokio::test]
    async fn an_admission_is_listed_and_revoked() {
        let (store, _dir) = test_store().await;
        store
            .admit(Platform::Telegram, UserId(7), "Cy", "operator")
            .await
            .unwrap();
        let users = store.admitted_users().await.unwrap();
        assert_eq!(users.len(), 1);
        assert_eq!(
            (users[0].user, users[0].admitted_by.as_str()),
            (UserId(7), "operator")
        );
        assert!(store
            .revoke_admission(Platform::Telegram, UserId(7))
            .await
            .unwrap());
        assert!(!store
            .is_admitted(Platform::Telegram, UserId(7))
            .await
            .unwrap());
        assert!(
            !store
                .revoke_admission(Platform::Telegram, UserId(7))
                .await
                .unwrap(),
            "nothing left to revoke"
        );
    }

    #[tokio::test]
    async fn expired_and_denied_codes_admit_nobody() {
        let (store, _dir) = test_store().await;
        let (c, _) = store
            .pairing_code(
                Platform::Discord,
                UserId(9),
                "Bo",
                chrono::Duration::seconds(-1),
            )
            .await
            .unwrap();
        assert!(store.decide_pairing(&c.code, true).await.unwrap().is_none());
        let (c, _) = store
            .pairing_code(
                Platform::Discord,
                UserId(9),
                "Bo",
                chrono::Duration::hours(1),
            )
            .await
            .unwrap();
        assert!(store
            .decide_pairing(&c.code, false)
            .await
            .unwrap()
            .is_some());
        assert!(!store
            .is_admitted(Platform::Discord, UserId(9))
            .await
            .unwrap());
    }
}
