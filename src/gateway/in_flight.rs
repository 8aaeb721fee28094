//! The turn a session runs now, for what a process that dies mid-turn
//! leaves behind: the inbox rows of the messages it answers stay (marked
//! started) until it ends, with the tools with side effects it has run. The
//! process that takes them over re-runs the turn when nothing with side
//! effects ran, and otherwise tells the chat instead of doing it twice. A
//! turn resumed after its card was decided has no inbox row: it is marked
//! while it runs, and a mark its gone process left is reported to its chat
//! (the call it paused on may have run; it is not run again).

use super::Inner;
use crate::domain::{ApprovalId, SessionKey};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Tools that change nothing outside the turn although not marked
/// concurrency-safe: they never make a re-run unsafe.
const TURN_LOCAL: &[&str] = &["ask_user", "plan"];

/// A running turn's rows and what it ran.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    rows: Vec<i64>,
    ran: Vec<String>,
    /// The turn's outcome reached the chat (an answer, or a paused turn's
    /// card): its rows are done even if the gateway stops now.
    settled: bool,
}

impl Inner {
    /// `key`'s turn starts, answering the messages of inbox `rows`.
    pub(super) fn turn_started(&self, key: SessionKey, rows: Vec<i64>) {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(
            key,
            InFlight {
                rows,
                ..InFlight::default()
            },
        );
    }

    /// A tool of `key`'s turn starts: one with side effects is recorded on
    /// the turn's rows (once per tool name).
    pub(super) async fn tool_started(&self, key: &SessionKey, name: &str) {
        if TURN_LOCAL.contains(&name)
            || self
                .agent
                .tools()
                .get(name)
                .is_some_and(|t| t.spec().concurrency_safe)
        {
            return;
        }
        let (rows, ran) = {
            let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
            let Some(f) = map.get_mut(key).filter(|f| !f.rows.is_empty()) else {
                return;
            };
            if f.ran.iter().any(|r| r == name) {
                return;
            }
            f.ran.push(name.to_owned());
            (f.rows.clone(), f.ran.join(", "))
        };
        if let Err(e) = self.store.inbox_ran(&rows, &ran).await {
            tracing::warn!(error = %e, "could not record a tool run on the turn's inbox rows");
        }
    }

    /// `key`'s turn is settled: its answer, or its card, is in the chat.
    pub(super) fn turn_settled(&self, key: &SessionKey) {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = map.get_mut(key) {
            f.settled = true;
        }
    }

    /// `key`'s turn ended: its rows are done — unless the gateway is
    /// stopping and the turn was cut short before it settled, when they stay
    /// for the next process.
    pub(super) async fn turn_ended(&self, key: &SessionKey) {
        let done = {
            let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
            map.remove(key)
        };
        let Some(done) = done else { return };
        if self.shutdown.is_cancelled() && !done.settled {
            return;
        }
        for id in done.rows {
            self.inbox_held.fetch_sub(1, Ordering::Relaxed);
            if let Err(e) = self.store.inbox_remove(id).await {
                tracing::warn!(error = %e, id, "could not remove an answered message from the inbox");
            }
        }
    }
}

impl Inner {
    /// The turn paused on `approval_id` resumes now, with the call `tool`
    /// (`allowed` or not).
    pub(super) async fn resume_started(
        &self,
        approval_id: &ApprovalId,
        conversation: &crate::domain::Conversation,
        tool: &str,
        allowed: bool,
    ) {
        self.resumes_held.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = self
            .store
            .resume_started(&self.instance, approval_id, conversation, tool, allowed)
            .await
        {
            tracing::warn!(error = %e, "could not mark a resumed turn as running");
        }
    }

    /// The resumed turn ended — unless the gateway is stopping and it was
    /// cut short before it `settled`: then its mark stays for the next
    /// process to report.
    pub(super) async fn resume_ended(&self, approval_id: &ApprovalId, settled: bool) {
        if self.shutdown.is_cancelled() && !settled {
            return;
        }
        self.resumes_held.fetch_sub(1, Ordering::Relaxed);
        if let Err(e) = self.store.resume_ended(approval_id).await {
            tracing::warn!(error = %e, "could not unmark a resumed turn");
        }
    }
}

/// Renews this process's resumed-turn marks, and tells the chats of those a
/// gone process left that their answer was interrupted.
pub(super) async fn keep_resumes(inner: &Arc<Inner>) {
    if inner.resumes_held.load(Ordering::Relaxed) > 0 {
        if let Err(e) = inner.store.resumes_renew(&inner.instance, false).await {
            tracing::warn!(error = %e, "could not renew the resumed turns' lease");
        }
    }
    let left = match inner.store.take_interrupted_resumes().await {
        Ok(left) => left,
        Err(e) => return tracing::warn!(error = %e, "could not look for interrupted resumed turns"),
    };
    for r in left {
        let chat = r.conversation.chat;
        inner
            .store
            .record_event(
                "turn.interrupted",
                serde_json::json!({ "chat": chat.chat.0, "user": r.conversation.user.id.0, "approval": r.approval_id, "ran": [&r.tool], "allowed": r.allowed }),
            )
            .await;
        let text = if r.allowed {
            format!(
                "⚠️ My answer was interrupted: the gateway stopped while it continued after `{}` was allowed, so it may have run. I did not run it again — ask again if you still need it.",
                r.tool
            )
        } else {
            "⚠️ My answer was interrupted: the gateway stopped while it continued after your decision on the card. Ask again if you still need it."
                .to_owned()
        };
        if let Some(adapter) = inner.adapter(chat.platform) {
            super::turn::notify(adapter.as_ref(), &chat, &text, r.conversation.reply_to).await;
        }
    }
}

/// A message taken over from a process that died while its turn ran: run
/// again when nothing with side effects had run; otherwise the chat is told
/// what had run and the message is dropped (true).
pub(super) async fn interrupted(inner: &Arc<Inner>, entry: &crate::store::InboxEntry) -> bool {
    let Some(ran) = entry.interrupted.as_ref() else {
        return false;
    };
    let msg = &entry.message;
    if ran.is_empty() {
        tracing::info!(
            id = entry.id,
            "re-running a turn cut short by a stopped process (nothing with side effects had run)"
        );
        return false;
    }
    inner
        .store
        .record_event(
            "turn.interrupted",
            serde_json::json!({ "chat": msg.chat.chat.0, "user": msg.user.id.0, "ran": ran }),
        )
        .await;
    if let Some(adapter) = inner.adapter(msg.chat.platform) {
        let text = format!(
            "⚠️ My answer to this message was interrupted: the gateway stopped while it ran, after it \
             had started {}. I did not start it again, so nothing runs twice — send it again if you \
             still want it.",
            ran.iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        super::turn::notify(adapter.as_ref(), &msg.chat, &text, Some(msg.message_id)).await;
    }
    if let Err(e) = inner.store.inbox_remove(entry.id).await {
        tracing::warn!(error = %e, "could not remove an interrupted message from the inbox");
    }
    true
}
