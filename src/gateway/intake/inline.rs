//! Commands are answered the moment they arrive, never behind the session's
//! turn: a user whose answer stalls can still ask `/help`, look at `/tasks`
//! or `/stop` it. Only what would itself start a turn (a skill, a `/tools`
//! request for the model) or change what the running turn reads and writes
//! (`/clear`) is queued like a message — and `/clear` says so at once.

use crate::domain::SessionKey;
use crate::gateway::commands::approvals as approvals_cmd;
use crate::gateway::commands::approve as approve_cmd;
use crate::gateway::commands::stop;
use crate::gateway::commands::tools as tools_cmd;
use crate::gateway::commands::{self, Builtin, Command};
use crate::gateway::intake::inbound::reply_later;
use crate::gateway::session::queue_mode;
use crate::gateway::Gateway;
use std::sync::Arc;
use switchboard_platform::{InboundMessage, PlatformAdapter};

/// The answer to `/clear` sent while a turn runs (the clear itself waits).
const CLEAR_AFTER_TURN: &str =
    "I'll clear this conversation as soon as the current answer ends (/stop ends it now).";

impl Gateway {
    /// The commands answered as they arrive instead of queueing: `Some` when
    /// `msg` was one, with the reply (if any).
    pub(in crate::gateway) async fn inline_command(
        &self,
        msg: &InboundMessage,
        key: &SessionKey,
        adapter: &Arc<dyn PlatformAdapter>,
    ) -> Option<Option<String>> {
        let inner = &self.inner;
        let cmd = commands::parse(&msg.text)?;
        Some(match cmd.builtin? {
            // A decision is quick and may be for a card of another session
            // (an approver's); an edit's new arguments right behind it then
            // find the approval already sent back.
            Builtin::Approve => Some(approve_cmd::run(inner, adapter, &msg.user, &cmd.args).await),
            // A read of the cards, not a turn.
            Builtin::Approvals => Some(approvals_cmd::run(inner, &cmd, key).await.unwrap_or_else(
                |e| {
                    tracing::error!(error = %e, "could not list approvals");
                    "⚠️ I can't read the approvals right now (storage unavailable).".into()
                },
            )),
            Builtin::Stop => self.stop(msg, key, &cmd).await,
            // About the turn running now: answered at once.
            Builtin::Queue => Some(
                queue_mode::answer(inner, key, &cmd.args, &self.session(*key).mode_cell()).await,
            ),
            // A request the model carries out: a turn of its own.
            Builtin::Tools
                if tools_cmd::invocation(inner, &cmd, &msg.text, &msg.user).is_some() =>
            {
                return None
            }
            Builtin::Skills
                if commands::skills::invocation(inner, &cmd, &msg.text, &msg.user).is_some() =>
            {
                return None
            }
            // The running turn still writes this conversation: cleared after it.
            Builtin::Clear => {
                if self.session_if_exists(key).is_some_and(|h| h.is_running()) {
                    reply_later(
                        adapter,
                        msg.chat,
                        CLEAR_AFTER_TURN.into(),
                        Some(msg.message_id),
                    );
                }
                return None;
            }
            _ => Some(self.answer_now(msg, key, &cmd).await),
        })
    }

    /// `/stop` cancels the turn running now (it answers for itself:
    /// "Cancelled."); with none, it denies the card a paused turn waits at.
    /// `/stop all` also cancels the chat's background tasks.
    async fn stop(
        &self,
        msg: &InboundMessage,
        key: &SessionKey,
        cmd: &Command<'_>,
    ) -> Option<String> {
        let inner = &self.inner;
        let all = cmd
            .args
            .first()
            .is_some_and(|a| a.eq_ignore_ascii_case("all"));
        let stopped = self.session_if_exists(key).is_some_and(|h| h.stop());
        let tasks = if all {
            Some(stop::cancel_tasks(inner, key).await)
        } else {
            None
        };
        if stopped {
            return tasks;
        }
        let card = stop::deny_waiting_card(inner, key, &msg.user).await;
        Some(match (card, tasks) {
            (Some(card), Some(tasks)) => format!("{card}\n{tasks}"),
            (Some(card), None) => card,
            (None, Some(tasks)) => tasks,
            (None, None) => stop::NOTHING_TO_STOP.to_owned(),
        })
    }

    /// Runs a command that neither starts nor changes a turn, now.
    async fn answer_now(
        &self,
        msg: &InboundMessage,
        key: &SessionKey,
        cmd: &Command<'_>,
    ) -> String {
        let inner = &self.inner;
        let private = msg.chat_kind.is_private();
        let answer = match inner.store.sessions().open(key).await {
            Ok(session) => commands::run(inner, cmd, key, &session, &msg.user, private).await,
            Err(e) => Err(e),
        };
        let mut answer = answer.unwrap_or_else(|e| {
            tracing::error!(error = %e, command = %cmd.name, "command failed");
            "⚠️ That command failed because storage is unavailable. Please try again.".into()
        });
        let running = self.session_if_exists(key).is_some_and(|h| h.is_running());
        if running && cmd.builtin == Some(Builtin::Usage) {
            answer.push_str("\n_(An answer is still in progress here; it counts once it ends.)_");
        }
        answer
    }
}
