//! Web console sessions ended on the server: a signed session cookie is
//! valid until it expires unless its session id is listed here (signed out),
//! so a copy of the cookie taken before the sign-out is refused too.

use super::{now, Store, StoreError};

impl Store {
    /// Ends the console session `nonce` (its cookie expires at
    /// `expires_at`, epoch ms); rows of sessions expired by now go.
    pub async fn revoke_web_session(&self, nonce: &str, expires_at: i64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO web_revoked_sessions (nonce, expires_at) VALUES ($1, $2)
             ON CONFLICT (nonce) DO NOTHING",
        )
        .bind(nonce)
        .bind(expires_at)
        .execute(&self.pool)
        .await?;
        sqlx::query("DELETE FROM web_revoked_sessions WHERE expires_at < $1")
            .bind(now())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Whether the console session `nonce` was signed out.
    pub async fn web_session_revoked(&self, nonce: &str) -> Result<bool, StoreError> {
        let row = sqlx::query("SELECT 1 AS one FROM web_revoked_sessions WHERE nonce = $1")
            .bind(nonce)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[tokio::test]
    async fn a_revoked_session_stays_revoked_until_it_would_have_expired() {
        let (store, _dir) = crate::store::test_store().await;
        assert!(!store.web_session_revoked("a").await.unwrap());
        let later = crate::store::now() + 60_000;
        store.revoke_web_session("a", later).await.unwrap();
        store.revoke_web_session("a", later).await.unwrap();
        assert!(store.web_session_revoked("a").await.unwrap());
        assert!(!store.web_session_revoked("b").await.unwrap());
        // An expired row goes with the next sign-out.
        store.revoke_web_session("old", 1).await.unwrap();
        store.revoke_web_session("c", later).await.unwrap();
        assert!(!store.web_session_revoked("old").await.unwrap());
    }
}
