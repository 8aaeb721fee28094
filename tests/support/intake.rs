//! The core's end of the acknowledged intake, for tests that run an adapter
//! alone: events are acknowledged as kept when received (as the core does
//! once it has stored them), or held unacknowledged to see what the
//! adapter does without a receipt.

use switchboard_platform::{Delivery, Inbound, InboundQueue, InboundSink, Receipt};

/// Receives what an adapter hands over.
pub struct Received {
    queue: InboundQueue,
}

/// A sink for an adapter and its receiving end.
pub fn acking(capacity: usize) -> (InboundSink, Received) {
    let (sink, queue) = InboundSink::channel(capacity);
    (sink, Received { queue })
}

impl Received {
    /// The next event, acknowledged as kept.
    pub async fn recv(&mut self) -> Option<Inbound> {
        let Delivery { event, ack } = self.queue.recv().await?;
        ack.send(Receipt::Kept);
        Some(event)
    }

    /// The next event if one is waiting, acknowledged as kept.
    pub fn try_recv(&mut self) -> Result<Inbound, ()> {
        let Delivery { event, ack } = self.queue.try_recv().ok_or(())?;
        ack.send(Receipt::Kept);
        Ok(event)
    }

    /// The next event with its acknowledgement left to the test.
    pub async fn recv_unacked(&mut self) -> Option<Delivery> {
        self.queue.recv().await
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&mut self) -> bool {
        match self.queue.try_recv() {
            None => true,
            Some(d) => {
                // Put back is impossible: acknowledge and report it.
                d.ack.send(Receipt::Kept);
                false
            }
        }
    }

    pub fn close(&mut self) {
        self.queue.close();
    }
}
