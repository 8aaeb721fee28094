//! Queueing work into session workers: a message taken over from the inbox,
//! and the resumption of a paused turn in its requester's session.

use crate::domain::{ApprovalId, SessionKey};
use crate::gateway::session::input::Kept;
use crate::gateway::session::worker::SessionHandle;
use crate::gateway::Inner;
use std::sync::Arc;

/// The worker of `key`'s session, started on first use.
pub(in crate::gateway) fn session_worker(inner: &Arc<Inner>, key: SessionKey) -> SessionHandle {
    let mut sessions = inner
        .sessions
        .workers
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    sessions
        .entry(key)
        .or_insert_with(|| {
            SessionHandle::spawn(Arc::clone(inner), key, Arc::clone(&inner.sessions.runner))
        })
        .clone()
}

/// Queues a message taken over from the inbox of a process that is gone (or
/// of this process before a restart), once the taker-over found that its
/// turn, if one was cut short, may run again.
pub(crate) fn queue_from_inbox(inner: &Arc<Inner>, entry: crate::store::InboxEntry) {
    let msg = entry.message;
    let key = SessionKey::of(&msg.chat, msg.user.id);
    let guard = inner.life.busy.enter();
    session_worker(inner, key).enqueue_message(msg, Some(Kept::Inbox(entry.id)), guard);
}

/// Queues the resumption of the turn paused on the approval just `decided`,
/// in its requester's session in its chat (see
/// [`crate::store::ApprovalRecord::session_key`]), with the decision it
/// carries. Nothing happens when no paused turn is stored.
pub(crate) fn resume_in(inner: &Arc<Inner>, decided: &crate::store::ApprovalRecord) {
    if let Some(at) = decided.decided_at {
        inner.metrics.observe(
            crate::metrics::Latency::Approval,
            &[("decision", decided.status.as_str())],
            (at - decided.created_at).to_std().unwrap_or_default(),
        );
    }
    // An approval asked for over MCP pauses no turn: its client reads the decision.
    if crate::approvals::from_mcp(decided) {
        return;
    }
    let guard = inner.life.busy.enter();
    session_worker(inner, decided.session_key()).enqueue_resume(
        decided.id.clone(),
        Some(crate::approvals::decision_of(decided)),
        guard,
    );
}

/// Queues the resumption of the turn paused on the approval just sent back
/// with new `arguments` (its card's form), in its requester's session: the
/// call asks again with them, as after an edit typed as a message.
pub(crate) fn resume_edited(
    inner: &Arc<Inner>,
    edited: &crate::store::ApprovalRecord,
    arguments: &serde_json::Value,
) {
    if crate::approvals::from_mcp(edited) {
        return;
    }
    let guard = inner.life.busy.enter();
    session_worker(inner, edited.session_key()).enqueue_resume(
        edited.id.clone(),
        Some(crate::approvals::Decision::EditedTo(arguments.to_string())),
        guard,
    );
}

/// Queues the resumption of the turn paused on `approval_id` in its session,
/// behind whatever that session is doing: one turn at a time per session,
/// resumed turns included. Nothing happens when no paused turn is stored.
pub(crate) async fn queue_resume(inner: &Arc<Inner>, approval_id: ApprovalId) {
    match inner.store.turns().origin(&approval_id).await {
        Ok(Some(origin)) => {
            let guard = inner.life.busy.enter();
            session_worker(inner, origin.key).enqueue_resume(approval_id, None, guard);
        }
        Ok(None) => {}
        Err(e) => tracing::error!(error = %e, "could not look up a paused turn"),
    }
}
