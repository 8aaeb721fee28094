//! Per-user inbound rate limit with one polite notice per window.

use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;
use switchboard_platform::{Platform, TokioClock, UserId};
use tokio::time::Instant;

type Key = (Platform, UserId);

/// One "slow down" notice per user per window.
const NOTICE_WINDOW: Duration = Duration::from_secs(60);

/// The verdict on one inbound message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    Allowed,
    /// Over the limit: tell the user once per window.
    Notice(String),
    /// Over the limit and already told.
    Silent,
}

pub(crate) struct UserLimiter {
    limiter: RateLimiter<Key, HashMapStateStore<Key>, TokioClock, NoOpMiddleware<Nanos>>,
    noticed: Mutex<HashMap<Key, Instant>>,
    per_minute: u32,
}

impl UserLimiter {
    pub(crate) fn new(per_minute: u32) -> UserLimiter {
        let n = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        UserLimiter {
            limiter: RateLimiter::hashmap_with_clock(Quota::per_minute(n), TokioClock::new()),
            noticed: Mutex::new(HashMap::new()),
            per_minute,
        }
    }

    pub(crate) fn check(&self, platform: Platform, user: UserId) -> Limit {
        let key = (platform, user);
        if self.limiter.check_key(&key).is_ok() {
            return Limit::Allowed;
        }
        let mut noticed = self.noticed.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        match noticed.get(&key) {
            Some(t) if now.duration_since(*t) < NOTICE_WINDOW => Limit::Silent,
            _ => {
                noticed.insert(key, now);
                Limit::Notice(format!(
                    "You're sending messages faster than I can take them (limit {} per minute). \
                     I'll ignore new ones for a moment — please wait a little.",
                    self.per_minute
                ))
            }
        }
    }
}

impl UserLimiter {
    /// Forgets users whose quota has fully replenished and whose notice window
    /// has passed, so the state stays as small as the set of recent senders.
    pub(crate) fn prune(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
        let now = Instant::now();
        self.noticed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, t| now.duration_since(*t) < NOTICE_WINDOW);
    }

    #[cfg(test)]
    fn tracked(&self) -> (usize, usize) {
        let noticed = self.noticed.lock().unwrap_or_else(|p| p.into_inner()).len();
        (self.limiter.len(), noticed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn over_the_limit_gets_one_notice_then_silence_then_recovers() {
        let l = UserLimiter::new(3);
        let u = UserId(1);
        for _ in 0..3 {
            assert_eq!(l.check(Platform::Telegram, u), Limit::Allowed);
        }
        assert!(matches!(l.check(Platform::Telegram, u), Limit::Notice(_)));
        assert_eq!(l.check(Platform::Telegram, u), Limit::Silent);
        assert_eq!(
            l.check(Platform::Telegram, UserId(2)),
            Limit::Allowed,
            "other users unaffected"
        );
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(l.check(Platform::Telegram, u), Limit::Allowed);
    }

    #[tokio::test(start_paused = true)]
    async fn pruning_forgets_users_who_went_quiet() {
        let l = UserLimiter::new(1);
        for user in 0..100 {
            l.check(Platform::Telegram, UserId(user));
        }
        l.check(Platform::Telegram, UserId(0));
        assert_eq!(l.tracked(), (100, 1));
        l.prune();
        assert_eq!(l.tracked(), (100, 1), "recent senders are kept");
        // governor forgets a key once its state is indistinguishable from a
        // fresh one: one period after the quota fully replenished.
        tokio::time::advance(Duration::from_secs(121)).await;
        l.prune();
        assert_eq!(l.tracked(), (0, 0));
    }
}
