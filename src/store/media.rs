//! Media bookkeeping: which files the media directory holds, when each was
//! last used, and how many bytes each user sent (the daily quota).

use super::{now, SessionId, Store, StoreError};
use switchboard_platform::{Platform, UserId};

/// Held media files and the per-user download quota (`store.media()`).
#[derive(Debug, Clone, Copy)]
pub struct MediaFiles<'a> {
    pub(super) db: &'a Store,
}

/// What a file in the media directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaOrigin<'a> {
    /// An attachment a user sent, as downloaded.
    Inbound,
    /// The scaled, re-encoded copy of the download `from` that the model gets.
    Scaled { from: &'a str },
    /// An image a tool returned (an MCP server's image result).
    Produced,
}

/// A file filed in the media directory, as recorded.
#[derive(Debug, Clone, Copy)]
pub struct MediaFile<'a> {
    /// Lowercase hex SHA-256 of the content (its name on disk).
    pub hash: &'a str,
    pub mime: &'a str,
    pub size: u64,
    pub origin: MediaOrigin<'a>,
    /// The session it was filed for.
    pub session: Option<&'a SessionId>,
    /// Who sent it (a download and its scaled copy).
    pub sender: Option<(Platform, UserId)>,
}

/// How long download records are kept (the quota looks back one day).
const DOWNLOADS_KEPT_MS: i64 = 2 * 86_400_000;

impl MediaFiles<'_> {
    /// Bytes `user` sent since `since` (epoch ms).
    pub async fn bytes_since(
        self,
        platform: Platform,
        user: UserId,
        since: i64,
    ) -> Result<u64, StoreError> {
        let total: Option<i64> = sqlx::query_scalar(
            "SELECT CAST(SUM(bytes) AS BIGINT) FROM media_downloads
             WHERE platform = $1 AND user_id = $2 AND at >= $3",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .bind(since)
        .fetch_one(&self.db.pool)
        .await?;
        Ok(u64::try_from(total.unwrap_or(0)).unwrap_or(0))
    }

    /// Notes that `user` sent `bytes` of attachments now.
    pub async fn count_download(
        self,
        platform: Platform,
        user: UserId,
        bytes: u64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO media_downloads (platform, user_id, bytes, at) VALUES ($1, $2, $3, $4)",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .bind(i64::try_from(bytes).unwrap_or(i64::MAX))
        .bind(now())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Records that `file` is held (or used again) now. A file recorded
    /// before keeps what it was first recorded as; only its use is renewed.
    pub async fn touch(self, file: &MediaFile<'_>) -> Result<(), StoreError> {
        let (origin, derived_from) = match file.origin {
            MediaOrigin::Inbound => ("inbound", None),
            MediaOrigin::Scaled { from } => ("scaled", Some(from)),
            MediaOrigin::Produced => ("produced", None),
        };
        sqlx::query(
            "INSERT INTO media (hash, mime, size, created_at, last_used_at, origin, derived_from,
                                session_id, platform, user_id)
             VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (hash) DO UPDATE SET last_used_at = excluded.last_used_at",
        )
        .bind(file.hash)
        .bind(file.mime)
        .bind(i64::try_from(file.size).unwrap_or(i64::MAX))
        .bind(now())
        .bind(origin)
        .bind(derived_from)
        .bind(file.session)
        .bind(file.sender.map(|(p, _)| p.as_str()))
        .bind(file.sender.map(|(_, u)| u.0))
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Files last used before `before` (epoch ms), at most `limit`. A scaled
    /// copy is not among them while its original is recorded: it goes with
    /// the original ([`MediaFiles::forget_derived`]).
    pub async fn unused_since(self, before: i64, limit: i64) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT m.hash FROM media m WHERE m.last_used_at < $1
               AND (m.derived_from IS NULL
                    OR NOT EXISTS (SELECT 1 FROM media o WHERE o.hash = m.derived_from))
             ORDER BY m.last_used_at LIMIT $2",
        )
        .bind(before)
        .bind(limit)
        .fetch_all(&self.db.pool)
        .await?)
    }

    /// Forgets the file `hash` unless it was used again after `before`
    /// (another process may have received it meanwhile); true when it was
    /// forgotten and its file may go.
    pub async fn forget(self, hash: &str, before: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM media WHERE hash = $1 AND last_used_at < $2")
            .bind(hash)
            .bind(before)
            .execute(&self.db.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Forgets the copies made from `original` once it is forgotten (not when
    /// another process recorded it again meanwhile); the hashes whose files
    /// may go.
    pub async fn forget_derived(self, original: &str) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "DELETE FROM media WHERE derived_from = $1
               AND NOT EXISTS (SELECT 1 FROM media o WHERE o.hash = $1)
             RETURNING hash",
        )
        .bind(original)
        .fetch_all(&self.db.pool)
        .await?)
    }

    /// Whether the file `hash` is recorded (files that are not, and are
    /// old, are leftovers the sweep removes).
    pub async fn recorded(self, hash: &str) -> Result<bool, StoreError> {
        let found: Option<i64> = sqlx::query_scalar("SELECT 1 FROM media WHERE hash = $1")
            .bind(hash)
            .fetch_optional(&self.db.pool)
            .await?;
        Ok(found.is_some())
    }

    /// Drops download records the quota no longer looks at.
    pub async fn prune_downloads(self) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM media_downloads WHERE at < $1")
            .bind(now() - DOWNLOADS_KEPT_MS)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{MediaFile, MediaOrigin, SessionId};
    use crate::store::{now, test_store};
    use switchboard_platform::{Platform, UserId};

    static S1: std::sync::LazyLock<SessionId> = std::sync::LazyLock::new(|| "s1".parse().unwrap());

    fn file(hash: &str) -> MediaFile<'_> {
        MediaFile {
            hash,
            mime: "image/png",
            size: 10,
            origin: MediaOrigin::Inbound,
            session: Some(&S1),
            sender: Some((Platform::Telegram, UserId(7))),
        }
    }

    #[tokio::test]
    async fn quota_counts_a_users_recent_bytes_and_retention_spares_fresh_use() {
        let (store, _dir) = test_store().await;
        let (p, u) = (Platform::Telegram, UserId(7));
        assert_eq!(store.media().bytes_since(p, u, 0).await.unwrap(), 0);
        store.media().count_download(p, u, 1_000).await.unwrap();
        store.media().count_download(p, u, 500).await.unwrap();
        store.media().count_download(p, UserId(8), 9).await.unwrap();
        assert_eq!(store.media().bytes_since(p, u, 0).await.unwrap(), 1_500);
        assert_eq!(
            store
                .media()
                .bytes_since(p, u, now() + 1_000)
                .await
                .unwrap(),
            0
        );

        store.media().touch(&file("aa11")).await.unwrap();
        let later = now() + 1;
        assert_eq!(
            store.media().unused_since(later, 10).await.unwrap(),
            ["aa11"]
        );
        assert!(
            !store.media().forget("aa11", 0).await.unwrap(),
            "used after the cut-off"
        );
        assert!(store.media().forget("aa11", later).await.unwrap());
        assert!(store
            .media()
            .unused_since(later, 10)
            .await
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn a_scaled_copy_goes_with_its_original() {
        let (store, _dir) = test_store().await;
        store.media().touch(&file("aa11")).await.unwrap();
        let copy = MediaFile {
            origin: MediaOrigin::Scaled { from: "aa11" },
            ..file("bb22")
        };
        store.media().touch(&copy).await.unwrap();
        assert!(store.media().recorded("bb22").await.unwrap());
        let later = now() + 1;
        assert_eq!(
            store.media().unused_since(later, 10).await.unwrap(),
            ["aa11"],
            "the copy is not collected on its own"
        );
        assert!(
            store
                .media()
                .forget_derived("aa11")
                .await
                .unwrap()
                .is_empty(),
            "not while the original is recorded"
        );
        assert!(store.media().forget("aa11", later).await.unwrap());
        assert_eq!(
            store.media().forget_derived("aa11").await.unwrap(),
            ["bb22"]
        );
        assert!(!store.media().recorded("bb22").await.unwrap());
    }
}
