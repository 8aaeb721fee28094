//! Per-session state beside the history: task state, execution state, the
//! compaction summary, the memory-extraction watermark, and the archived
//! (compacted) messages.

use super::{ms, now as now_ms, SessionId, SessionKey, Sessions, StoreError};
use chrono::{DateTime, Utc};
use sqlx::Row;
use switchboard_platform::{ChatId, Platform, ThreadId, UserId};

/// The stored state of a session (JSON documents are parsed by `memory::state`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionState {
    pub task_state: Option<String>,
    pub execution_state: Option<String>,
    /// The `[conversation summary]` standing for the archived messages.
    pub summary: Option<String>,
    /// Memories were extracted from messages up to this id.
    pub extracted_through: i64,
}

/// A session with messages not yet looked at by memory extraction.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleSession {
    pub session: SessionId,
    pub key: SessionKey,
    pub last_message: i64,
}

/// Which document of [`SessionState`] to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateDoc {
    Task,
    Execution,
    Summary,
}

impl StateDoc {
    fn column(self) -> &'static str {
        match self {
            StateDoc::Task => "task_state",
            StateDoc::Execution => "execution_state",
            StateDoc::Summary => "summary",
        }
    }
}

/// A session's key from its row (`platform`, `chat_id`, `thread_id` — 0 for
/// none — and `user_id`).
pub(super) fn key_from_row(r: &sqlx::any::AnyRow) -> Result<SessionKey, StoreError> {
    let platform: String = r.try_get("platform")?;
    let thread: i64 = r.try_get("thread_id")?;
    Ok(SessionKey {
        platform: Platform::parse(&platform)
            .ok_or_else(|| StoreError::Corrupt(format!("platform {platform:?}")))?,
        chat: ChatId(r.try_get("chat_id")?),
        thread: (thread != 0).then_some(ThreadId(thread)),
        user: UserId(r.try_get("user_id")?),
    })
}

impl Sessions<'_> {
    /// The key of a session by id (who owns it, where it is).
    pub async fn key(self, session: &SessionId) -> Result<Option<SessionKey>, StoreError> {
        let row =
            sqlx::query("SELECT platform, chat_id, thread_id, user_id FROM sessions WHERE id = $1")
                .bind(session)
                .fetch_optional(&self.db.pool)
                .await?;
        row.as_ref().map(key_from_row).transpose()
    }

    pub async fn state(self, session: &SessionId) -> Result<SessionState, StoreError> {
        let row = sqlx::query(
            "SELECT task_state, execution_state, summary, extracted_through FROM session_state WHERE session_id = $1",
        )
        .bind(session)
        .fetch_optional(&self.db.pool)
        .await?;
        let Some(row) = row else {
            return Ok(SessionState::default());
        };
        Ok(SessionState {
            task_state: row.try_get("task_state")?,
            execution_state: row.try_get("execution_state")?,
            summary: row.try_get("summary")?,
            extracted_through: row.try_get("extracted_through")?,
        })
    }

    /// Writes (or with `None` clears) one document of a session's state.
    pub async fn set_doc(
        self,
        session: &SessionId,
        doc: StateDoc,
        value: Option<&str>,
    ) -> Result<(), StoreError> {
        let column = doc.column();
        sqlx::query(&format!(
            "INSERT INTO session_state (session_id, {column}, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (session_id) DO UPDATE SET {column} = excluded.{column}, updated_at = excluded.updated_at"
        ))
        .bind(session)
        .bind(value)
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Forgets the task state, execution state and summary (`/clear`).
    pub async fn clear_state(self, session: &SessionId) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE session_state SET task_state = NULL, execution_state = NULL, summary = NULL, updated_at = $2
             WHERE session_id = $1",
        )
        .bind(session)
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Sessions quiet since `before` with messages newer than their extraction
    /// watermark, except those another process is extracting (lease unexpired at `now`).
    pub async fn idle(
        self,
        before: DateTime<Utc>,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<IdleSession>, StoreError> {
        let rows = sqlx::query(
            "SELECT s.id, s.platform, s.chat_id, s.thread_id, s.user_id,
                    (SELECT MAX(m.id) FROM messages m WHERE m.session_id = s.id) AS last_message
             FROM sessions s LEFT JOIN session_state st ON st.session_id = s.id
             WHERE s.updated_at < $1
               AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.id > COALESCE(st.extracted_through, 0))
               AND (st.extract_lease_until IS NULL OR st.extract_lease_until <= $2)
             ORDER BY s.updated_at LIMIT $3",
        )
        .bind(ms(before))
        .bind(ms(now))
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(IdleSession {
                    session: r.try_get("id")?,
                    key: key_from_row(r)?,
                    last_message: r.try_get::<Option<i64>, _>("last_message")?.unwrap_or(0),
                })
            })
            .collect()
    }

    /// Claims the extraction of `idle` up to its last message, for this process
    /// until `lease_until`: one conditional upsert, so of several processes that
    /// listed the same idle session exactly one wins. Nobody wins while the
    /// watermark is already there or another claim's lease has not run out at
    /// `now` (a claimant that died stops blocking once its lease expires).
    pub async fn claim_extraction(
        self,
        idle: &IdleSession,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let claimed = sqlx::query(
            "INSERT INTO session_state (session_id, extract_lease_until, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (session_id) DO UPDATE SET extract_lease_until = excluded.extract_lease_until,
                 updated_at = excluded.updated_at
             WHERE session_state.extracted_through < $4
               AND (session_state.extract_lease_until IS NULL OR session_state.extract_lease_until <= $5)",
        )
        .bind(&idle.session)
        .bind(ms(lease_until))
        .bind(now_ms())
        .bind(idle.last_message)
        .bind(ms(now))
        .execute(&self.db.pool)
        .await?;
        Ok(claimed.rows_affected() == 1)
    }

    /// Ends a claim of [`Sessions::claim_extraction`]: moves the watermark forward to
    /// `through` and releases the lease, unless it has meanwhile passed to
    /// another claimant (whose lease is `lease_until` no longer).
    pub async fn finish_extraction(
        self,
        session: &SessionId,
        through: i64,
        lease_until: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE session_state SET
                 extracted_through = CASE WHEN extracted_through < $2 THEN $2 ELSE extracted_through END,
                 extract_lease_until = CASE WHEN extract_lease_until = $3 THEN NULL ELSE extract_lease_until END,
                 updated_at = $4
             WHERE session_id = $1",
        )
        .bind(session)
        .bind(through)
        .bind(ms(lease_until))
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Moves the extraction watermark of a session forward to `through`.
    pub async fn set_extracted_through(
        self,
        session: &SessionId,
        through: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO session_state (session_id, extracted_through, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (session_id) DO UPDATE SET extracted_through = CASE WHEN excluded.extracted_through > session_state.extracted_through
                 THEN excluded.extracted_through ELSE session_state.extracted_through END,
             updated_at = excluded.updated_at",
        )
        .bind(session)
        .bind(through)
        .bind(now_ms())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;
    use crate::store::test_store;

    fn key(user: i64) -> SessionKey {
        SessionKey {
            platform: Platform::Telegram,
            chat: ChatId(5),
            thread: Some(ThreadId(9)),
            user: UserId(user),
        }
    }

    #[tokio::test]
    async fn documents_are_written_and_cleared() {
        let (store, _dir) = test_store().await;
        let s = store.sessions().open(&key(1)).await.unwrap();
        assert_eq!(store.sessions().key(&s).await.unwrap(), Some(key(1)));
        store
            .sessions()
            .set_doc(&s, StateDoc::Task, Some("{\"goal\":1}"))
            .await
            .unwrap();
        store
            .sessions()
            .set_doc(&s, StateDoc::Execution, Some("{}"))
            .await
            .unwrap();
        store
            .sessions()
            .set_extracted_through(&s, 12)
            .await
            .unwrap();
        store.sessions().set_extracted_through(&s, 3).await.unwrap();
        let st = store.sessions().state(&s).await.unwrap();
        assert_eq!(
            (st.task_state.as_deref(), st.extracted_through),
            (Some("{\"goal\":1}"), 12)
        );
        store.sessions().clear_state(&s).await.unwrap();
        let st = store.sessions().state(&s).await.unwrap();
        assert_eq!(
            (st.task_state, st.execution_state, st.extracted_through),
            (None, None, 12)
        );
    }

    #[tokio::test]
    async fn folding_archives_history_and_the_first_new_messages() {
        let (store, _dir) = test_store().await;
        let s = store.sessions().open(&key(1)).await.unwrap();
        let old: Vec<Message> = (0..4).map(|i| Message::user(format!("old{i}"))).collect();
        store.history().append(&s, &old).await.unwrap();
        let ids: Vec<i64> = store
            .history()
            .live(&s, 10)
            .await
            .unwrap()
            .iter()
            .map(|(id, _)| *id)
            .collect();
        let new: Vec<Message> = (0..3).map(|i| Message::user(format!("new{i}"))).collect();
        store.history().append(&s, &new).await.unwrap();
        store
            .history()
            .fold(&s, Some(ids[3]), 3, 1, "the summary")
            .await
            .unwrap();
        let live: Vec<String> = store
            .history()
            .live(&s, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|(_, m)| m.content)
            .collect();
        assert_eq!(live, ["new1", "new2"]);
        assert_eq!(
            store.history().recent(&s, 10).await.unwrap().len(),
            2,
            "history() shows live messages only"
        );
        assert_eq!(
            store.sessions().state(&s).await.unwrap().summary.as_deref(),
            Some("the summary")
        );
        assert_eq!(
            store
                .history()
                .through(&s, i64::MAX, 40)
                .await
                .unwrap()
                .len(),
            7,
            "archived rows are kept"
        );
    }

    #[tokio::test]
    async fn idle_sessions_are_those_quiet_with_unextracted_messages() {
        let (store, _dir) = test_store().await;
        let a = store.sessions().open(&key(1)).await.unwrap();
        let b = store.sessions().open(&key(2)).await.unwrap();
        store
            .history()
            .append(&a, &[Message::user("hi")])
            .await
            .unwrap();
        store
            .history()
            .append(&b, &[Message::user("yo")])
            .await
            .unwrap();
        let later = Utc::now() + chrono::Duration::minutes(1);
        let idle = store.sessions().idle(later, later, 10).await.unwrap();
        assert_eq!(idle.len(), 2);
        let a_last = idle
            .iter()
            .find(|i| i.session == a)
            .map(|i| i.last_message)
            .unwrap();
        store
            .sessions()
            .set_extracted_through(&a, a_last)
            .await
            .unwrap();
        let idle = store.sessions().idle(later, later, 10).await.unwrap();
        assert_eq!(
            idle.iter().map(|i| i.key.user).collect::<Vec<_>>(),
            [UserId(2)]
        );
        assert!(store
            .sessions()
            .idle(Utc::now() - chrono::Duration::minutes(1), Utc::now(), 10)
            .await
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn one_claim_wins_until_its_lease_runs_out() {
        let (store, _dir) = test_store().await;
        let a = store.sessions().open(&key(1)).await.unwrap();
        store
            .history()
            .append(&a, &[Message::user("hi")])
            .await
            .unwrap();
        let t = Utc::now() + chrono::Duration::minutes(1);
        let lease = chrono::Duration::minutes(10);
        let idle = store.sessions().idle(t, t, 10).await.unwrap().remove(0);
        assert!(store
            .sessions()
            .claim_extraction(&idle, t, t + lease)
            .await
            .unwrap());
        assert!(
            !store
                .sessions()
                .claim_extraction(&idle, t, t + lease)
                .await
                .unwrap(),
            "the second claimant loses"
        );
        assert!(
            store.sessions().idle(t, t, 10).await.unwrap().is_empty(),
            "a claimed session is not listed while its lease holds"
        );
        // The claimant died: after the lease, another process may claim it.
        let later = t + lease;
        assert_eq!(
            store.sessions().idle(t, later, 10).await.unwrap(),
            std::slice::from_ref(&idle)
        );
        assert!(store
            .sessions()
            .claim_extraction(&idle, later, later + lease)
            .await
            .unwrap());
        // The first claimant finishing late moves the watermark but leaves the
        // new claimant's lease in place: a newer message cannot be claimed yet.
        store
            .sessions()
            .finish_extraction(&a, idle.last_message, t + lease)
            .await
            .unwrap();
        store
            .history()
            .append(&a, &[Message::user("more")])
            .await
            .unwrap();
        let (newest, _) = store.history().live(&a, 1).await.unwrap().remove(0);
        let newer = IdleSession {
            last_message: newest,
            ..idle.clone()
        };
        assert!(!store
            .sessions()
            .claim_extraction(&newer, later, later + lease)
            .await
            .unwrap());
        store
            .sessions()
            .finish_extraction(&a, idle.last_message, later + lease)
            .await
            .unwrap();
        assert_eq!(
            store.sessions().state(&a).await.unwrap().extracted_through,
            idle.last_message
        );
        let much_later = later + lease * 2;
        assert!(
            !store
                .sessions()
                .claim_extraction(&idle, much_later, much_later + lease)
                .await
                .unwrap(),
            "an extracted stretch is never claimed again"
        );
        assert!(store
            .sessions()
            .claim_extraction(&newer, later, later + lease)
            .await
            .unwrap());
    }
}
