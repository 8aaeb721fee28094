//! Outbound pacing shared by adapters: governor limiters per chat and per bot,
//! one-at-a-time order per chat, and 429 pauses that resume from the refused call.
//!
//! Platforms state their limits as windows ("5 per 5 s", "20 per minute") and
//! count them server-side on arrival; [`Pacer::quota_within`] turns such a window
//! into a governor quota that can never exceed it, even with a little network
//! jitter between our clock and theirs.

use governor::clock::Clock;
use governor::nanos::Nanos;
use governor::Quota;
use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

mod lowest;

/// Gives each key its own quotas.
type QuotasFor<K> = Box<dyn Fn(&K) -> Vec<Quota> + Send + Sync>;

/// governor on tokio's clock, so limiter waits are tokio sleeps (and tests can
/// pause time).
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: Instant,
}

impl TokioClock {
    pub fn new() -> TokioClock {
        TokioClock {
            origin: Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        Nanos::from(self.origin.elapsed())
    }
}

/// How late a timer may wake a call waiting for the bot-wide token without
/// the lateness being lost: tokio's timers fire on the next millisecond tick
/// after the deadline, plus scheduling. Without it every backlogged call
/// pushes the next slot back by its wake-up lateness (~1 ms per call, 5 % of
/// Discord's 21 ms period). [`Pacer::quota_within`] widens each window by it,
/// so the window guarantee holds exactly.
pub const TIMER_SLACK: Duration = Duration::from_millis(2);

/// What a failed platform call says about retrying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Not a rate limit: give up and return the error.
    No,
    /// Rate limited: pause this chat (or every chat when `global`) and try again.
    After { delay: Duration, global: bool },
}

/// One per-key quota as a GCRA that can be inspected without being consumed.
///
/// A key's calls run one at a time, so "wait until every quota of the key
/// admits, then take the bot-wide token, then count the call against the key"
/// is race-free. Counting the key's quota only when the call really goes out
/// matters: had it been consumed before a long wait for the bot-wide limiter,
/// the next call of the key could follow the real one too closely.
struct KeyQuota {
    interval: Duration,
    tolerance: Duration,
    /// Theoretical arrival time of the next call.
    tat: Option<Instant>,
}

impl KeyQuota {
    fn new(quota: Quota) -> Self {
        Self::with_slack(quota, Duration::ZERO)
    }

    /// A quota whose calls may go up to `slack` before their theoretical
    /// time: a waiter woken late by at most `slack` keeps the schedule.
    fn with_slack(quota: Quota, slack: Duration) -> Self {
        let interval = quota.replenish_interval();
        Self {
            interval,
            tolerance: interval * (quota.burst_size().get() - 1) + slack,
            tat: None,
        }
    }

    /// How long a call at `now` must still wait.
    fn wait(&self, now: Instant) -> Duration {
        self.tat
            .and_then(|tat| tat.checked_sub(self.tolerance))
            .map_or(Duration::ZERO, |earliest| {
                earliest.saturating_duration_since(now)
            })
    }

    fn count(&mut self, now: Instant) {
        let base = self.tat.map_or(now, |t| t.max(now));
        self.tat = Some(base + self.interval);
    }
}

/// Per-key state: the order lock, the key's quotas and its pause deadline.
struct Lane {
    order: Mutex<()>,
    /// Woken each time a call of the lane ends: a lowest-priority call that
    /// gave way waits for it ([`Pacer::wait_idle`]) instead of polling.
    ended: tokio::sync::Notify,
    quotas: StdMutex<Vec<KeyQuota>>,
    paused_until: StdMutex<Option<Instant>>,
    /// Outside the bot-wide quota and global pauses (Discord's interaction
    /// callbacks: not bound to the global limit, and due within 3 s).
    unmetered: bool,
}

impl Lane {
    /// Nothing would change if this lane were dropped and made afresh: no call
    /// holds or waits for it, every quota is fully replenished and no pause runs.
    fn is_idle(self: &Arc<Self>, now: Instant) -> bool {
        Arc::strong_count(self) == 1
            && read(&self.paused_until).is_none_or(|until| until <= now)
            && self
                .quotas
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .all(|q| q.tat.is_none_or(|tat| tat <= now))
    }
}

/// The least a [`Pacer::wait_idle`] waits when nothing in particular is
/// running: what gave way to a call that just ended elsewhere.
pub const MIN_NAP: Duration = Duration::from_millis(10);

/// A lane's order held by a running call; letting it go wakes the calls
/// that gave way to it (also when the call is dropped midway).
struct InOrder<'a> {
    guard: Option<tokio::sync::MutexGuard<'a, ()>>,
    ended: &'a tokio::sync::Notify,
}

impl Drop for InOrder<'_> {
    fn drop(&mut self) {
        self.guard.take();
        self.ended.notify_waiters();
    }
}

/// The lanes by key, swept of idle lanes whenever the map has doubled since the
/// last sweep, so memory follows the number of recently active keys.
struct Lanes<K> {
    map: HashMap<K, Arc<Lane>>,
    sweep_at: usize,
}

/// Fewest lanes kept before a sweep is worth its O(n) walk.
const MIN_SWEEP: usize = 256;

/// Paces outbound calls: every call for a key runs after the previous one
/// finished (FIFO), within the key's quotas and the bot-wide quota, and never
/// while that key (or the whole bot) is paused by a 429.
pub struct Pacer<K> {
    /// The bot-wide quota, with [`TIMER_SLACK`].
    global: StdMutex<KeyQuota>,
    /// Calls waiting for the bot-wide token take it in arrival order (tokio's
    /// mutex is fair): without it they race for each token, and under a
    /// backlog a call may wait behind hundreds that came after it.
    global_queue: Mutex<()>,
    /// Calls below every queued one that may wait for a free token
    /// ([`Pacer::run_if_free`]) wait for it in arrival order.
    free_queue: Mutex<()>,
    global_paused_until: StdMutex<Option<Instant>>,
    lanes: StdMutex<Lanes<K>>,
    quotas_for: QuotasFor<K>,
    unmetered: Box<dyn Fn(&K) -> bool + Send + Sync>,
    max_retries: u32,
    rate_limited: std::sync::atomic::AtomicU64,
    /// How long calls waited before their first attempt went out.
    waits: crate::waits::WaitHistogram,
}

impl<K> Pacer<K>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// `global` applies to every call; `quotas_for` gives each key's own quotas
    /// (e.g. 1/s for a Telegram chat plus 20/min when it is a group).
    pub fn new(
        global: Quota,
        quotas_for: impl Fn(&K) -> Vec<Quota> + Send + Sync + 'static,
    ) -> Self {
        Self {
            global: StdMutex::new(KeyQuota::with_slack(global, TIMER_SLACK)),
            global_queue: Mutex::new(()),
            free_queue: Mutex::new(()),
            global_paused_until: StdMutex::new(None),
            lanes: StdMutex::new(Lanes {
                map: HashMap::new(),
                sweep_at: MIN_SWEEP,
            }),
            quotas_for: Box::new(quotas_for),
            unmetered: Box::new(|_| false),
            max_retries: 20,
            rate_limited: std::sync::atomic::AtomicU64::new(0),
            waits: crate::waits::WaitHistogram::default(),
        }
    }

    /// Keys for which `unmetered` holds skip the bot-wide quota and global
    /// pauses (their own quotas and 429 pauses still apply).
    pub fn with_unmetered(
        mut self,
        unmetered: impl Fn(&K) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.unmetered = Box::new(unmetered);
        self
    }

    /// How many times the platform answered 429 so far.
    pub fn rate_limited_count(&self) -> u64 {
        self.rate_limited.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How long calls waited — behind their key's earlier calls, for a
    /// quota, out a 429 pause — before their first attempt went out.
    pub fn waits(&self) -> crate::WaitSnapshot {
        self.waits.snapshot()
    }

    /// Runs `op` for `key` in order, within quotas, retrying it after 429s as
    /// `classify` says. Other keys keep flowing while this one is paused.
    pub async fn run<T, E, F, Fut>(
        &self,
        key: &K,
        mut op: F,
        classify: impl Fn(&E) -> Retry,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let entered = Instant::now();
        let lane = self.lane(key);
        let _order = InOrder {
            guard: Some(lane.order.lock().await),
            ended: &lane.ended,
        };
        let mut attempts = 0;
        loop {
            self.wait_ready(&lane).await;
            if attempts == 0 {
                self.waits.record(entered.elapsed());
            }
            match op().await {
                Ok(v) => return Ok(v),
                Err(e) => match classify(&e) {
                    Retry::After { delay, global } if attempts < self.max_retries => {
                        attempts += 1;
                        self.rate_limited
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let until = Instant::now() + delay;
                        let slot = if global {
                            &self.global_paused_until
                        } else {
                            &lane.paused_until
                        };
                        set_later(slot, until);
                    }
                    _ => return Err(e),
                },
            }
        }
    }

    /// Keys that have a lane in memory. Idle lanes are dropped as new keys
    /// arrive, so this follows the recently active keys, not every key ever seen.
    pub fn lane_count(&self) -> usize {
        self.lanes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map
            .len()
    }

    fn lane(&self, key: &K) -> Arc<Lane> {
        let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lane) = lanes.map.get(key) {
            return lane.clone();
        }
        if lanes.map.len() >= lanes.sweep_at {
            // Under the map's lock nobody can clone a lane, so a strong count
            // of one really means that no call holds or awaits it.
            let now = Instant::now();
            lanes.map.retain(|_, lane| !lane.is_idle(now));
            lanes.sweep_at = MIN_SWEEP.max(lanes.map.len() * 2);
        }
        let lane = Arc::new(Lane {
            order: Mutex::new(()),
            ended: tokio::sync::Notify::new(),
            quotas: StdMutex::new(
                (self.quotas_for)(key)
                    .into_iter()
                    .map(KeyQuota::new)
                    .collect(),
            ),
            paused_until: StdMutex::new(None),
            unmetered: (self.unmetered)(key),
        });
        lanes.map.insert(key.clone(), lane.clone());
        lane
    }

    async fn wait_ready(&self, lane: &Lane) {
        loop {
            let global_pause = if lane.unmetered {
                None
            } else {
                read(&self.global_paused_until)
            };
            let pause = [global_pause, read(&lane.paused_until)]
                .into_iter()
                .flatten()
                .max();
            if let Some(until) = pause.filter(|u| *u > Instant::now()) {
                tokio::time::sleep_until(until).await;
                continue;
            }
            let key_wait = {
                let now = Instant::now();
                let quotas = lane.quotas.lock().unwrap_or_else(|p| p.into_inner());
                quotas.iter().map(|q| q.wait(now)).max().unwrap_or_default()
            };
            if !key_wait.is_zero() {
                tokio::time::sleep(key_wait).await;
                continue;
            }
            if !lane.unmetered && !self.take_global_in_turn().await {
                // A 429 paused the bot meanwhile: look at everything again.
                continue;
            }
            let now = Instant::now();
            let mut quotas = lane.quotas.lock().unwrap_or_else(|p| p.into_inner());
            quotas.iter_mut().for_each(|q| q.count(now));
            return;
        }
    }

    /// Waits for the bot-wide token in arrival order; false when a global
    /// pause began while waiting (nothing taken).
    async fn take_global_in_turn(&self) -> bool {
        let _turn = self.global_queue.lock().await;
        loop {
            if read(&self.global_paused_until).is_some_and(|u| u > Instant::now()) {
                return false;
            }
            let wait = {
                let mut global = self.global.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                let wait = global.wait(now);
                if wait.is_zero() {
                    global.count(now);
                }
                wait
            };
            if wait.is_zero() {
                return true;
            }
            tokio::time::sleep(wait).await;
        }
    }
}

impl Pacer<()> {
    /// A quota that never lets more than `limit` calls into any window of
    /// `window` (half-open, as platforms count on arrival), allowing `burst`
    /// calls at once after a quiet spell.
    ///
    /// A GCRA with burst `b` and period `T` admits at most `b + ceil(W / T) - 1`
    /// calls in any window of length `W`: `b` at its start, then one per `T`;
    /// the bot-wide quota's [`TIMER_SLACK`] lets a call go that much early,
    /// as if the window were that much longer. Requiring that for
    /// `W = window + margin + slack` gives
    /// `T = (window + margin + slack) / (limit - b + 1)`, rounded up. The
    /// `margin` covers jitter in how long calls take to reach the platform:
    /// calls may arrive up to `margin` closer together than they left and
    /// still not share a window. A larger burst costs sustained rate
    /// (`limit - b + 1` per window), so bursts stay small. Examples (50 ms
    /// margin, 2 ms slack):
    /// - Discord channel, 5 per 5 s, `b = 2`: `T = 1.263 s`;
    /// - Discord bot, 50 per 1 s, `b = 1`: `T = 21.04 ms` (47.5/s);
    /// - Telegram group, 20 per 60 s, `b = 3`: `T = 3.336 s` (18 per 60.05 s);
    /// - Telegram bot, 30 per 1 s, `b = 1`: `T = 35.07 ms` (28.5/s).
    ///
    /// `burst` is clamped to `1..=limit`; a zero `limit` is treated as 1. (It
    /// lives on `Pacer<()>` so that `Pacer::quota_within` needs no key type.)
    pub fn quota_within(limit: u32, window: Duration, burst: u32, margin: Duration) -> Quota {
        let limit = limit.max(1);
        let burst = burst.clamp(1, limit);
        let steps = u128::from(limit - burst + 1);
        let span = (window + margin + TIMER_SLACK).as_nanos().max(1);
        let period_nanos = span.div_ceil(steps);
        let period = Duration::from_nanos(u64::try_from(period_nanos).unwrap_or(u64::MAX));
        let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
        Quota::with_period(period)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
            .allow_burst(burst)
    }
}

fn read(slot: &StdMutex<Option<Instant>>) -> Option<Instant> {
    *slot.lock().unwrap_or_else(|p| p.into_inner())
}

fn set_later(slot: &StdMutex<Option<Instant>>, until: Instant) {
    let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
    if guard.is_none_or(|t| t < until) {
        *guard = Some(until);
    }
}

#[cfg(test)]
mod free_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// One call per key of `keys`, each queued after the one before, each
    /// noting when it went out in `sent`; their tasks end `true` when it ran.
    pub(super) async fn backlog(
        pacer: &Arc<Pacer<i64>>,
        keys: impl IntoIterator<Item = i64>,
        sent: &Arc<StdMutex<Vec<Instant>>>,
    ) -> Vec<tokio::task::JoinHandle<bool>> {
        let mut tasks = Vec::new();
        for key in keys {
            let (pacer, sent) = (pacer.clone(), sent.clone());
            tasks.push(tokio::spawn(async move {
                let went = || async {
                    sent.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(Instant::now());
                    Ok::<(), ()>(())
                };
                pacer.run(&key, went, |_| Retry::No).await.is_ok()
            }));
            tokio::task::yield_now().await;
        }
        tasks
    }

    fn per_second(n: u32) -> Quota {
        Quota::per_second(NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN))
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_pauses_and_retries_the_same_call() {
        let pacer: Pacer<i64> = Pacer::new(per_second(30), |_| vec![per_second(1)]);
        let calls = AtomicU32::new(0);
        let start = Instant::now();
        let out: Result<u32, &str> = pacer
            .run(
                &1,
                || async {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    if n == 0 {
                        Err("429")
                    } else {
                        Ok(n)
                    }
                },
                |_| Retry::After {
                    delay: Duration::from_secs(5),
                    global: false,
                },
            )
            .await;
        assert_eq!(out, Ok(1));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert!(start.elapsed() >= Duration::from_secs(5));
        assert_eq!(pacer.rate_limited_count(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_chat_does_not_hold_up_another() {
        let pacer: Arc<Pacer<i64>> = Arc::new(Pacer::new(per_second(30), |_| vec![per_second(1)]));
        let p = pacer.clone();
        let slow = tokio::spawn(async move {
            let first = std::sync::atomic::AtomicBool::new(true);
            p.run(
                &1,
                || async {
                    if first.swap(false, Ordering::SeqCst) {
                        Err(())
                    } else {
                        Ok(Instant::now())
                    }
                },
                |_| Retry::After {
                    delay: Duration::from_secs(30),
                    global: false,
                },
            )
            .await
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        let other: Result<Instant, ()> = pacer
            .run(&2, || async { Ok(Instant::now()) }, |_| Retry::No)
            .await;
        assert!(other.is_ok_and(|t| t.duration_since(start) < Duration::from_secs(1)));
        assert!(slow
            .await
            .is_ok_and(|r| r.is_ok_and(|t| t.duration_since(start) >= Duration::from_secs(29))));
    }

    #[tokio::test(start_paused = true)]
    async fn unmetered_keys_pass_a_global_pause_and_the_bot_quota() {
        // Bot-wide: one call, then one per 10 s. Key 0 is unmetered.
        let global = Quota::with_period(Duration::from_secs(10)).unwrap();
        let pacer: Arc<Pacer<i64>> =
            Arc::new(Pacer::new(global, |_| Vec::new()).with_unmetered(|k| *k == 0));
        // Key 1 hits a global 429 and pauses every metered key for 30 s.
        let p = pacer.clone();
        let paused = tokio::spawn(async move {
            let first = std::sync::atomic::AtomicBool::new(true);
            p.run(
                &1,
                || async {
                    if first.swap(false, Ordering::SeqCst) {
                        Err(())
                    } else {
                        Ok(())
                    }
                },
                |_| Retry::After {
                    delay: Duration::from_secs(30),
                    global: true,
                },
            )
            .await
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        for _ in 0..3 {
            let at: Result<Instant, ()> = pacer
                .run(&0, || async { Ok(Instant::now()) }, |_| Retry::No)
                .await;
            assert!(at.is_ok_and(|t| t == start), "unmetered calls go at once");
        }
        let metered: Result<Instant, ()> = pacer
            .run(&2, || async { Ok(Instant::now()) }, |_| Retry::No)
            .await;
        assert!(metered.is_ok_and(|t| t.duration_since(start) >= Duration::from_secs(29)));
        assert!(paused.await.is_ok_and(|r| r.is_ok()));
    }

    #[tokio::test(start_paused = true)]
    async fn per_key_quota_spaces_calls() {
        let pacer: Pacer<i64> = Pacer::new(per_second(30), |_| vec![per_second(1)]);
        let start = Instant::now();
        for _ in 0..3 {
            let r: Result<(), ()> = pacer.run(&7, || async { Ok(()) }, |_| Retry::No).await;
            assert!(r.is_ok());
        }
        assert!(start.elapsed() >= Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn key_spacing_counts_from_when_the_call_really_went_out() {
        // Bot-wide: one call per 500 ms; key 1: one per second.
        let global = per_second(2).allow_burst(NonZeroU32::MIN);
        let pacer: Pacer<i64> = Pacer::new(global, |k| {
            if *k == 1 {
                vec![per_second(1)]
            } else {
                Vec::new()
            }
        });
        let other: Result<(), ()> = pacer.run(&2, || async { Ok(()) }, |_| Retry::No).await;
        assert!(other.is_ok());
        let mut sent = Vec::new();
        for _ in 0..2 {
            let at: Result<Instant, ()> = pacer
                .run(&1, || async { Ok(Instant::now()) }, |_| Retry::No)
                .await;
            sent.extend(at.ok());
        }
        // The first call of key 1 waited for the bot-wide token; the second
        // still keeps a full second from it.
        assert_eq!(sent.len(), 2);
        assert!(sent[1].duration_since(sent[0]) >= Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn non_rate_limit_errors_are_returned() {
        let pacer: Pacer<i64> = Pacer::new(per_second(30), |_| Vec::new());
        let r: Result<(), &str> = pacer
            .run(&1, || async { Err("bad request") }, |_| Retry::No)
            .await;
        assert_eq!(r, Err("bad request"));
    }

    /// The most calls in any half-open window `[t, t + window)`.
    fn busiest_window(times: &[Instant], window: Duration) -> usize {
        times
            .iter()
            .map(|start| {
                times
                    .iter()
                    .filter(|t| **t >= *start && **t < *start + window)
                    .count()
            })
            .max()
            .unwrap_or(0)
    }

    #[tokio::test(start_paused = true)]
    async fn a_window_quota_never_exceeds_its_window_and_still_bursts() {
        let margin = Duration::from_millis(50);
        let channel = Pacer::quota_within(5, Duration::from_secs(5), 2, margin);
        let pacer: Pacer<i64> = Pacer::new(per_second(1000), move |_| vec![channel]);
        let mut sent = Vec::new();
        for _ in 0..21 {
            let at: Result<Instant, ()> = pacer
                .run(&1, || async { Ok(Instant::now()) }, |_| Retry::No)
                .await;
            sent.extend(at.ok());
        }
        assert_eq!(sent.len(), 21);
        assert_eq!(busiest_window(&sent, Duration::from_secs(5) + margin), 5);
        assert!(
            sent[1].duration_since(sent[0]) < Duration::from_millis(10),
            "two calls go out at once after a quiet spell"
        );
        // Sustained: 4 per 5.05 s, so 21 calls take 19 periods.
        assert!(sent[20].duration_since(sent[0]) < Duration::from_secs(25));
    }

    /// A backlog of 300 calls of 300 keys: served first come, first served,
    /// at 30 per 1.05 s with burst 1 (28.5/s), never more in any window.
    #[tokio::test(start_paused = true)]
    async fn a_backlog_is_served_in_arrival_order_at_the_full_rate() {
        let margin = Duration::from_millis(50);
        let bot = Pacer::quota_within(30, Duration::from_secs(1), 1, margin);
        let pacer: Arc<Pacer<i64>> = Arc::new(Pacer::new(bot, |_| Vec::new()));
        let order = Arc::new(StdMutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for key in 0..300_i64 {
            let (pacer, order) = (pacer.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let r: Result<(), ()> = pacer
                    .run(
                        &key,
                        || async {
                            order
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push((key, Instant::now()));
                            Ok(())
                        },
                        |_| Retry::No,
                    )
                    .await;
                r.is_ok()
            }));
            // Each arrives after the one before has queued; from the 100th on
            // they come one every 7 ms, often just as a token frees up — a
            // racing newcomer would take it before the calls already waiting.
            tokio::task::yield_now().await;
            if key >= 100 {
                tokio::time::sleep(Duration::from_millis(7)).await;
            }
        }
        for t in tasks {
            assert!(t.await.is_ok_and(|ok| ok));
        }
        let order = order.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let keys: Vec<i64> = order.iter().map(|(k, _)| *k).collect();
        let sorted: Vec<i64> = (0..300).collect();
        assert_eq!(keys, sorted, "not first come, first served");
        let times: Vec<Instant> = order.iter().map(|(_, t)| *t).collect();
        assert!(busiest_window(&times, Duration::from_secs(1) + margin) <= 30);
        // 299 periods of 35.07 ms: 10.485 s for 300 calls (28.5/s).
        let took = times[299].duration_since(times[0]);
        assert!(took <= Duration::from_millis(10_500), "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_bot_wide_window_holds_across_keys() {
        let margin = Duration::from_millis(50);
        let bot = Pacer::quota_within(30, Duration::from_secs(1), 3, margin);
        let pacer: Arc<Pacer<i64>> = Arc::new(Pacer::new(bot, |_| Vec::new()));
        let sent = Arc::new(StdMutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for key in 0..100 {
            let (pacer, sent) = (pacer.clone(), sent.clone());
            tasks.push(tokio::spawn(async move {
                let r: Result<(), ()> = pacer
                    .run(
                        &key,
                        || async {
                            sent.lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push(Instant::now());
                            Ok(())
                        },
                        |_| Retry::No,
                    )
                    .await;
                r.is_ok()
            }));
        }
        for t in tasks {
            assert!(t.await.is_ok_and(|ok| ok));
        }
        let sent = sent.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(sent.len(), 100);
        assert!(busiest_window(&sent, Duration::from_secs(1) + margin) <= 30);
        // A Telegram group: 20 per minute on top of 1 per second.
        let group = Pacer::quota_within(20, Duration::from_secs(60), 3, margin);
        let chat = Pacer::quota_within(1, Duration::from_secs(1), 1, margin);
        let pacer: Pacer<i64> = Pacer::new(bot, move |_| vec![chat, group]);
        let mut sent = Vec::new();
        for _ in 0..45 {
            let at: Result<Instant, ()> = pacer
                .run(&-100, || async { Ok(Instant::now()) }, |_| Retry::No)
                .await;
            sent.extend(at.ok());
        }
        assert_eq!(busiest_window(&sent, Duration::from_secs(60) + margin), 20);
        assert_eq!(busiest_window(&sent, Duration::from_secs(1) + margin), 1);
    }

    /// Lowest-priority calls (typing) never delay a queued call and are
    /// dropped, not queued, while a backlog lasts; once it drains they go.
    #[tokio::test(start_paused = true)]
    async fn idle_only_calls_give_way_to_a_backlog_and_are_dropped() {
        let bot = Quota::with_period(Duration::from_millis(100)).unwrap();
        let pacer: Arc<Pacer<i64>> = Arc::new(Pacer::new(bot, |_| Vec::new()));
        let sent = Arc::new(StdMutex::new(Vec::new()));
        let tasks = backlog(&pacer, 0..20, &sent).await;
        let start = Instant::now();
        // Typing tries every 10 ms of the 1.9 s backlog, in a chat of its own.
        let mut typed = 0;
        while sent.lock().unwrap_or_else(|p| p.into_inner()).len() < 20 {
            let r: Option<Result<(), ()>> = pacer
                .run_if_idle(&[&99], || async { Ok(()) }, |_| Retry::No)
                .await;
            typed += usize::from(r.is_some());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for t in tasks {
            assert!(t.await.is_ok_and(|ok| ok));
        }
        assert_eq!(typed, 0, "typing went out while sends were queued");
        let sent = sent.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for (i, at) in sent.iter().enumerate() {
            // On the schedule of one per period (each waiter is woken the
            // timer slack early, a paused clock never late), as if typing had
            // never asked.
            let mut due = start + Duration::from_millis(100) * u32::try_from(i).unwrap();
            if i > 0 {
                due -= TIMER_SLACK;
            }
            assert_eq!(at.duration_since(start), due.duration_since(start));
        }
        // The backlog is gone: the next free token goes to typing.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r: Option<Result<(), ()>> = pacer
            .run_if_idle(&[&99], || async { Ok(()) }, |_| Retry::No)
            .await;
        assert!(r.is_some_and(|r| r.is_ok()));

        // A call running in a quiet key holds typing back, wherever it goes.
        let release = Arc::new(tokio::sync::Notify::new());
        let held = release.clone();
        let p = pacer.clone();
        let holder = tokio::spawn(async move {
            let r: Result<(), ()> = p
                .run(
                    &7,
                    || async {
                        held.notified().await;
                        Ok(())
                    },
                    |_| Retry::No,
                )
                .await;
            r.is_ok()
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let r: Option<Result<(), ()>> = pacer
            .run_if_idle(&[&7], || async { Ok(()) }, |_| Retry::No)
            .await;
        assert!(r.is_none(), "typing while the chat's message is on its way");
        release.notify_one();
        assert!(holder.await.is_ok_and(|ok| ok));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_gave_way_is_woken_when_the_chats_call_ends() {
        let pacer: Arc<Pacer<i64>> = Arc::new(Pacer::new(per_second(30), |_| vec![per_second(1)]));
        // No lane, and an idle lane: a short nap, never a spin.
        let start = Instant::now();
        pacer.wait_idle(&[&7], Duration::from_secs(5)).await;
        assert_eq!(start.elapsed(), MIN_NAP);
        let r: Result<(), ()> = pacer.run(&7, || async { Ok(()) }, |_| Retry::No).await;
        assert!(r.is_ok());
        let start = Instant::now();
        pacer.wait_idle(&[&7], Duration::from_secs(5)).await;
        assert_eq!(start.elapsed(), MIN_NAP);

        // The bot paused by a global 429 (a lowest-priority call's own): the
        // wait lasts the pause.
        let r: Option<Result<(), Duration>> = pacer
            .run_if_idle(
                &[&8],
                || async { Err(Duration::from_secs(4)) },
                |d| Retry::After {
                    delay: *d,
                    global: true,
                },
            )
            .await;
        assert!(r.is_some_and(|r| r.is_err()));
        let start = Instant::now();
        pacer.wait_idle(&[&7], Duration::from_secs(60)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(4));

        // A call holds the chat for 3 s: the waiter wakes as it ends.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let p = pacer.clone();
        let holder = tokio::spawn(async move {
            let r: Result<(), ()> = p
                .run(
                    &7,
                    || async {
                        tokio::time::sleep(Duration::from_secs(3)).await;
                        Ok(())
                    },
                    |_| Retry::No,
                )
                .await;
            r.is_ok()
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        pacer.wait_idle(&[&7], Duration::from_secs(60)).await;
        // The quota (1/s) had replenished; the call ran at once for 3 s.
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        assert!(holder.await.is_ok_and(|ok| ok));
        let r: Option<Result<(), ()>> = pacer
            .run_if_idle(&[&7], || async { Ok(()) }, |_| Retry::No)
            .await;
        assert!(r.is_some(), "the chat is idle after the wake-up");

        // A call dropped midway wakes the waiter too; `within` bounds a wait.
        let p = pacer.clone();
        let dropped = tokio::spawn(async move {
            let never = || std::future::pending::<Result<(), ()>>();
            let _ =
                tokio::time::timeout(Duration::from_secs(2), p.run(&7, never, |_| Retry::No)).await;
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        pacer.wait_idle(&[&7], Duration::from_secs(60)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        assert!(dropped.await.is_ok());
        let p = pacer.clone();
        let long = tokio::spawn(async move {
            let never = || std::future::pending::<Result<(), ()>>();
            let _ = tokio::time::timeout(Duration::from_secs(30), p.run(&7, never, |_| Retry::No))
                .await;
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        pacer.wait_idle(&[&7], Duration::from_secs(1)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        long.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_draft_that_gave_way_to_its_own_pause_waits_the_pause_out() {
        let pacer: Pacer<i64> = Pacer::new(per_second(30), |_| vec![per_second(1)]);
        // The drafts' key (9) of chat 7 paused by a 429 of its own.
        let r: Option<Result<(), Duration>> = pacer
            .run_if_free(
                &9,
                &[&7],
                Duration::from_millis(263),
                || async { Err(Duration::from_secs(6)) },
                |d| Retry::After {
                    delay: *d,
                    global: false,
                },
            )
            .await;
        assert!(r.is_some_and(|r| r.is_err()));
        // Waiting on the chat alone is a nap; on both, the pause: no spin.
        let start = Instant::now();
        pacer.wait_idle(&[&7], Duration::from_secs(60)).await;
        assert_eq!(start.elapsed(), MIN_NAP);
        let start = Instant::now();
        pacer.wait_idle(&[&7, &9], Duration::from_secs(60)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(6) - MIN_NAP);
        let r: Option<Result<(), ()>> = pacer
            .run_if_free(
                &9,
                &[&7],
                Duration::ZERO,
                || async { Ok(()) },
                |_| Retry::No,
            )
            .await;
        assert!(r.is_some(), "the draft goes once the pause is over");
    }

    #[test]
    fn window_quotas_round_the_period_up() {
        let q = Pacer::quota_within(20, Duration::from_secs(60), 3, Duration::ZERO);
        assert_eq!(q.burst_size().get(), 3);
        // (60 s + 2 ms slack) / 18 = 3.333444… s, rounded up to the nanosecond.
        assert_eq!(q.replenish_interval(), Duration::from_nanos(3_333_444_445));
        let q = Pacer::quota_within(1, Duration::from_secs(1), 5, Duration::ZERO);
        assert_eq!(
            (q.burst_size().get(), q.replenish_interval()),
            (1, Duration::from_millis(1_002))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn idle_lanes_are_evicted_so_memory_stays_bounded() {
        let pacer: Pacer<i64> = Pacer::new(per_second(1_000_000), |_| vec![per_second(1)]);
        for key in 0..2_000 {
            let r: Result<(), ()> = pacer.run(&key, || async { Ok(()) }, |_| Retry::No).await;
            assert!(r.is_ok());
            if key % 100 == 99 {
                // Every key's quota replenishes (1 s) before the next hundred.
                tokio::time::advance(Duration::from_secs(2)).await;
            }
        }
        assert!(
            pacer.lane_count() <= 2 * MIN_SWEEP,
            "{} lanes kept",
            pacer.lane_count()
        );

        // A lane whose quota is still replenishing, or that a call holds, is kept.
        let hourly = Quota::with_period(Duration::from_secs(3600)).unwrap_or(per_second(1));
        let pacer: Arc<Pacer<i64>> = Arc::new(Pacer::new(per_second(1_000_000), move |k| {
            if *k == -1 {
                vec![hourly]
            } else {
                vec![per_second(1)]
            }
        }));
        let r: Result<(), ()> = pacer.run(&-1, || async { Ok(()) }, |_| Retry::No).await;
        assert!(r.is_ok());
        let release = Arc::new(tokio::sync::Notify::new());
        let held = release.clone();
        let holder = {
            let pacer = pacer.clone();
            tokio::spawn(async move {
                let r: Result<(), ()> = pacer
                    .run(
                        &-2,
                        || async {
                            held.notified().await;
                            Ok(())
                        },
                        |_| Retry::No,
                    )
                    .await;
                r.is_ok()
            })
        };
        tokio::task::yield_now().await;
        for key in 0..(MIN_SWEEP as i64 * 4) {
            tokio::time::advance(Duration::from_secs(1)).await;
            let r: Result<(), ()> = pacer.run(&key, || async { Ok(()) }, |_| Retry::No).await;
            assert!(r.is_ok());
        }
        {
            let lanes = pacer.lanes.lock().unwrap_or_else(|p| p.into_inner());
            assert!(lanes.map.contains_key(&-1), "still replenishing");
            assert!(lanes.map.contains_key(&-2), "a call holds it");
            assert!(lanes.map.len() <= 2 * MIN_SWEEP);
        }
        release.notify_one();
        assert!(holder.await.is_ok_and(|ok| ok));
    }
}
