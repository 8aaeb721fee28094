//! The inbound path: the adapters' events are taken a burst at a time; a
//! message is filtered (bots, unaddressed group chatter), checked (access,
//! the sender's limit), answered at once when it is a command, and
//! otherwise kept — the burst's inbox rows written in one transaction, or
//! the local spool while storage is down — then acknowledged to its
//! adapter (which only now forgets it on the platform's side) and queued
//! on its session's worker.

use crate::gateway::chat as chat_turn;
use crate::gateway::commands::choices;
use crate::gateway::delivery::outbound;
use crate::gateway::intake::access::Access;
use crate::gateway::intake::kept::{Accepted, KeepOutcome};
use crate::gateway::intake::limiter::Limit;
use crate::gateway::maintenance::relay;
use crate::gateway::session::queue_mode::QueueMode;
use crate::gateway::Gateway;
use crate::store::SessionKey;
use std::sync::Arc;
use switchboard_platform::{
    Delivery, Inbound, InboundMessage, InboundQueue, MessageId, PlatformAdapter, Receipt, Status,
};

/// Events taken at once: whatever is waiting, up to this many.
const MAX_BURST: usize = 64;

impl Gateway {
    /// Takes `first` and whatever else is queued now as one burst: presses
    /// go to their handlers, messages are screened, and the accepted ones
    /// kept at once and queued.
    pub(in crate::gateway) async fn take_in(&self, first: Delivery, queue: &mut InboundQueue) {
        let mut burst = vec![first];
        while burst.len() < MAX_BURST {
            let Some(next) = queue.try_recv() else { break };
            burst.push(next);
        }
        crate::failpoint::hit("received");
        let mut accepted = Vec::new();
        for Delivery { event, ack } in burst {
            match event {
                Inbound::ButtonPress(press) => self.on_press(press, ack),
                Inbound::Reaction(reaction) => self.on_reaction(reaction, ack),
                Inbound::Message(msg) => match self.screen(msg).await {
                    Some((msg, key, dedupe)) => accepted.push(Accepted {
                        msg,
                        key,
                        dedupe,
                        ack,
                        guard: self.inner.life.busy.enter(),
                    }),
                    None => ack.send(Receipt::Handled),
                },
            }
        }
        self.keep_and_queue(accepted).await;
    }

    /// Keeps the accepted messages of a burst (one transaction), tells each
    /// adapter, and queues them on their sessions in order. A message that
    /// could be kept nowhere gets no receipt: its adapter offers it again.
    async fn keep_and_queue(&self, accepted: Vec<Accepted>) {
        if accepted.is_empty() {
            return;
        }
        let inner = &self.inner;
        let outcomes = inner.keep_burst(&accepted).await;
        crate::failpoint::hit("kept");
        for (a, outcome) in accepted.into_iter().zip(outcomes) {
            match outcome {
                KeepOutcome::Kept(kept) => {
                    a.ack.send(Receipt::Kept);
                    if let Some(adapter) = inner.adapter(a.msg.chat.platform) {
                        let target = Some(a.msg.message_ref());
                        inner
                            .features
                            .status
                            .show(&adapter, target, Status::Received);
                    }
                    let session = self.session(a.key);
                    if session.mode(inner.features.queue_mode) == QueueMode::Interrupt {
                        session.stop();
                    }
                    session.enqueue_message(a.msg, Some(kept), a.guard);
                }
                KeepOutcome::Repeat => {
                    tracing::info!(chat = %a.msg.chat.chat, message = %a.msg.message_id, "dropped a repeated delivery");
                    a.ack.send(Receipt::Handled);
                }
                // No receipt: the adapter keeps it and offers it again.
                KeepOutcome::Lost => drop(a.ack),
            }
        }
        crate::failpoint::hit("queued");
    }

    /// At shutdown: messages the adapters handed over that the loop did not
    /// reach are kept like any other, for the next process; presses get no
    /// receipt (the platform offers them again, or the user presses again).
    pub(in crate::gateway) async fn keep_undelivered(&self, inbound: &mut InboundQueue) {
        inbound.close();
        let mut kept = 0usize;
        while let Some(delivery) = inbound.recv().await {
            if matches!(delivery.event, Inbound::Message(_)) {
                kept += 1;
                self.take_in(delivery, inbound).await;
            }
        }
        if kept > 0 {
            tracing::info!(
                count = kept,
                "kept messages that arrived during shutdown for the next start"
            );
        }
    }

    /// Filters, checks and — for a command — answers `msg`. `Some` with its
    /// session and whether it may come again when it is to be kept for a
    /// turn; `None` when it is done with.
    async fn screen(&self, msg: InboundMessage) -> Option<(InboundMessage, SessionKey, bool)> {
        let inner = &self.inner;
        if msg.user.is_bot {
            return None;
        }
        if let Some(parent) = msg.parent {
            let chat = msg.chat;
            inner
                .platforms
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
            && !inner.store.turns().is_waiting(&key).await.unwrap_or(false)
        {
            return None;
        }
        let adapter = inner.adapter(msg.chat.platform)?;
        if !self.admit(&msg, &key, &adapter).await {
            return None;
        }
        // A message is its text, its files, or both; files are taken in by
        // the session (downloads never hold up this loop).
        if msg.text.trim().is_empty() && msg.attachments.is_empty() {
            return None;
        }
        let mut dedupe = adapter.may_redeliver();
        // What may be answered at once is checked for a repeat first (its
        // sighting recorded now, so it is not asked again when kept).
        if dedupe
            && (msg.reply_to.is_some() || crate::gateway::commands::parse(&msg.text).is_some())
        {
            if self.repeated(&msg).await {
                return None;
            }
            dedupe = false;
        }
        if self.answered_at_once(&msg, &key, &adapter).await {
            return None;
        }
        Some((msg, key, dedupe))
    }

    /// A reply to an MCP client's question, or a command answered at once:
    /// `true` when `msg` was one (and is done with).
    async fn answered_at_once(
        &self,
        msg: &InboundMessage,
        key: &SessionKey,
        adapter: &Arc<dyn PlatformAdapter>,
    ) -> bool {
        let reply = |text: String, reply_to: Option<MessageId>| {
            reply_later(adapter, msg.chat, text, reply_to);
        };
        if relay::answer_question(&self.inner, msg).await {
            reply(relay::ANSWER_PASSED_ON.into(), Some(msg.message_id));
            return true;
        }
        match self.inline_command(msg, key, adapter).await {
            Some(Some(text)) => {
                // A bare `/model` or `/queue` offers its choices as a menu
                // (looked up off the inbound loop, like the reply is sent).
                let (inner, adapter) = (Arc::clone(&self.inner), Arc::clone(adapter));
                let (msg, key) = (msg.clone(), *key);
                tokio::spawn(async move {
                    let menu = choices::menu_for(&inner, &msg, &key, adapter.as_ref()).await;
                    let (chat, reply_to) = (msg.chat, Some(msg.message_id));
                    outbound::notify_with(adapter.as_ref(), &chat, &text, reply_to, menu).await
                });
                true
            }
            Some(None) => true,
            None => false,
        }
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
            .gate
            .access
            .check(
                &inner.store,
                msg,
                adapter.capabilities().local_operator,
                inner.durability.storage.is_down(),
            )
            .await;
        match checked {
            Ok(Access::Admit) => {}
            // Refusals count against the sender's inbound limit too, so a
            // stranger cannot make the bot send a stream of them.
            Ok(Access::Refuse(text)) => {
                match inner.gate.limiter.check(key.platform, key.user) {
                    Limit::Allowed => reply(text, Some(msg.message_id)),
                    Limit::Notice(notice) => reply(notice, Some(msg.message_id)),
                    Limit::Silent => {}
                }
                return false;
            }
            Ok(Access::Ignore) => return false,
            Err(e) => {
                inner.durability.storage.failed();
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
        match inner.gate.limiter.check(key.platform, key.user) {
            Limit::Allowed => true,
            Limit::Notice(text) => {
                reply(text, Some(msg.message_id));
                false
            }
            Limit::Silent => false,
        }
    }

    /// A repeat of a message already answered at once (its platform
    /// delivered it again) is dropped; when that cannot be checked, it is
    /// taken.
    async fn repeated(&self, msg: &InboundMessage) -> bool {
        match self
            .inner
            .store
            .inbox()
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
pub(in crate::gateway) fn reply_later(
    adapter: &Arc<dyn PlatformAdapter>,
    chat: switchboard_platform::ChatAddress,
    text: String,
    reply_to: Option<MessageId>,
) {
    let adapter = Arc::clone(adapter);
    tokio::spawn(async move {
        crate::gateway::delivery::outbound::notify(adapter.as_ref(), &chat, &text, reply_to).await
    });
}
