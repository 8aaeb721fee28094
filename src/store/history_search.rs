//! A session's whole history read back, newest first, for the agent's
//! `query_my_chat_history` tool: archived rows (folded by compaction) too.

use super::console::HistoryRow;
use super::{dt, ms, History, SessionId, StoreError};
use chrono::{DateTime, Utc};
use sqlx::any::AnyRow;
use sqlx::Row;

/// Which rows of a history a read covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistoryWindow {
    /// Only rows older than this id (the previous batch's last); all when `None`.
    pub before: Option<i64>,
    /// Only rows written at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only rows written before this time.
    pub until: Option<DateTime<Utc>>,
}

impl History<'_> {
    /// Up to `limit` messages of `session` within `window`, archived ones
    /// included, newest first.
    pub async fn newest_first(
        self,
        session: &SessionId,
        window: HistoryWindow,
        limit: u32,
    ) -> Result<Vec<HistoryRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, payload, created_at, archived FROM messages
             WHERE session_id = $1 AND id < $2 AND created_at >= $3 AND created_at < $4
             ORDER BY id DESC LIMIT $5",
        )
        .bind(session)
        .bind(window.before.unwrap_or(i64::MAX))
        .bind(window.since.map_or(i64::MIN, ms))
        .bind(window.until.map_or(i64::MAX, ms))
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(history_row).collect()
    }
}

/// A row of `id, payload, created_at, archived`.
pub(super) fn history_row(r: &AnyRow) -> Result<HistoryRow, StoreError> {
    let payload: String = r.try_get("payload")?;
    Ok(HistoryRow {
        id: r.try_get("id")?,
        message: serde_json::from_str(&payload)
            .map_err(|e| StoreError::Corrupt(format!("message payload: {e}")))?,
        at: dt(r.try_get("created_at")?),
        archived: r.try_get::<i64, _>("archived")? != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;

    #[tokio::test]
    async fn reads_archived_rows_too_newest_first_in_batches() {
        let (store, _dir) = super::super::test_store().await;
        let key = crate::store::SessionKey {
            platform: switchboard_platform::Platform::Telegram,
            chat: switchboard_platform::ChatId(1),
            thread: None,
            user: switchboard_platform::UserId(1),
        };
        let session = store.sessions().open(&key).await.unwrap();
        let history: Vec<Message> = (0..5).map(|i| Message::user(format!("m{i}"))).collect();
        store.history().append(&session, &history).await.unwrap();
        let all = store
            .history()
            .newest_first(&session, HistoryWindow::default(), 10)
            .await
            .unwrap();
        store
            .history()
            .fold(&session, Some(all[2].id), 0, 0, "summary")
            .await
            .unwrap();
        let first = store
            .history()
            .newest_first(&session, HistoryWindow::default(), 2)
            .await
            .unwrap();
        let texts = |rows: &[HistoryRow]| -> Vec<String> {
            rows.iter().map(|r| r.message.content.clone()).collect()
        };
        assert_eq!(texts(&first), ["m4", "m3"]);
        let next = HistoryWindow {
            before: Some(first[1].id),
            ..HistoryWindow::default()
        };
        let rest = store
            .history()
            .newest_first(&session, next, 10)
            .await
            .unwrap();
        assert_eq!(texts(&rest), ["m2", "m1", "m0"]);
        assert!(rest.iter().all(|r| r.archived), "{rest:?}");
        let future = HistoryWindow {
            since: Some(Utc::now() + chrono::Duration::hours(1)),
            ..HistoryWindow::default()
        };
        assert!(store
            .history()
            .newest_first(&session, future, 10)
            .await
            .unwrap()
            .is_empty());
    }
}
