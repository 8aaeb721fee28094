//! The acknowledged intake: how an adapter hands an inbound event to the core
//! and learns when the core has it durably, so that it forgets the event on
//! the platform's side (Telegram's offset, the webhook spool, Discord's
//! channel marks) only after that.
//!
//! [`InboundSink::hand_over`] queues an event and returns a [`Pending`]
//! receipt at once, so an adapter can hand over a whole batch before it
//! waits; [`Pending::receipt`] resolves when the core has kept the event
//! (its inbox row written in one transaction with the rest of the burst, or
//! its file in the local spool while storage is down) or has finished with
//! it (ignored, refused, answered as a command, a press decided). A receipt
//! that never comes — the core could not keep the event, or stopped first —
//! is an error: the adapter must keep the event on its side and offer it
//! again (the core drops a repeat of one it already kept).

use crate::inbound::Inbound;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// What the core did with an event it acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receipt {
    /// Stored durably: a crash from now on does not lose it.
    Kept,
    /// Nothing to keep: ignored, refused, answered at once, a repeat of one
    /// kept before, or a press whose decision is recorded.
    Handled,
}

/// Why an event has no receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IntakeError {
    /// The core has stopped taking events.
    #[error("the core has stopped taking inbound events")]
    Closed,
    /// The core took the event but could not keep it (storage down and no
    /// spool): the adapter keeps it and offers it again.
    #[error("the core could not keep the event")]
    NotKept,
}

/// An event on its way to the core, with the receipt its adapter waits for.
#[derive(Debug)]
pub struct Delivery {
    pub event: Inbound,
    /// Acknowledges the event; dropped unacknowledged, the adapter sees
    /// [`IntakeError::NotKept`].
    pub ack: Ack,
}

/// The core's half of a receipt.
#[derive(Debug)]
pub struct Ack(Option<oneshot::Sender<Receipt>>);

impl Ack {
    /// An acknowledgement nobody waits for (tests, events the core makes itself).
    pub fn detached() -> Ack {
        Ack(None)
    }

    /// Tells the adapter what became of its event.
    pub fn send(mut self, receipt: Receipt) {
        if let Some(tx) = self.0.take() {
            // The adapter may have stopped waiting (shutting down): fine.
            let _ = tx.send(receipt);
        }
    }
}

/// The adapter's half of a receipt, with a copy of the event to offer again.
#[derive(Debug)]
#[must_use = "an event is the adapter's to keep until its receipt has come"]
pub struct Pending {
    rx: oneshot::Receiver<Receipt>,
    event: Inbound,
}

/// The first wait before an event the core could not keep is offered again;
/// it doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);

impl Pending {
    /// Waits for the core's receipt.
    pub async fn receipt(self) -> Result<Receipt, IntakeError> {
        self.rx.await.map_err(|_| IntakeError::NotKept)
    }

    /// Waits for the receipt, offering the event again while the core could
    /// not keep it (storage down and no spool): after 1 s, then doubling up
    /// to 30 s. Ends only with a receipt or [`IntakeError::Closed`], so the
    /// adapter holds the event back from its platform meanwhile.
    pub async fn settle(self, sink: &InboundSink) -> Result<Receipt, IntakeError> {
        let Pending { rx, event } = self;
        let mut pending = match rx.await {
            Ok(receipt) => return Ok(receipt),
            Err(_) => None,
        };
        let mut wait = RETRY_FIRST;
        loop {
            if let Some(rx) = pending.take() {
                if let Ok(receipt) = rx.await {
                    return Ok(receipt);
                }
            }
            if sink.is_closed() {
                return Err(IntakeError::Closed);
            }
            tracing::warn!(
                retry_in = ?wait,
                "the core could not keep an inbound event; it stays with the platform and is offered again"
            );
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(RETRY_MAX);
            pending = Some(sink.offer(event.clone()).await?);
        }
    }
}

/// Where adapters deliver inbound events. Bounded: a full queue slows the
/// platform reader down instead of dropping events. Cheap to clone.
#[derive(Debug, Clone)]
pub struct InboundSink {
    tx: mpsc::Sender<Delivery>,
}

/// The core's end of the intake.
#[derive(Debug)]
pub struct InboundQueue {
    rx: mpsc::Receiver<Delivery>,
}

impl InboundSink {
    /// A sink and its queue, holding at most `capacity` events not yet taken.
    pub fn channel(capacity: usize) -> (InboundSink, InboundQueue) {
        let (tx, rx) = mpsc::channel(capacity);
        (InboundSink { tx }, InboundQueue { rx })
    }

    /// Queues `event` for the core (waiting while the queue is full) and
    /// returns its pending receipt.
    pub async fn hand_over(&self, event: Inbound) -> Result<Pending, IntakeError> {
        let rx = self.offer(event.clone()).await?;
        Ok(Pending { rx, event })
    }

    /// Hands `event` over and waits until the core has it (see
    /// [`Pending::settle`]).
    pub async fn deliver(&self, event: Inbound) -> Result<Receipt, IntakeError> {
        self.hand_over(event).await?.settle(self).await
    }

    async fn offer(&self, event: Inbound) -> Result<oneshot::Receiver<Receipt>, IntakeError> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Delivery {
                event,
                ack: Ack(Some(tx)),
            })
            .await
            .map_err(|_| IntakeError::Closed)?;
        Ok(rx)
    }

    /// Whether the core has stopped taking events.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

impl InboundQueue {
    /// The next event, waiting for one; `None` once every sink is gone.
    pub async fn recv(&mut self) -> Option<Delivery> {
        self.rx.recv().await
    }

    /// The next event if one is queued now.
    pub fn try_recv(&mut self) -> Option<Delivery> {
        self.rx.try_recv().ok()
    }

    /// Takes no more events; those queued can still be received.
    pub fn close(&mut self) {
        self.rx.close();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ids::{ActionId, ChatAddress, ChatId, ChatKind, Platform, UserId};
    use crate::inbound::{ButtonPress, PressHandle, User};

    fn press(n: i64) -> Inbound {
        let chat = ChatAddress::new(Platform::Console, ChatId(1), None);
        Inbound::ButtonPress(ButtonPress {
            chat,
            chat_kind: ChatKind::Dm,
            user: User {
                id: UserId(n),
                display_name: "Ann".into(),
                is_bot: false,
                is_approver: false,
            },
            action: ActionId::parse(&format!("a{n}")).unwrap(),
            message: None,
            handle: PressHandle(format!("h{n}")),
            timestamp: chrono::Utc::now(),
            parent: None,
            input: Default::default(),
        })
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_not_kept_is_offered_again_until_it_is() {
        let (sink, mut queue) = InboundSink::channel(8);
        let first = sink.hand_over(press(1)).await.unwrap();
        let second = sink.hand_over(press(2)).await.unwrap();
        let core = tokio::spawn(async move {
            let one = queue.recv().await.unwrap();
            one.ack.send(Receipt::Kept);
            drop(queue.recv().await.unwrap()); // could not keep it
            drop(queue.recv().await.unwrap()); // nor on the first retry
            let again = queue.recv().await.unwrap();
            let Inbound::ButtonPress(p) = &again.event else {
                panic!("a press")
            };
            assert_eq!(p.handle.0, "h2", "the same event");
            again.ack.send(Receipt::Handled);
            queue
        });
        assert_eq!(first.settle(&sink).await, Ok(Receipt::Kept));
        assert_eq!(second.settle(&sink).await, Ok(Receipt::Handled));
        let queue = core.await.unwrap();
        drop(queue);
        let lost = sink.hand_over(press(3)).await;
        assert_eq!(lost.unwrap_err(), IntakeError::Closed);
    }

    #[tokio::test]
    async fn a_closed_core_refuses_events() {
        let (sink, queue) = InboundSink::channel(1);
        drop(queue);
        assert!(sink.is_closed());
        assert_eq!(
            sink.deliver(press(1)).await.unwrap_err(),
            IntakeError::Closed
        );
    }
}
