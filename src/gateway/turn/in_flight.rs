//! The turn a session runs now, for what a process that dies mid-turn
//! leaves behind: the inbox rows of the messages it answers stay (marked
//! started, with the tools with side effects it has run, and when its
//! answer began to reach the chat) until the answer is out. The process
//! that takes them over re-runs the turn when nothing with side effects ran
//! and nothing was shown yet; otherwise it tells the chat instead of doing
//! it twice, and a message whose turn took the process down twice is set
//! aside. A turn resumed after its card was decided has no inbox row: it is
//! marked while it runs, and a mark its gone process left is reported to
//! its chat (the call it paused on may have run; it is not run again).

use crate::domain::{ApprovalId, SessionKey};
use crate::gateway::session::sessions::InFlight;
use crate::gateway::Inner;
use std::sync::Arc;

/// Tools that change nothing outside the turn although not marked
/// concurrency-safe: they never make a re-run unsafe.
const TURN_LOCAL: &[&str] = &["ask_user", "plan"];

/// How many times a message's turn may start and take the process down
/// with it before the message is set aside (one, for a message with files:
/// parsing what users send is the likeliest culprit).
const MAX_ATTEMPTS: i64 = 2;
const MAX_ATTEMPTS_WITH_FILES: i64 = 1;

impl Inner {
    /// `key`'s turn starts, answering the messages of inbox `rows`.
    pub(in crate::gateway) fn turn_started(&self, key: SessionKey, rows: Vec<i64>) {
        crate::failpoint::hit("turn_started");
        let mut map = self
            .sessions
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.insert(
            key,
            InFlight {
                rows,
                ..InFlight::default()
            },
        );
    }

    /// A tool of `key`'s turn starts: one with side effects is recorded on
    /// the turn's rows (once per tool name) before it runs.
    pub(in crate::gateway) async fn tool_started(&self, key: &SessionKey, name: &str) {
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
            let mut map = self
                .sessions
                .in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let Some(f) = map.get_mut(key).filter(|f| !f.rows.is_empty()) else {
                return;
            };
            if f.ran.iter().any(|r| r == name) {
                return;
            }
            f.ran.push(name.to_owned());
            (f.rows.clone(), f.ran.join(", "))
        };
        if let Err(e) = self.store.inbox().ran(&rows, &ran).await {
            tracing::warn!(error = %e, "could not record a tool run on the turn's inbox rows");
        }
        crate::failpoint::hit("tool_started");
    }

    /// `key`'s answer begins to reach the chat (its first visible text, or
    /// the final answer): from now on a crash does not re-run the turn.
    pub(in crate::gateway) async fn answer_visible(&self, key: &SessionKey) {
        let rows = {
            let mut map = self
                .sessions
                .in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            match map.get_mut(key) {
                Some(f) if !f.answering && !f.rows.is_empty() => {
                    f.answering = true;
                    f.rows.clone()
                }
                _ => return,
            }
        };
        if let Err(e) = self.store.inbox().answering(&rows).await {
            tracing::warn!(error = %e, "could not record that an answer is being sent");
        }
    }

    /// `key`'s turn is settled — its answer, or its card, is in the chat:
    /// its rows are done, even if the gateway stops now.
    pub(in crate::gateway) async fn turn_settled(&self, key: &SessionKey) {
        crate::failpoint::hit("answer_sent");
        let rows = {
            let mut map = self
                .sessions
                .in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            map.get_mut(key).map(|f| std::mem::take(&mut f.rows))
        };
        self.remove_rows(rows.unwrap_or_default()).await;
        crate::failpoint::hit("answer_recorded");
    }

    /// `key`'s turn ended. Rows it did not settle are done too — unless the
    /// gateway is stopping and cut the turn short: they stay for the next
    /// process, and this start does not count against them.
    pub(in crate::gateway) async fn turn_ended(&self, key: &SessionKey) {
        let done = {
            let mut map = self
                .sessions
                .in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            map.remove(key)
        };
        let Some(done) = done else { return };
        if self.life.shutdown.is_cancelled() {
            if let Err(e) = self.store.inbox().unstart(&done.rows).await {
                tracing::warn!(error = %e, "could not release the rows of a turn cut short by the stop");
            }
            return;
        }
        self.remove_rows(done.rows).await;
    }

    async fn remove_rows(&self, rows: Vec<i64>) {
        for id in rows {
            if let Err(e) = self.store.inbox().remove(id).await {
                tracing::warn!(error = %e, id, "could not remove an answered message from the inbox");
            }
        }
    }
}

impl Inner {
    /// The turn paused on `approval_id` resumes now, with the call `tool`
    /// (`allowed` or not).
    pub(in crate::gateway) async fn resume_started(
        &self,
        approval_id: &ApprovalId,
        conversation: &crate::domain::Conversation,
        tool: &str,
        allowed: bool,
    ) {
        if let Err(e) = self
            .store
            .turns()
            .resume_started(
                &self.durability.instance,
                approval_id,
                conversation,
                tool,
                allowed,
            )
            .await
        {
            tracing::warn!(error = %e, "could not mark a resumed turn as running");
        }
    }

    /// The resumed turn ended — unless the gateway is stopping and it was
    /// cut short before it `settled`: then its mark stays for the next
    /// process to report.
    pub(in crate::gateway) async fn resume_ended(&self, approval_id: &ApprovalId, settled: bool) {
        if self.life.shutdown.is_cancelled() && !settled {
            return;
        }
        if let Err(e) = self.store.turns().resume_ended(approval_id).await {
            tracing::warn!(error = %e, "could not unmark a resumed turn");
        }
    }
}

/// Tells the chats of the turns `gone` (a process that is gone) was
/// running after a card's decision that their answer was interrupted.
pub(in crate::gateway) async fn report_interrupted_resumes(
    inner: &Arc<Inner>,
    gone: &crate::domain::ProcessId,
) {
    let left = match inner.store.turns().take_interrupted_resumes(gone).await {
        Ok(left) => left,
        Err(e) => return tracing::warn!(error = %e, "could not look for interrupted resumed turns"),
    };
    for r in left {
        let chat = r.conversation.chat;
        inner
            .store
            .audit().record(
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
            crate::gateway::delivery::outbound::notify(
                adapter.as_ref(),
                &chat,
                &text,
                r.conversation.reply_to,
            )
            .await;
        }
    }
}

/// Why a message taken over from a process that died while its turn ran
/// is not run again.
#[derive(Debug, PartialEq, Eq)]
enum SetAside {
    /// Its answer had begun to reach the chat.
    Answered,
    /// Tools with side effects had run.
    Ran(Vec<String>),
    /// Its turn took the process down this many times.
    Poisoned(i64),
}

fn set_aside(entry: &crate::store::InboxEntry) -> Option<SetAside> {
    let ran = entry.interrupted.as_ref()?;
    if entry.answered {
        return Some(SetAside::Answered);
    }
    if !ran.is_empty() {
        return Some(SetAside::Ran(ran.clone()));
    }
    let max = if entry.message.attachments.is_empty() {
        MAX_ATTEMPTS
    } else {
        MAX_ATTEMPTS_WITH_FILES
    };
    (entry.attempts >= max).then_some(SetAside::Poisoned(entry.attempts))
}

/// A message taken over from a process that died while its turn ran: run
/// again when nothing with side effects had run, nothing had been shown
/// and it has not taken the process down too often; otherwise the chat is
/// told why and the message is dropped (true).
pub(in crate::gateway) async fn interrupted(
    inner: &Arc<Inner>,
    entry: &crate::store::InboxEntry,
) -> bool {
    let msg = &entry.message;
    let Some(why) = set_aside(entry) else {
        if entry.interrupted.is_some() {
            tracing::info!(
                id = entry.id,
                attempts = entry.attempts,
                "re-running a turn cut short by a stopped process (nothing with side effects had run)"
            );
        }
        return false;
    };
    let (event, detail, text) = match &why {
        SetAside::Answered => (
            "turn.interrupted",
            serde_json::json!({ "answered": true, "ran": entry.interrupted }),
            format!(
                "⚠️ A restart interrupted my answer to this message{}. I did not start it over, \
                 so nothing runs or is sent twice — if it looks incomplete, send it again.",
                ran_clause(entry.interrupted.as_deref().unwrap_or_default())
            ),
        ),
        SetAside::Ran(ran) => (
            "turn.interrupted",
            serde_json::json!({ "ran": ran }),
            format!(
                "⚠️ My answer to this message was interrupted: the gateway stopped while it ran, after it \
                 had started {}. I did not start it again, so nothing runs twice — send it again if you \
                 still want it.",
                ran.iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        SetAside::Poisoned(attempts) => (
            "inbox.poisoned",
            serde_json::json!({ "attempts": attempts, "files": msg.attachments.len() }),
            "⚠️ I couldn't handle this message: the gateway stopped while working on it, so I've \
             set it aside rather than try again. Send it in another form (or without its file), \
             or ask the operator to look at the log."
                .to_owned(),
        ),
    };
    let mut audit = serde_json::json!({ "chat": msg.chat.chat.0, "user": msg.user.id.0, "message": msg.message_id.0 });
    if let (Some(audit), Some(detail)) = (audit.as_object_mut(), detail.as_object()) {
        audit.extend(detail.clone());
    }
    inner.store.audit().record(event, audit).await;
    if matches!(why, SetAside::Poisoned(_)) {
        tracing::error!(
            id = entry.id,
            "set aside a message whose turn stopped the gateway"
        );
    }
    if let Some(adapter) = inner.adapter(msg.chat.platform) {
        crate::gateway::delivery::outbound::notify(
            adapter.as_ref(),
            &msg.chat,
            &text,
            Some(msg.message_id),
        )
        .await;
    }
    if let Err(e) = inner.store.inbox().remove(entry.id).await {
        tracing::warn!(error = %e, "could not remove an interrupted message from the inbox");
    }
    true
}

/// ", after it had run `a`, `b`" — empty when nothing had run.
fn ran_clause(ran: &[String]) -> String {
    if ran.is_empty() {
        return String::new();
    }
    let names: Vec<String> = ran.iter().map(|t| format!("`{t}`")).collect();
    format!(" (after it had run {})", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::InboxEntry;

    fn entry(started: Option<&[&str]>, attempts: i64, answered: bool, files: bool) -> InboxEntry {
        let mut message = crate::store::test_message("hi");
        if files {
            message
                .attachments
                .push(switchboard_platform::Attachment::new(
                    switchboard_platform::AttachmentKind::Document,
                    "f",
                ));
        }
        InboxEntry {
            id: 1,
            message,
            interrupted: started.map(|r| r.iter().map(|t| (*t).to_owned()).collect()),
            attempts,
            answered,
        }
    }

    #[test]
    fn what_a_dead_process_left_is_run_again_only_when_safe() {
        assert_eq!(
            set_aside(&entry(None, 0, false, false)),
            None,
            "never started"
        );
        assert_eq!(
            set_aside(&entry(Some(&[]), 1, false, false)),
            None,
            "one crash"
        );
        assert_eq!(
            set_aside(&entry(Some(&[]), 2, false, false)),
            Some(SetAside::Poisoned(2))
        );
        assert_eq!(
            set_aside(&entry(Some(&[]), 1, false, true)),
            Some(SetAside::Poisoned(1)),
            "a message with a file: once"
        );
        assert_eq!(
            set_aside(&entry(Some(&["exec_command"]), 1, false, false)),
            Some(SetAside::Ran(vec!["exec_command".into()]))
        );
        assert_eq!(
            set_aside(&entry(Some(&["exec_command"]), 1, true, false)),
            Some(SetAside::Answered)
        );
    }
}
