//! Media bookkeeping: which files the media directory holds, when each was
//! last used, and how many bytes each user sent (the daily quota).

use super::{now, Store, StoreError};
use switchboard_platform::{Platform, UserId};

/// How long download records are kept (the quota looks back one day).
const DOWNLOADS_KEPT_MS: i64 = 2 * 86_400_000;

impl Store {
    /// Bytes `user` sent since `since` (epoch ms).
    pub async fn media_bytes_since(
        &self,
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
        .fetch_one(&self.pool)
        .await?;
        Ok(u64::try_from(total.unwrap_or(0)).unwrap_or(0))
    }

    /// Notes that `user` sent `bytes` of attachments now.
    pub async fn media_count_download(
        &self,
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
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records that the file `hash` is held (or used again) now.
    pub async fn media_touch(&self, hash: &str, mime: &str, size: u64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO media (hash, mime, size, created_at, last_used_at) VALUES ($1, $2, $3, $4, $4)
             ON CONFLICT (hash) DO UPDATE SET last_used_at = excluded.last_used_at",
        )
        .bind(hash)
        .bind(mime)
        .bind(i64::try_from(size).unwrap_or(i64::MAX))
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Files last used before `before` (epoch ms), at most `limit`.
    pub async fn media_unused_since(
        &self,
        before: i64,
        limit: i64,
    ) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT hash FROM media WHERE last_used_at < $1 ORDER BY last_used_at LIMIT $2",
        )
        .bind(before)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Forgets the file `hash` unless it was used again after `before`
    /// (another process may have received it meanwhile); true when it was
    /// forgotten and its file may go.
    pub async fn media_forget(&self, hash: &str, before: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM media WHERE hash = $1 AND last_used_at < $2")
            .bind(hash)
            .bind(before)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Drops download records the quota no longer looks at.
    pub async fn media_prune_downloads(&self) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM media_downloads WHERE at < $1")
            .bind(now() - DOWNLOADS_KEPT_MS)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{now, test_store};
    use switchboard_platform::{Platform, UserId};

    #[tokio::test]
    async fn quota_counts_a_users_recent_bytes_and_retention_spares_fresh_use() {
        let (store, _dir) = test_store().await;
        let (p, u) = (Platform::Telegram, UserId(7));
        assert_eq!(store.media_bytes_since(p, u, 0).await.unwrap(), 0);
        store.media_count_download(p, u, 1_000).await.unwrap();
        store.media_count_download(p, u, 500).await.unwrap();
        store.media_count_download(p, UserId(8), 9).await.unwrap();
        assert_eq!(store.media_bytes_since(p, u, 0).await.unwrap(), 1_500);
        assert_eq!(
            store.media_bytes_since(p, u, now() + 1_000).await.unwrap(),
            0
        );

        store.media_touch("aa11", "image/png", 10).await.unwrap();
        let later = now() + 1;
        assert_eq!(store.media_unused_since(later, 10).await.unwrap(), ["aa11"]);
        assert!(
            !store.media_forget("aa11", 0).await.unwrap(),
            "used after the cut-off"
        );
        assert!(store.media_forget("aa11", later).await.unwrap());
        assert!(store
            .media_unused_since(later, 10)
            .await
            .unwrap()
            .is_empty());
    }
}
