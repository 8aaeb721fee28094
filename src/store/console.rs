//! What the operator web console reads: overview counts, processes sharing
//! the database, conversations and the audit log, each a bounded page.

use super::approvals::{approval_from_row, COLUMNS as APPROVAL_COLUMNS};
use super::session_state::key_from_row;
use super::{dt, ms, now, ApprovalRecord, SessionId, SessionKey, Store, StoreError, SystemEvent};
use crate::llm::Message;
use chrono::{DateTime, Utc};
use sqlx::Row;

/// One page of a longer list: `more` says whether a next page exists.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice<T> {
    pub items: Vec<T>,
    pub more: bool,
}

impl<T> Slice<T> {
    /// Rows fetched with `limit + 1`: the extra row only says there is more.
    pub(super) fn of(mut items: Vec<T>, limit: u32) -> Slice<T> {
        let limit = limit as usize;
        let more = items.len() > limit;
        items.truncate(limit);
        Slice { items, more }
    }

    /// [`Slice::of`] the rows read with `read`.
    pub(super) fn from_rows(
        rows: &[sqlx::any::AnyRow],
        limit: u32,
        read: impl Fn(&sqlx::any::AnyRow) -> Result<T, StoreError>,
    ) -> Result<Slice<T>, StoreError> {
        let items = rows.iter().map(read).collect::<Result<Vec<_>, _>>()?;
        Ok(Slice::of(items, limit))
    }
}

/// `limit + 1` and the offset, as bound parameters.
pub(super) fn window(limit: u32, offset: u64) -> (i64, i64) {
    (
        i64::from(limit) + 1,
        i64::try_from(offset).unwrap_or(i64::MAX),
    )
}

/// Activity across every process in the last hour and day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    pub turns_hour: i64,
    pub turns_day: i64,
    pub messages_hour: i64,
    pub messages_day: i64,
    /// Storage errors and failed tasks in the last day.
    pub errors_day: i64,
}

/// A gateway process sharing the database, by its heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRow {
    pub id: crate::domain::ProcessId,
    pub host: String,
    pub pid: i64,
    pub version: String,
    pub web: Option<String>,
    pub started_at: DateTime<Utc>,
    pub seen_at: DateTime<Utc>,
}

/// A session as the conversations list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub id: SessionId,
    pub key: SessionKey,
    /// The admitted user's name, when known.
    pub name: Option<String>,
    pub messages: i64,
    pub updated_at: DateTime<Utc>,
}

/// One stored message of a session's history.
#[derive(Debug, Clone)]
pub struct HistoryRow {
    pub id: i64,
    pub message: Message,
    pub at: DateTime<Utc>,
    /// Folded into the compaction summary.
    pub archived: bool,
}

/// Which sessions the conversations list shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFilter {
    pub platform: Option<String>,
    pub chat: Option<i64>,
    pub user: Option<i64>,
}

/// What the audit log is filtered by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// An exact kind (`approval.decided`) or a family (`approval`).
    pub kind: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
}

/// How long a process may miss its heartbeat and still be listed.
const PROCESS_STALE_MS: i64 = 90_000;

impl Store {
    /// Turns (user messages, not the gateway's notifications), messages and
    /// errors of the last hour and day.
    pub async fn activity(&self, at: DateTime<Utc>) -> Result<Activity, StoreError> {
        let hour = ms(at) - 3_600_000;
        let day = ms(at) - 86_400_000;
        let row = sqlx::query(
            r#"SELECT
                (SELECT COUNT(*) FROM messages WHERE created_at > $1 AND payload LIKE '%"role":"user"%' AND payload NOT LIKE $3) AS turns_hour,
                (SELECT COUNT(*) FROM messages WHERE created_at > $2 AND payload LIKE '%"role":"user"%' AND payload NOT LIKE $3) AS turns_day,
                (SELECT COUNT(*) FROM messages WHERE created_at > $1) AS messages_hour,
                (SELECT COUNT(*) FROM messages WHERE created_at > $2) AS messages_day,
                (SELECT COUNT(*) FROM system_events WHERE at > $2 AND kind LIKE 'error.%')
                  + (SELECT COUNT(*) FROM tasks WHERE status = 'failed' AND finished_at > $2) AS errors_day"#,
        )
        .bind(hour)
        .bind(day)
        // The gateway's own notifications (a task finished) are not turns
        // a user started; users cannot forge the marker (it is defused).
        .bind(format!(
            "%\"content\":\"{}%",
            crate::markers::SYSTEM_NOTIFICATION
        ))
        .fetch_one(&self.pool)
        .await?;
        Ok(Activity {
            turns_hour: row.try_get("turns_hour")?,
            turns_day: row.try_get("turns_day")?,
            messages_hour: row.try_get("messages_hour")?,
            messages_day: row.try_get("messages_day")?,
            errors_day: row.try_get("errors_day")?,
        })
    }

    /// Records (or renews) this process's heartbeat; rows silent for a day go.
    pub async fn process_heartbeat(&self, p: &ProcessRow) -> Result<(), StoreError> {
        let ts = now();
        sqlx::query(
            "INSERT INTO processes (id, host, pid, version, web, started_at, seen_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at, web = excluded.web",
        )
        .bind(&p.id)
        .bind(&p.host)
        .bind(p.pid)
        .bind(&p.version)
        .bind(p.web.clone())
        .bind(ms(p.started_at))
        .bind(ts)
        .execute(&self.pool)
        .await?;
        sqlx::query("DELETE FROM processes WHERE seen_at < $1")
            .bind(ts - 86_400_000)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Takes this process's row away at a clean stop.
    pub async fn process_gone(&self, id: &crate::domain::ProcessId) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM processes WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Processes whose heartbeat is recent (at most 50), oldest start first.
    pub async fn live_processes(&self) -> Result<Vec<ProcessRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, host, pid, version, web, started_at, seen_at FROM processes
             WHERE seen_at > $1 ORDER BY started_at, id LIMIT 50",
        )
        .bind(now() - PROCESS_STALE_MS)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(ProcessRow {
                    id: r.try_get("id")?,
                    host: r.try_get("host")?,
                    pid: r.try_get("pid")?,
                    version: r.try_get("version")?,
                    web: r.try_get("web")?,
                    started_at: dt(r.try_get("started_at")?),
                    seen_at: dt(r.try_get("seen_at")?),
                })
            })
            .collect()
    }

    /// Sessions by last activity, newest first, optionally of one platform,
    /// chat or user.
    pub async fn sessions_page(
        &self,
        filter: &SessionFilter,
        limit: u32,
        offset: u64,
    ) -> Result<Slice<SessionRow>, StoreError> {
        let (take, skip) = window(limit, offset);
        let rows = sqlx::query(
            "SELECT s.id, s.platform, s.chat_id, s.thread_id, s.user_id, s.updated_at,
                    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS messages,
                    (SELECT MAX(u.display_name) FROM users u WHERE u.platform = s.platform AND u.user_id = s.user_id) AS name
             FROM sessions s WHERE ($1 = '' OR s.platform = $1)
               AND ($4 = 0 OR s.chat_id = $5) AND ($6 = 0 OR s.user_id = $7)
             ORDER BY s.updated_at DESC, s.id LIMIT $2 OFFSET $3",
        )
        .bind(filter.platform.as_deref().unwrap_or(""))
        .bind(take)
        .bind(skip)
        .bind(i64::from(filter.chat.is_some()))
        .bind(filter.chat.unwrap_or(0))
        .bind(i64::from(filter.user.is_some()))
        .bind(filter.user.unwrap_or(0))
        .fetch_all(&self.pool)
        .await?;
        Slice::from_rows(&rows, limit, |r| {
            Ok(SessionRow {
                id: r.try_get("id")?,
                key: key_from_row(r)?,
                name: r.try_get("name")?,
                messages: r.try_get("messages")?,
                updated_at: dt(r.try_get("updated_at")?),
            })
        })
    }

    /// One session's row, when it exists.
    pub async fn session_row(&self, id: &SessionId) -> Result<Option<SessionRow>, StoreError> {
        let row = sqlx::query(
            "SELECT s.id, s.platform, s.chat_id, s.thread_id, s.user_id, s.updated_at,
                    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS messages,
                    (SELECT MAX(u.display_name) FROM users u WHERE u.platform = s.platform AND u.user_id = s.user_id) AS name
             FROM sessions s WHERE s.id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(SessionRow {
                id: r.try_get("id")?,
                key: key_from_row(&r)?,
                name: r.try_get("name")?,
                messages: r.try_get("messages")?,
                updated_at: dt(r.try_get("updated_at")?),
            })
        })
        .transpose()
    }

    /// A page of a session's messages (compacted ones included), oldest first.
    pub async fn history_page(
        &self,
        session: &SessionId,
        limit: u32,
        offset: u64,
    ) -> Result<Slice<HistoryRow>, StoreError> {
        let (take, skip) = window(limit, offset);
        let rows = sqlx::query(
            "SELECT id, payload, created_at, archived FROM messages WHERE session_id = $1
             ORDER BY id LIMIT $2 OFFSET $3",
        )
        .bind(session)
        .bind(take)
        .bind(skip)
        .fetch_all(&self.pool)
        .await?;
        Slice::from_rows(&rows, limit, |r| {
            let payload: String = r.try_get("payload")?;
            Ok(HistoryRow {
                id: r.try_get("id")?,
                message: serde_json::from_str(&payload)
                    .map_err(|e| StoreError::Corrupt(format!("message payload: {e}")))?,
                at: dt(r.try_get("created_at")?),
                archived: r.try_get::<i64, _>("archived")? != 0,
            })
        })
    }

    /// A session's approvals (newest first, at most `limit`).
    pub async fn session_approvals(
        &self,
        session: &SessionId,
        limit: u32,
    ) -> Result<Vec<ApprovalRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE session_id = $1 ORDER BY created_at DESC, id LIMIT $2"
        ))
        .bind(session)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(approval_from_row).collect()
    }

    /// A page of pending approvals not yet past their deadline, oldest first.
    pub async fn pending_page(
        &self,
        at: DateTime<Utc>,
        limit: u32,
        offset: u64,
    ) -> Result<Slice<ApprovalRecord>, StoreError> {
        let (take, skip) = window(limit, offset);
        let rows = sqlx::query(&format!(
            "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at > $1
             ORDER BY created_at, id LIMIT $2 OFFSET $3"
        ))
        .bind(ms(at))
        .bind(take)
        .bind(skip)
        .fetch_all(&self.pool)
        .await?;
        Slice::from_rows(&rows, limit, approval_from_row)
    }

    /// A page of the audit log, newest first.
    pub async fn events_page(
        &self,
        filter: &EventFilter,
        limit: u32,
        offset: u64,
    ) -> Result<Slice<SystemEvent>, StoreError> {
        let (take, skip) = window(limit, offset);
        let kind = filter.kind.clone().unwrap_or_default();
        let rows = sqlx::query(
            "SELECT id, at, kind, detail FROM system_events
             WHERE ($1 = '' OR kind = $1 OR kind LIKE $2) AND at >= $3 AND at < $4
             ORDER BY id DESC LIMIT $5 OFFSET $6",
        )
        .bind(&kind)
        .bind(format!("{}.%", kind.replace(['%', '_'], "")))
        .bind(filter.since.map_or(0, ms))
        .bind(filter.until.map_or(i64::MAX, ms))
        .bind(take)
        .bind(skip)
        .fetch_all(&self.pool)
        .await?;
        Slice::from_rows(&rows, limit, |r| {
            let detail: String = r.try_get("detail")?;
            Ok(SystemEvent {
                id: r.try_get("id")?,
                at: dt(r.try_get("at")?),
                kind: r.try_get("kind")?,
                detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::String(detail)),
            })
        })
    }

    /// The kinds recorded so far (at most 200), for the audit log's filter.
    pub async fn event_kinds(&self) -> Result<Vec<String>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT DISTINCT kind FROM system_events ORDER BY kind LIMIT 200")
                .fetch_all(&self.pool)
                .await?,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::SessionFilter;
    use crate::llm::Message;
    use crate::store::{test_store, SessionKey};
    use switchboard_platform::{ChatId, Platform, UserId};

    #[tokio::test]
    async fn turns_are_users_messages_not_notifications() {
        let (store, _dir) = test_store().await;
        let key = SessionKey {
            platform: Platform::Telegram,
            chat: ChatId(1),
            thread: None,
            user: UserId(1),
        };
        let s = store.sessions().open(&key).await.unwrap();
        let notice = format!(
            "{}\n<task-notification>done</task-notification>",
            crate::markers::SYSTEM_NOTIFICATION
        );
        let history = [
            Message::user("hi \"role\":\"user\""),
            Message::assistant("hello"),
            Message::user(notice),
            Message::assistant("it finished"),
        ];
        store.history().append(&s, &history).await.unwrap();
        let a = store.activity(chrono::Utc::now()).await.unwrap();
        assert_eq!((a.turns_hour, a.turns_day), (1, 1), "{a:?}");
        assert_eq!((a.messages_hour, a.messages_day), (4, 4), "{a:?}");
        let only = |platform: &str, chat: Option<i64>, user: Option<i64>| SessionFilter {
            platform: Some(platform.to_owned()),
            chat,
            user,
        };
        let page = store
            .sessions_page(&only("telegram", Some(1), Some(1)), 10, 0)
            .await
            .unwrap();
        assert_eq!(page.items.len(), 1);
        assert_eq!(page.items[0].messages, 4);
        for other in [
            only("discord", None, None),
            only("telegram", Some(2), None),
            only("telegram", None, Some(2)),
        ] {
            let page = store.sessions_page(&other, 10, 0).await.unwrap();
            assert!(page.items.is_empty(), "{other:?}");
        }
    }
}
