//! The inbound path: a message from an adapter is filtered (bots, unaddressed
//! group chatter), checked (access, the sender's limit), answered at once
//! when it is a command, kept (inbox row, or spool while storage is down)
//! and queued on its session's worker.

use super::access::Access;
use super::limiter::Limit;
use super::queue_mode::QueueMode;
use super::{chat_turn, relay, turn, Gateway};
use crate::store::SessionKey;
use std::sync::Arc;
use switchboard_platform::{Inbound, InboundMessage, MessageId, PlatformAdapter};
use tokio::sync::mpsc;

impl Gateway {
    /// At shutdown: messages the adapters already handed over (Telegram's
    /// offset has moved past them) but the loop did not reach are checked and
    /// kept like any other, for the next process. Presses are not kept: the
    /// platform shows them as failed and the user presses again.
    pub(super) async fn keep_undelivered(&self, inbound: &mut mpsc::Receiver<Inbound>) {
        inbound.close();
        let mut kept = 0usize;
        while let Some(event) = inbound.recv().await {
            if let Inbound::Message(m) = event {
                self.on_message(m).await;
                kept += 1;
            }
        }
        if kept > 0 {
            tracing::info!(
                count = kept,
                "kept messages that arrived during shutdown for the next start"
            );
        }
    }

    pub(super) async fn on_message(&self, msg: InboundMessage) {
        let inner = &self.inner;
        if msg.user.is_bot {
            return;
        }
        if let Some(parent) = msg.parent {
            let chat = msg.chat;
            inner
                .parents
                .note(&inner.store, chat.platform, chat.chat, parent);
        }
        inner.metrics.inc(
            "switchboard_inbound_messages_total",
            &[("platform", msg.chat.platform.as_str())],
        );
        let key = SessionKey::of(&msg.chat, msg.user.id);
        // Unaddressed group chatter is ignored, unless it answers this user's
        // pending `ask_user` question or is the edit of an approval card.
        // A chat bound with `free_response` answers every message.
        if !msg.addressed.is_addressed()
            && !chat_turn::free_response(inner, &key)
            && !inner.store.is_waiting(&key).await.unwrap_or(false)
        {
            return;
        }
        let Some(adapter) = inner.adapter(msg.chat.platform) else {
            return;
        };
        if !self.admit(&msg, &key, &adapter).await {
            return;
        }
        let reply = |text: String, reply_to: Option<MessageId>| {
            reply_later(&adapter, msg.chat, text, reply_to);
        };
        // A message is its text, its files, or both; files are taken in by
        // the session (downloads never hold up this loop).
        if msg.text.trim().is_empty() && msg.attachments.is_empty() {
            return;
        }
        // A reply to an MCP client's question answers it; no turn runs.
        if relay::answer_question(inner, &msg).await {
            return reply(relay::ANSWER_PASSED_ON.into(), Some(msg.message_id));
        }
        if let Some(answered) = self.inline_command(&msg, &key, &adapter).await {
            if let Some(text) = answered {
                reply(text, Some(msg.message_id));
            }
            return;
        }
        if adapter.may_redeliver() && self.repeated(&msg).await {
            return;
        }
        // Durable before it is queued: the platform already counts it as
        // delivered (Telegram's offset moves on), so a restart must not lose it.
        let guard = inner.busy.enter();
        let kept = inner.keep(&msg).await;
        let session = self.session(key);
        if session.mode(inner.queue_mode) == QueueMode::Interrupt {
            session.stop();
        }
        session.enqueue_message(msg, kept, guard);
    }

    /// Access, then the sender's inbound limit: `false` when the message
    /// goes no further (refused — with a reply while the limit allows one —
    /// ignored, or over the limit).
    async fn admit(
        &self,
        msg: &InboundMessage,
        key: &SessionKey,
        adapter: &Arc<dyn PlatformAdapter>,
    ) -> bool {
        let inner = &self.inner;
        let reply = |text: String, reply_to: Option<MessageId>| {
            reply_later(adapter, msg.chat, text, reply_to);
        };
        let checked = inner
            .access
            .check(
                &inner.store,
                msg,
                adapter.capabilities().local_operator,
                inner.storage.is_down(),
            )
            .await;
        match checked {
            Ok(Access::Admit) => {}
            // Refusals count against the sender's inbound limit too, so a
            // stranger cannot make the bot send a stream of them.
            Ok(Access::Refuse(text)) => {
                match inner.limiter.check(key.platform, key.user) {
                    Limit::Allowed => reply(text, Some(msg.message_id)),
                    Limit::Notice(notice) => reply(notice, Some(msg.message_id)),
                    Limit::Silent => {}
                }
                return false;
            }
            Ok(Access::Ignore) => return false,
            Err(e) => {
                inner.storage.failed();
                tracing::error!(error = %e, "access check failed");
                let text = "⚠️ I can't check access right now (storage unavailable).";
                reply(text.into(), None);
                return false;
            }
        }
        // The console is the operator at the machine: no inbound limit (a
        // piped script may send lines as fast as it likes).
        if adapter.capabilities().local_operator {
            return true;
        }
        match inner.limiter.check(key.platform, key.user) {
            Limit::Allowed => true,
            Limit::Notice(text) => {
                reply(text, Some(msg.message_id));
                false
            }
            Limit::Silent => false,
        }
    }

    /// A repeat of a message already taken (a webhook delivery Telegram
    /// retried, or one its spool kept across a restart) is dropped; when
    /// that cannot be checked, the message is taken.
    async fn repeated(&self, msg: &InboundMessage) -> bool {
        match self
            .inner
            .store
            .first_sight(&msg.chat, msg.message_id)
            .await
        {
            Ok(first) => {
                if !first {
                    tracing::info!(chat = %msg.chat.chat, message = %msg.message_id, "dropped a repeated delivery");
                }
                !first
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not check for a repeated delivery; taking it");
                false
            }
        }
    }
}

/// Sends a reply from the inbound path on a task of its own: a chat paused by
/// the platform's flood control must not hold up the inbound loop of every
/// other chat.
pub(super) fn reply_later(
    adapter: &Arc<dyn PlatformAdapter>,
    chat: switchboard_platform::ChatAddress,
    text: String,
    reply_to: Option<MessageId>,
) {
    let adapter = Arc::clone(adapter);
    tokio::spawn(async move { turn::notify(adapter.as_ref(), &chat, &text, reply_to).await });
}
