//! Paused turns as rows, and sessions waiting for an `ask_user` answer.

use super::{SessionKey, Store, StoreError};
use crate::domain::{ApprovalId, Conversation, SessionId, TurnId};
use crate::llm::{Message, ToolCall};
use serde::{Deserialize, Serialize};
use sqlx::Row;

/// Paused turns (checkpoints waiting for a decision or an answer) and their resumes (`store.turns()`).
#[derive(Debug, Clone, Copy)]
pub struct PausedTurns<'a> {
    pub(super) db: &'a Store,
}

/// A turn paused on an approval.
#[derive(Debug, Clone)]
pub struct TurnState {
    pub id: TurnId,
    pub session_id: SessionId,
    pub approval_id: ApprovalId,
    pub origin: Conversation,
    /// The conversation so far, including this round's completed results.
    pub messages: Vec<Message>,
    /// Index of the turn's first message (its input) in `messages`.
    pub new_from: usize,
    /// The round's calls not run yet; the first one awaits the approval.
    pub remaining: Vec<ToolCall>,
    pub context: TurnContext,
}

/// What a paused turn carries besides its messages, so that resuming it (in
/// any process) continues the turn as it would have gone on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TurnContext {
    /// The round the turn paused in (0 when unknown: rows from before 0005).
    pub round: usize,
    /// The turn's additions to the system prompt.
    pub system_context: Option<String>,
    /// The input as history stores it (without recalled memories).
    pub plain_input: Option<String>,
    /// Row ids of the history the turn was given (`None`: summary messages).
    pub history_ids: Option<Vec<Option<i64>>>,
    /// How often the call it paused on was sent back for editing.
    pub edits: u32,
    /// The user's explicit yes to the agent's question this turn answers,
    /// quoted on the turn's approval cards (see `gateway::consent`).
    pub consent: Option<String>,
    /// The catalogue model a routing rule chose for the turn (it resumes
    /// on it); `None`: the session's.
    pub model: Option<String>,
    /// When the first of the turn's remaining calls is a delegation whose
    /// sub-agent paused: that sub-agent's own paused turn (the approval is
    /// for its first remaining call).
    pub nested: Option<NestedTurn>,
}

/// A sub-agent's turn paused inside a delegation (see
/// [`TurnContext::nested`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NestedTurn {
    pub messages: Vec<Message>,
    pub new_from: usize,
    pub remaining: Vec<ToolCall>,
    pub round: usize,
    pub system_context: Option<String>,
}

impl TurnState {
    /// The call whose approval the turn waits for: the sub-agent's when the
    /// pause is nested.
    pub fn awaiting(&self) -> Option<&ToolCall> {
        match &self.context.nested {
            Some(nested) => nested.remaining.first(),
            None => self.remaining.first(),
        }
    }
}

fn json<T: Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn parse<T: for<'de> Deserialize<'de>>(what: &str, s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

const TURN_COLUMNS: &str =
    "id, session_id, approval_id, origin, messages, new_from, remaining, context";

fn turn_from_row(r: &sqlx::any::AnyRow) -> Result<TurnState, StoreError> {
    let origin: String = r.try_get("origin")?;
    let messages: String = r.try_get("messages")?;
    let remaining: String = r.try_get("remaining")?;
    let context: Option<String> = r.try_get("context")?;
    Ok(TurnState {
        id: r.try_get("id")?,
        session_id: r.try_get("session_id")?,
        approval_id: r.try_get("approval_id")?,
        origin: parse("turn origin", &origin)?,
        messages: parse("turn messages", &messages)?,
        new_from: usize::try_from(r.try_get::<i64, _>("new_from")?).unwrap_or(0),
        remaining: parse("turn calls", &remaining)?,
        context: match context {
            Some(c) => parse("turn context", &c)?,
            None => TurnContext::default(),
        },
    })
}

impl PausedTurns<'_> {
    pub async fn save(self, t: &TurnState) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO turn_states (id, session_id, approval_id, origin, messages, new_from, remaining, context, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&t.id)
        .bind(&t.session_id)
        .bind(&t.approval_id)
        .bind(json(&t.origin)?)
        .bind(json(&t.messages)?)
        .bind(i64::try_from(t.new_from).unwrap_or(0))
        .bind(json(&t.remaining)?)
        .bind(json(&t.context)?)
        .bind(super::now())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Takes the paused turn waiting for `approval_id`: one atomic delete, so
    /// exactly one process (or one waiter) gets to resume it.
    pub async fn claim(self, approval_id: &ApprovalId) -> Result<Option<TurnState>, StoreError> {
        let row = sqlx::query(&format!(
            "DELETE FROM turn_states WHERE approval_id = $1 RETURNING {TURN_COLUMNS}"
        ))
        .bind(approval_id)
        .fetch_optional(&self.db.pool)
        .await?;
        row.as_ref().map(turn_from_row).transpose()
    }

    /// Takes the paused turn waiting for `approval_id` unless that approval was
    /// sent back for editing (then the requester's next message takes it):
    /// one atomic delete, like [`PausedTurns::claim`].
    pub async fn claim_decided(
        self,
        approval_id: &ApprovalId,
    ) -> Result<Option<TurnState>, StoreError> {
        let row = sqlx::query(&format!(
            "DELETE FROM turn_states WHERE approval_id = $1
               AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.id = $1 AND a.status = 'edited')
             RETURNING {TURN_COLUMNS}"
        ))
        .bind(approval_id)
        .fetch_optional(&self.db.pool)
        .await?;
        row.as_ref().map(turn_from_row).transpose()
    }

    /// Where the turn paused on `approval_id` belongs, without claiming it (to
    /// queue its resumption in the right session). One indexed read.
    pub async fn origin(
        self,
        approval_id: &ApprovalId,
    ) -> Result<Option<Conversation>, StoreError> {
        let row = sqlx::query("SELECT origin FROM turn_states WHERE approval_id = $1")
            .bind(approval_id)
            .fetch_optional(&self.db.pool)
            .await?;
        let Some(r) = row else { return Ok(None) };
        let origin: String = r.try_get("origin")?;
        Ok(Some(parse("turn origin", &origin)?))
    }

    /// The approval of `session` sent back for editing whose paused turn waits
    /// for the requester's next message (the new arguments).
    pub async fn awaited_edit(
        self,
        session_id: &SessionId,
    ) -> Result<Option<ApprovalId>, StoreError> {
        let row = sqlx::query(
            "SELECT t.approval_id FROM turn_states t JOIN approvals a ON a.id = t.approval_id
             WHERE t.session_id = $1 AND a.status = 'edited' LIMIT 1",
        )
        .bind(session_id)
        .fetch_optional(&self.db.pool)
        .await?;
        row.map(|r| r.try_get("approval_id"))
            .transpose()
            .map_err(Into::into)
    }

    /// Expires the edits nobody sent (approvals sent back for editing before
    /// `cutoff` whose turn still waits), returning their ids: their turns
    /// resume with the expiry. The conditional update makes one process the
    /// expirer.
    pub async fn expire_stale_edits(self, cutoff: i64) -> Result<Vec<ApprovalId>, StoreError> {
        let rows = sqlx::query(
            "UPDATE approvals SET status = 'expired'
             WHERE status = 'edited' AND decided_at <= $1
               AND id IN (SELECT approval_id FROM turn_states)
             RETURNING id",
        )
        .bind(cutoff)
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(|r| Ok(r.try_get("id")?)).collect()
    }

    /// Approvals already decided (or expired) whose paused turn nobody claimed —
    /// the process that should have resumed it died in between. An edit waits
    /// for the requester's message instead.
    pub async fn orphaned(self) -> Result<Vec<ApprovalId>, StoreError> {
        let rows = sqlx::query(
            "SELECT t.approval_id FROM turn_states t JOIN approvals a ON a.id = t.approval_id
             WHERE a.status NOT IN ('pending', 'edited')",
        )
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(|r| Ok(r.try_get("approval_id")?)).collect()
    }

    /// Marks the session as waiting for the answer to `question` (or clears it).
    pub async fn set_waiting_question(
        self,
        key: &SessionKey,
        question: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE sessions SET waiting_question = $1
             WHERE platform = $2 AND chat_id = $3 AND thread_id = $4 AND user_id = $5",
        )
        .bind(question)
        .bind(key.platform.as_str())
        .bind(key.chat.0)
        .bind(key.thread.map_or(0, |t| t.0))
        .bind(key.user.0)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Takes the question the session waits on, clearing it (one answer per
    /// question: the conditional update lets only one taker win).
    pub async fn take_waiting_question(
        self,
        key: &SessionKey,
    ) -> Result<Option<String>, StoreError> {
        let row = sqlx::query(
            "SELECT id, waiting_question FROM sessions
             WHERE platform = $1 AND chat_id = $2 AND thread_id = $3 AND user_id = $4 AND waiting_question IS NOT NULL",
        )
        .bind(key.platform.as_str())
        .bind(key.chat.0)
        .bind(key.thread.map_or(0, |t| t.0))
        .bind(key.user.0)
        .fetch_optional(&self.db.pool)
        .await?;
        let Some(r) = row else { return Ok(None) };
        let (id, question): (String, String) = (r.try_get("id")?, r.try_get("waiting_question")?);
        let done = sqlx::query(
            "UPDATE sessions SET waiting_question = NULL WHERE id = $1 AND waiting_question = $2",
        )
        .bind(&id)
        .bind(&question)
        .execute(&self.db.pool)
        .await?;
        Ok((done.rows_affected() == 1).then_some(question))
    }

    /// Whether the session waits for the user: the answer to a question, or
    /// the edit of an approval (without taking it).
    pub async fn is_waiting(self, key: &SessionKey) -> Result<bool, StoreError> {
        let row = sqlx::query(
            "SELECT 1 FROM sessions s WHERE platform = $1 AND chat_id = $2 AND thread_id = $3 AND user_id = $4
             AND (waiting_question IS NOT NULL OR EXISTS (
                 SELECT 1 FROM turn_states t JOIN approvals a ON a.id = t.approval_id
                 WHERE t.session_id = s.id AND a.status = 'edited'))",
        )
        .bind(key.platform.as_str())
        .bind(key.chat.0)
        .bind(key.thread.map_or(0, |t| t.0))
        .bind(key.user.0)
        .fetch_optional(&self.db.pool)
        .await?;
        Ok(row.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_store;
    use switchboard_platform::{ChatAddress, ChatId, ChatKind, MessageId, Platform, User, UserId};

    fn origin() -> Conversation {
        Conversation {
            key: SessionKey {
                platform: Platform::Console,
                chat: ChatId(1),
                thread: None,
                user: UserId(1),
            },
            chat: ChatAddress::new(Platform::Console, ChatId(1), None),
            kind: ChatKind::Dm,
            user: User {
                id: UserId(1),
                display_name: "Ann".into(),
                is_bot: false,
                is_approver: false,
            },
            reply_to: Some(MessageId(3)),
        }
    }

    #[tokio::test]
    async fn a_paused_turn_is_claimed_exactly_once() {
        let (store, _dir) = test_store().await;
        let state = TurnState {
            id: "t1".parse().unwrap(),
            session_id: "s1".parse().unwrap(),
            approval_id: "a1".parse().unwrap(),
            origin: origin(),
            messages: vec![Message::user("run ls")],
            new_from: 0,
            remaining: vec![ToolCall {
                id: "c1".into(),
                name: "exec_command".into(),
                arguments: "{}".into(),
            }],
            context: TurnContext {
                round: 3,
                system_context: Some("rules".into()),
                plain_input: Some("hi".into()),
                history_ids: Some(vec![Some(1), None]),
                edits: 0,
                consent: None,
                model: Some("mini".into()),
                nested: Some(NestedTurn {
                    messages: vec![Message::user("list the files")],
                    new_from: 0,
                    remaining: vec![ToolCall {
                        id: "s1".into(),
                        name: "exec_command".into(),
                        arguments: r#"{"command":"ls"}"#.into(),
                    }],
                    round: 1,
                    system_context: None,
                }),
            },
        };
        store.turns().save(&state).await.unwrap();
        let id: ApprovalId = "a1".parse().unwrap();
        let (a, b) = tokio::join!(store.turns().claim(&id), store.turns().claim(&id));
        let claimed: Vec<_> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].remaining[0].id, "c1");
        assert_eq!(claimed[0].origin.reply_to, Some(MessageId(3)));
        assert_eq!(claimed[0].context, state.context, "the context round-trips");
        assert_eq!(
            claimed[0].awaiting().unwrap().id,
            "s1",
            "a nested pause awaits the sub-agent's call"
        );
    }

    #[tokio::test]
    async fn a_waiting_question_is_taken_once() {
        let (store, _dir) = test_store().await;
        let key = origin().key;
        store.sessions().open(&key).await.unwrap();
        store
            .turns()
            .set_waiting_question(&key, Some("Which branch?"))
            .await
            .unwrap();
        assert!(store.turns().is_waiting(&key).await.unwrap());
        assert_eq!(
            store
                .turns()
                .take_waiting_question(&key)
                .await
                .unwrap()
                .as_deref(),
            Some("Which branch?")
        );
        assert_eq!(
            store.turns().take_waiting_question(&key).await.unwrap(),
            None
        );
    }
}
