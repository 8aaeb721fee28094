//! Calls at the lowest priority: ones that go only if they can at once,
//! without standing in any queued call's way — typing and reactions
//! ([`Pacer::run_if_idle`]), and updates with a budget of their own of
//! which only the latest matters, such as a streamed draft
//! ([`Pacer::run_if_free`]); and [`Pacer::wait_idle`], the moment a call
//! that gave way asks again.

use super::{read, set_later, InOrder, Pacer, Retry, MIN_NAP};
use std::future::Future;
use std::hash::Hash;
use std::time::Duration;
use tokio::time::Instant;

impl<K> Pacer<K>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// Runs `op` at the lowest priority: only if it can go at once without
    /// standing in anyone's way, else returns `None` without running it.
    ///
    /// It goes when no call waits for the bot-wide token, the bot-wide quota
    /// has one now, no 429 pause runs, and none of the `quiet` keys has a call
    /// running, queued or paused (a typing indicator is pointless while the
    /// chat's message is on its way). It counts against no key's quota, holds
    /// no key's order, and a 429 is not retried (a bot-wide one still pauses
    /// every call). A call that comes later waits at most one bot-wide
    /// period for the token this took; a call already waiting never does.
    pub async fn run_if_idle<T, E, Fut>(
        &self,
        quiet: &[&K],
        op: impl FnOnce() -> Fut,
        classify: impl Fn(&E) -> Retry,
    ) -> Option<Result<T, E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        if !self.take_global_if_quiet(quiet) {
            return None;
        }
        let result = op().await;
        if let Err(e) = &result {
            if let Retry::After { delay, global } = classify(e) {
                self.rate_limited
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if global {
                    set_later(&self.global_paused_until, Instant::now() + delay);
                }
            }
        }
        Some(result)
    }

    /// What a lowest-priority call that gave way waits for before it asks
    /// again, at most `within`: the end of the call of one of `keys` that
    /// runs or waits (the first such key's), else the end of the pauses
    /// (the keys' and the bot's) or the bot-wide token's next slot — at
    /// least [`MIN_NAP`], so a caller asking in a loop never spins. `keys`
    /// are those the call gave way to: for a status reaction the chat's,
    /// for a draft the chat's and the drafts' own.
    pub async fn wait_idle(&self, keys: &[&K], within: Duration) {
        let lanes: Vec<_> = {
            let lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
            keys.iter()
                .filter_map(|k| lanes.map.get(*k).cloned())
                .collect()
        };
        let mut free_in = self.bot_free_in();
        for lane in lanes {
            let ended = lane.ended.notified();
            tokio::pin!(ended);
            // Registered before the look, so an end between the two is not missed.
            ended.as_mut().enable();
            if lane.order.try_lock().is_err() {
                let _ = tokio::time::timeout(within, ended).await;
                return;
            }
            if let Some(until) = read(&lane.paused_until) {
                free_in = free_in.max(until.saturating_duration_since(Instant::now()));
            }
        }
        tokio::time::sleep(free_in.max(MIN_NAP).min(within)).await;
    }

    /// How long until a call could take the bot-wide token: the rest of a
    /// global pause, or the wait for the token's next slot.
    fn bot_free_in(&self) -> Duration {
        let now = Instant::now();
        let pause = read(&self.global_paused_until)
            .map_or(Duration::ZERO, |until| until.saturating_duration_since(now));
        let token = self
            .global
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .wait(now);
        pause.max(token)
    }

    /// Runs `op` for `key` below every queued call, like
    /// [`Self::run_if_idle`], but within a budget of its own, and waiting up
    /// to `within` for a bot-wide token that no queued call wants. It goes
    /// once no call waits for the bot-wide token and the token is there,
    /// with no global pause, none of the `quiet` keys busy (as for
    /// `run_if_idle`), no other call of `key` running, `key` not paused by a
    /// 429 and every quota of `key` admitting it; calls like it wait for
    /// their turn in arrival order. It returns `None` without running `op`
    /// when a `quiet` key is busy, a pause runs, another call of `key` is on
    /// its way, or it could not go within `within` (the caller tries again
    /// later).
    ///
    /// It counts against `key`'s quotas and the bot-wide one, never against
    /// a `quiet` key's. A 429 is not retried: it pauses `key` (or, when
    /// bot-wide, every key), so the next try gives way until it ends. For
    /// updates of which only the latest matters (a streamed draft): one
    /// that gives way is carried by the next.
    pub async fn run_if_free<T, E, Fut>(
        &self,
        key: &K,
        quiet: &[&K],
        within: Duration,
        op: impl FnOnce() -> Fut,
        classify: impl Fn(&E) -> Retry,
    ) -> Option<Result<T, E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let deadline = Instant::now() + within;
        let lane = self.lane(key);
        let _order = InOrder {
            guard: Some(lane.order.try_lock().ok()?),
            ended: &lane.ended,
        };
        let _turn = tokio::time::timeout_at(deadline, self.free_queue.lock())
            .await
            .ok()?;
        loop {
            let now = Instant::now();
            if read(&lane.paused_until).is_some_and(|u| u > now) {
                return None;
            }
            let key_wait = {
                let quotas = lane.quotas.lock().unwrap_or_else(|p| p.into_inner());
                quotas.iter().map(|q| q.wait(now)).max().unwrap_or_default()
            };
            let wait = if key_wait.is_zero() {
                match self.chance(quiet) {
                    Chance::Go => break,
                    Chance::No => return None,
                    Chance::Wait(wait) => wait,
                }
            } else {
                key_wait
            };
            if now + wait > deadline {
                return None;
            }
            tokio::time::sleep(wait).await;
        }
        let now = Instant::now();
        lane.quotas
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter_mut()
            .for_each(|q| q.count(now));
        let result = op().await;
        if let Err(e) = &result {
            if let Retry::After { delay, global } = classify(e) {
                self.rate_limited
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let slot = if global {
                    &self.global_paused_until
                } else {
                    &lane.paused_until
                };
                set_later(slot, Instant::now() + delay);
            }
        }
        Some(result)
    }

    /// Takes the bot-wide token if a lowest-priority call may have it now:
    /// no global pause, none of the `quiet` keys with a call running, queued
    /// or paused, no call waiting for the token, and the token there.
    fn take_global_if_quiet(&self, quiet: &[&K]) -> bool {
        matches!(self.chance(quiet), Chance::Go)
    }

    /// Whether a lowest-priority call may take the bot-wide token now (and
    /// if so takes it), may later, or should give up: a global pause or a
    /// busy `quiet` key (a call running, queued or paused) is a no; a call
    /// waiting for the token, or the token not there yet, is a wait.
    fn chance(&self, quiet: &[&K]) -> Chance {
        let now = Instant::now();
        if read(&self.global_paused_until).is_some_and(|u| u > now) {
            return Chance::No;
        }
        {
            let lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
            let busy = quiet.iter().filter_map(|k| lanes.map.get(*k)).any(|lane| {
                lane.order.try_lock().is_err() || read(&lane.paused_until).is_some_and(|u| u > now)
            });
            if busy {
                return Chance::No;
            }
        }
        let mut global = self.global.lock().unwrap_or_else(|p| p.into_inner());
        let Ok(_queue) = self.global_queue.try_lock() else {
            // A queued call takes the next token; look again after it.
            return Chance::Wait(global.interval);
        };
        let wait = global.wait(now);
        if wait.is_zero() {
            global.count(now);
            Chance::Go
        } else {
            Chance::Wait(wait)
        }
    }
}

/// What a lowest-priority call may do about the bot-wide token now.
enum Chance {
    /// It took the token: go.
    Go,
    /// Not now; look again after this long.
    Wait(Duration),
    /// Give up: a pause runs or a `quiet` key is busy.
    No,
}
