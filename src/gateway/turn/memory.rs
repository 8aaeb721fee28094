//! The gateway's side of memory: history with its compaction summary, recall
//! and per-turn context before a turn; compaction, execution state and
//! feedback after it; the memory flush before compaction; 👍/👎 presses; and
//! the sweeper that extracts idle sessions and collects old memories.

use crate::agent::{summary_messages, StopReason, TurnOutcome};
use crate::gateway::Inner;
use crate::llm::{Message, Role};
use crate::memory::{
    distill_rules, feedback_buttons, learnable, new_feedback_id, parse_feedback, recall_visible,
    record_access, reflection_section, rules_section, system_context, wrap, ExecutionState,
    LearnMode, TaskState, MAX_RULES, MEMORY_NOTE,
};
use crate::store::{MemoryKind, MemoryOwner, SessionId, SessionKey, SessionState, StateDoc};
use chrono::Utc;
use std::sync::Arc;
use switchboard_platform::{Button, ButtonPress, PlatformAdapter, PressAnswer};

/// What a turn needs to persist memory-related results.
#[derive(Debug, Default)]
pub(crate) struct TurnMemory {
    /// The input as it is persisted (without the recalled memories).
    pub plain_input: Option<String>,
    /// Row ids of the history given to the turn (`None`: the summary messages),
    /// when the history came from [`load_history`].
    pub history_ids: Option<Vec<Option<i64>>>,
    /// The session's stored state as the turn began (read once per turn);
    /// `None` for a resumed turn, which reads it when it ends.
    pub state: Option<SessionState>,
}

/// The session's stored state, or the empty state when it cannot be read
/// (the turn goes on without summary, task state and execution state).
pub(crate) async fn session_state(inner: &Inner, session: &SessionId) -> SessionState {
    inner
        .store
        .sessions()
        .state(session)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "session state unavailable");
            SessionState::default()
        })
}

/// A turn's history: the stored `summary` (if any), then the live messages,
/// starting at a user message; with the row id of each.
pub(crate) async fn load_history(
    inner: &Inner,
    session: &SessionId,
    summary: Option<&str>,
    limit: u32,
) -> (Vec<Message>, Vec<Option<i64>>) {
    let mut rows = inner
        .store
        .history()
        .live(session, limit)
        .await
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "history unavailable; answering without it");
            Vec::new()
        });
    let start = rows
        .iter()
        .position(|(_, m)| m.role == Role::User)
        .unwrap_or(rows.len());
    rows.drain(..start);
    let mut messages = Vec::with_capacity(rows.len() + 2);
    let mut ids = Vec::with_capacity(rows.len() + 2);
    if let Some(summary) = summary.filter(|s| !s.trim().is_empty()) {
        messages.extend(summary_messages(summary));
        ids.extend([None, None]);
    }
    for (id, m) in rows {
        messages.push(m);
        ids.push(Some(id));
    }
    (messages, ids)
}

/// Learns the user's preferences from their `text` in the background (see
/// `memory::learning`); the session's earlier user messages in `history` give
/// the model call its context.
pub(crate) fn learn_after_message(
    inner: &Inner,
    key: &SessionKey,
    session: &SessionId,
    history: &[Message],
    text: &str,
) {
    let config = inner.features.extractor.book().config();
    if !config.enabled || config.learn == LearnMode::Off || !learnable(text) {
        return;
    }
    let take = usize::try_from(config.learn_every).unwrap_or(usize::MAX);
    let mut earlier: Vec<String> = history
        .iter()
        .filter(|m| m.role == Role::User && !m.content.starts_with('['))
        .rev()
        .take(take)
        .map(|m| m.content.clone())
        .collect();
    earlier.reverse();
    let (extractor, busy) = (inner.features.extractor.clone(), inner.life.busy.clone());
    let (owner, source, text) = (
        MemoryOwner::of(key),
        format!("learn:{session}"),
        text.to_owned(),
    );
    tokio::spawn(async move {
        let _busy = busy.enter();
        match extractor
            .learn(owner, &source, &earlier, &text, Utc::now())
            .await
        {
            Ok(report) => {
                tracing::debug!(by = ?report.by, saved = report.saved.len(), "preferences learned")
            }
            Err(e) => tracing::warn!(error = %e, "preference learning failed"),
        }
    });
}

/// The text the model sees for `model_text` (recalled memories around it when
/// `query` recalls any) and the per-turn system context. In a shared chat
/// (`private` false) only the kinds `MEMORY_IN_SHARED_CHATS` allows are recalled.
pub(crate) async fn prepare(
    inner: &Inner,
    key: &SessionKey,
    private: bool,
    state: &SessionState,
    model_text: &str,
    query: Option<&str>,
) -> (String, Option<String>) {
    let config = inner.features.extractor.book().config();
    if !config.enabled {
        return (model_text.to_owned(), None);
    }
    let owner = MemoryOwner::of(key);
    let now = Utc::now();
    let hits = match query {
        Some(q) => {
            let visible = |kind| config.shared_chats.shows(private, kind);
            recall_visible(&inner.store, owner, q, config.recall_tokens, now, &visible)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "recall failed; answering without memories");
                    Vec::new()
                })
        }
        None => Vec::new(),
    };
    if !hits.is_empty() {
        let (store, used) = (inner.store.clone(), hits.clone());
        tokio::spawn(async move {
            if let Err(e) = record_access(&store, owner, &used, now).await {
                tracing::debug!(error = %e, "could not record memory access");
            }
        });
    }
    let task = state
        .task_state
        .as_deref()
        .and_then(|j| serde_json::from_str::<TaskState>(j).ok())
        .and_then(|t| t.render());
    let exec = state
        .execution_state
        .as_deref()
        .and_then(|j| serde_json::from_str::<ExecutionState>(j).ok())
        .and_then(|e| e.render());
    let rules = inner
        .store
        .memories()
        .correction_rules(owner, now, MAX_RULES as u32)
        .await
        .unwrap_or_default();
    let note = (!hits.is_empty()).then(|| MEMORY_NOTE.to_owned());
    // The latest reflection note: private, so in direct messages only.
    let reflection = if private {
        inner
            .store
            .memories()
            .of(owner, &[MemoryKind::Reflection], 1, now)
            .await
            .unwrap_or_default()
            .first()
            .map(reflection_section)
    } else {
        None
    };
    (
        wrap(model_text, &hits),
        system_context(&[note, task, exec, reflection, rules_section(&rules)]),
    )
}

/// Puts the plain input back in place of the wrapped one, so history never
/// stores recalled memories (they are recomputed per message and would go stale).
pub(crate) fn restore_input(outcome: &mut TurnOutcome, memory: &TurnMemory) {
    if let (Some(plain), Some(first)) = (&memory.plain_input, outcome.new_messages.first_mut()) {
        if first.role == Role::User {
            first.content = plain.clone();
        }
    }
}

/// After the exchange is saved: archive what compaction folded, keep the
/// summary and task state, and move the execution state on.
pub(crate) async fn after_turn(
    inner: &Inner,
    session: &SessionId,
    memory: &TurnMemory,
    outcome: &TurnOutcome,
) {
    let store = &inner.store;
    if let (Some(c), Some(ids)) = (&outcome.compaction, &memory.history_ids) {
        let through = ids[..c.folded.min(ids.len())]
            .iter()
            .flatten()
            .max()
            .copied();
        let folded_new = c.folded.saturating_sub(ids.len());
        if let Err(e) = store
            .history()
            .fold(
                session,
                through,
                outcome.new_messages.len(),
                folded_new,
                &c.summary,
            )
            .await
        {
            tracing::warn!(error = %e, "could not persist a compaction");
        }
        if let Some(task) = c.task_state.as_ref().and_then(TaskState::from_value) {
            save_doc(inner, session, StateDoc::Task, &task).await;
        }
    }
    if !inner.features.extractor.book().config().enabled || outcome.stop == StopReason::Paused {
        return;
    }
    let previous_json = match &memory.state {
        Some(state) => state.execution_state.clone(),
        None => session_state(inner, session).await.execution_state,
    };
    let previous = previous_json.and_then(|j| serde_json::from_str::<ExecutionState>(&j).ok());
    let input = memory
        .plain_input
        .clone()
        .or_else(|| outcome.new_messages.first().map(|m| m.content.clone()))
        .unwrap_or_default();
    let next = ExecutionState::after_turn(
        previous.as_ref(),
        &input,
        &outcome.new_messages,
        &outcome.stop,
        &outcome.text,
    );
    save_doc(inner, session, StateDoc::Execution, &next).await;
}

async fn save_doc<T: serde::Serialize>(
    inner: &Inner,
    session: &SessionId,
    doc: StateDoc,
    value: &T,
) {
    let saved = match serde_json::to_string(value) {
        Ok(json) => inner
            .store
            .sessions()
            .set_doc(session, doc, Some(&json))
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = saved {
        tracing::warn!(error = %e, "could not save session state");
    }
}

/// 👍/👎 for a final answer (none for questions, errors, or where buttons can't show).
pub(crate) async fn answer_buttons(
    inner: &Inner,
    key: &SessionKey,
    session: &SessionId,
    adapter: &dyn PlatformAdapter,
    question: &str,
    outcome: &TurnOutcome,
) -> Vec<Vec<Button>> {
    let config = inner.features.extractor.book().config();
    let shown = config.feedback_buttons && adapter.capabilities().answer_buttons;
    if !shown || outcome.stop != StopReason::Answered || outcome.text.trim().is_empty() {
        return Vec::new();
    }
    let id = new_feedback_id();
    let question: String = question.chars().take(500).collect();
    let answer: String = outcome.text.chars().take(1_500).collect();
    match inner
        .store
        .memories()
        .create_feedback(
            &id,
            session,
            MemoryOwner::of(key),
            &question,
            &answer,
            Utc::now(),
        )
        .await
    {
        Ok(()) => feedback_buttons(&id),
        Err(e) => {
            tracing::warn!(error = %e, "could not record a rateable answer");
            Vec::new()
        }
    }
}

/// A 👍/👎 press: only the asker rates; a 👎 given or taken back re-distills
/// their correction rules.
pub(crate) async fn on_feedback_press(
    inner: &Arc<Inner>,
    adapter: &dyn PlatformAdapter,
    press: &ButtonPress,
) {
    let Some((id, rating)) = parse_feedback(&press.action) else {
        return;
    };
    let owner = MemoryOwner::new(press.chat.platform, press.user.id);
    let text = match inner
        .store
        .memories()
        .rate_feedback(&id, owner, rating, Utc::now())
        .await
    {
        Ok(Some(rated)) => {
            if rated.changes_rules() {
                redistill(inner, owner);
            }
            if rating < 0 {
                "Thanks — I'll take this into account in my next answers to you."
            } else {
                "Thanks for the feedback! 👍"
            }
        }
        Ok(None)
            if inner
                .store
                .memories()
                .feedback_exists(&id)
                .await
                .unwrap_or(false) =>
        {
            "Only the person who asked can rate this answer."
        }
        Ok(None) => "This button is no longer valid.",
        Err(e) => {
            tracing::warn!(error = %e, "could not record feedback");
            "⚠️ I couldn't record that right now."
        }
    };
    if let Err(e) = adapter
        .answer_press(press, PressAnswer::Private(text.into()))
        .await
    {
        tracing::warn!(error = %e, "could not answer a press");
    }
}

/// Distills the owner's correction rules again, off the press's path (a
/// model call when 👎 remain; none left clears the rules at once).
pub(crate) fn redistill(inner: &Arc<Inner>, owner: MemoryOwner) {
    let (inner, guard) = (Arc::clone(inner), inner.life.busy.enter());
    tokio::spawn(async move {
        let _guard = guard;
        let provider = Arc::clone(inner.features.extractor.provider());
        if let Err(e) = distill_rules(&inner.store, provider.as_ref(), owner, Utc::now()).await {
            tracing::warn!(error = %e, "could not distill correction rules");
        }
    });
}

/// The memory flush before compaction: what the head holds that is worth
/// keeping is extracted before it is summarized away.
pub(crate) async fn flush(inner: &Inner, key: &SessionKey, session: &SessionId, head: &[Message]) {
    if !inner.features.extractor.book().config().enabled {
        return;
    }
    let source = format!("chat:{session}");
    if let Err(e) = inner
        .features
        .extractor
        .extract(MemoryOwner::of(key), &source, head, Utc::now())
        .await
    {
        tracing::warn!(error = %e, "memory flush before compaction failed");
    }
}
