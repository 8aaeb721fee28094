//! Restores each channel's event order after serenity's per-event tasks may
//! have shuffled it: events are held for a short window and released per
//! channel in snowflake order (the order Discord created them in).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;
use tokio::time::Instant;

/// Holds events keyed by `(channel, snowflake)`.
///
/// Each event is held for `window` after it reached us. When an event's window
/// ends it is released together with every held event of its channel that
/// has a smaller snowflake (older, though it arrived later), oldest first;
/// newer events of the channel keep waiting for their own windows. So events
/// of one channel come out in snowflake order as long as none reaches us more
/// than `window` after a newer one of its channel; one that does (it cannot be
/// put back in place) is released after its own window like any other.
pub(crate) struct Reorder<T> {
    window: Duration,
    held: BTreeMap<(u64, u64), T>,
    /// Arrival order: when each event's window ends, and its key.
    due: VecDeque<(Instant, (u64, u64))>,
}

impl<T> Reorder<T> {
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            held: BTreeMap::new(),
            due: VecDeque::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Holds `event` of `channel` with snowflake `id`, received `now`. An
    /// event with the same key (a replay) replaces the held one.
    pub fn hold(&mut self, channel: u64, id: u64, event: T, now: Instant) {
        self.held.insert((channel, id), event);
        self.due.push_back((now + self.window, (channel, id)));
    }

    /// When the next window ends, if anything is held.
    pub fn next_due(&self) -> Option<Instant> {
        self.due.front().map(|(at, _)| *at)
    }

    /// The events whose window ended by `now` (with the older events of their
    /// channels), in release order.
    pub fn release(&mut self, now: Instant) -> Vec<T> {
        self.release_while(|at| at <= now)
    }

    /// Everything held, each channel in snowflake order.
    pub fn release_all(&mut self) -> Vec<T> {
        self.release_while(|_| true)
    }

    fn release_while(&mut self, due: impl Fn(Instant) -> bool) -> Vec<T> {
        let mut out = Vec::new();
        while let Some(&(at, (channel, id))) = self.due.front() {
            if !due(at) {
                break;
            }
            self.due.pop_front();
            let older: Vec<(u64, u64)> = self
                .held
                .range((channel, 0)..=(channel, id))
                .map(|(key, _)| *key)
                .collect();
            out.extend(older.iter().filter_map(|key| self.held.remove(key)));
        }
        // Drop entries of events released early with an older one's window.
        while self
            .due
            .front()
            .is_some_and(|(_, key)| !self.held.contains_key(key))
        {
            self.due.pop_front();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_millis(50);
    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn each_channel_comes_out_in_snowflake_order() {
        let t0 = Instant::now();
        let mut order = Reorder::new(WINDOW);
        order.hold(1, 30, "c1-30", t0);
        order.hold(1, 10, "c1-10", t0 + MS);
        order.hold(2, 20, "c2-20", t0 + 2 * MS);
        order.hold(1, 20, "c1-20", t0 + 3 * MS);
        assert_eq!(order.next_due(), Some(t0 + WINDOW));
        assert!(order.release(t0 + WINDOW - MS).is_empty(), "still waiting");
        // The first window to end releases its channel's older events first.
        assert_eq!(order.release(t0 + WINDOW), ["c1-10", "c1-20", "c1-30"]);
        assert_eq!(order.next_due(), Some(t0 + 2 * MS + WINDOW));
        assert_eq!(order.release(t0 + 2 * MS + WINDOW), ["c2-20"]);
        assert!(order.is_empty());
        assert_eq!(order.next_due(), None);
    }

    #[test]
    fn newer_events_wait_for_their_own_window() {
        let t0 = Instant::now();
        let mut order = Reorder::new(WINDOW);
        order.hold(1, 1, 1, t0);
        order.hold(1, 9, 9, t0 + 10 * MS);
        assert_eq!(order.release(t0 + WINDOW), [1]);
        assert!(!order.is_empty());
        assert_eq!(order.next_due(), Some(t0 + 10 * MS + WINDOW));
        // An older event arriving within 9's window still goes first.
        order.hold(1, 5, 5, t0 + 20 * MS);
        assert_eq!(order.release(t0 + 10 * MS + WINDOW), [5, 9]);
        // One later than a whole window cannot be put back; it still comes out.
        order.hold(1, 2, 2, t0 + 100 * MS);
        assert_eq!(order.release(t0 + 100 * MS + WINDOW), [2]);
        assert!(order.is_empty());
    }

    #[test]
    fn release_all_keeps_channel_order_and_replays_replace() {
        let t0 = Instant::now();
        let mut order = Reorder::new(WINDOW);
        order.hold(7, 3, "b", t0);
        order.hold(7, 2, "a", t0);
        order.hold(8, 1, "x", t0);
        order.hold(7, 3, "b again", t0 + MS);
        assert_eq!(order.release_all(), ["a", "b again", "x"]);
        assert!(order.is_empty() && order.next_due().is_none());
        // Without a window, events only wait until released.
        let mut eager = Reorder::new(Duration::ZERO);
        eager.hold(1, 2, 2, t0);
        eager.hold(1, 1, 1, t0);
        assert_eq!(eager.release(t0), [1, 2]);
    }
}
