//! Outbound pacing shared by adapters: governor limiters per chat and per bot,
//! one-at-a-time order per chat, and 429 pauses that resume from the refused call.

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::{state::InMemoryState, state::NotKeyed, Quota, RateLimiter};
use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

type Limiter = RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<Nanos>>;
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

fn limiter(quota: Quota, clock: TokioClock) -> Limiter {
    RateLimiter::direct_with_clock(quota, clock)
}

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
        let interval = quota.replenish_interval();
        Self {
            interval,
            tolerance: interval * (quota.burst_size().get() - 1),
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
    quotas: StdMutex<Vec<KeyQuota>>,
    paused_until: StdMutex<Option<Instant>>,
}

/// Paces outbound calls: every call for a key runs after the previous one
/// finished (FIFO), within the key's quotas and the bot-wide quota, and never
/// while that key (or the whole bot) is paused by a 429.
pub struct Pacer<K> {
    clock: TokioClock,
    global: Limiter,
    global_paused_until: StdMutex<Option<Instant>>,
    lanes: StdMutex<HashMap<K, Arc<Lane>>>,
    quotas_for: QuotasFor<K>,
    max_retries: u32,
    rate_limited: std::sync::atomic::AtomicU64,
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
        let clock = TokioClock {
            origin: Instant::now(),
        };
        Self {
            clock,
            global: limiter(global, clock),
            global_paused_until: StdMutex::new(None),
            lanes: StdMutex::new(HashMap::new()),
            quotas_for: Box::new(quotas_for),
            max_retries: 20,
            rate_limited: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// How many times the platform answered 429 so far.
    pub fn rate_limited_count(&self) -> u64 {
        self.rate_limited.load(std::sync::atomic::Ordering::Relaxed)
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
        let lane = self.lane(key);
        let _order = lane.order.lock().await;
        let mut attempts = 0;
        loop {
            self.wait_ready(&lane).await;
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

    fn lane(&self, key: &K) -> Arc<Lane> {
        let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        lanes
            .entry(key.clone())
            .or_insert_with(|| {
                Arc::new(Lane {
                    order: Mutex::new(()),
                    quotas: StdMutex::new(
                        (self.quotas_for)(key)
                            .into_iter()
                            .map(KeyQuota::new)
                            .collect(),
                    ),
                    paused_until: StdMutex::new(None),
                })
            })
            .clone()
    }

    async fn wait_ready(&self, lane: &Lane) {
        loop {
            let pause = [read(&self.global_paused_until), read(&lane.paused_until)]
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
            match self.global.check() {
                Ok(()) => {
                    let now = Instant::now();
                    let mut quotas = lane.quotas.lock().unwrap_or_else(|p| p.into_inner());
                    quotas.iter_mut().for_each(|q| q.count(now));
                    return;
                }
                // Nothing of the key was consumed: re-check everything after the wait.
                Err(not_until) => {
                    tokio::time::sleep(not_until.wait_time_from(self.clock.now())).await
                }
            }
        }
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
mod tests {
    use super::*;
    use std::num::NonZeroU32;
    use std::sync::atomic::{AtomicU32, Ordering};

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
}
