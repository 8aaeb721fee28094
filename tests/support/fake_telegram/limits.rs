//! Telegram's published flood limits (1 msg/s per chat, 20 msg/min per group,
//! 30 msg/s per bot) as token buckets (GCRA), with a small tolerance for
//! network jitter between the client's limiter and this server.

use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;

/// One bucket: `burst` calls at once, refilled one per `interval`.
#[derive(Debug, Clone)]
struct Bucket {
    interval: Duration,
    burst: u32,
    /// Theoretical arrival time of the next call.
    tat: Option<Instant>,
}

impl Bucket {
    fn new(per: Duration, count: u32) -> Self {
        let count = count.max(1);
        Self {
            interval: per / count,
            burst: count,
            tat: None,
        }
    }

    /// How long the call at `now` must still wait (zero when allowed).
    fn wait(&self, now: Instant, tolerance: Duration) -> Duration {
        let tau = self.interval * (self.burst - 1);
        match self.tat {
            Some(tat) => tat
                .checked_sub(tau)
                .map(|earliest| earliest.saturating_duration_since(now + tolerance))
                .unwrap_or_default(),
            None => Duration::ZERO,
        }
    }

    fn commit(&mut self, now: Instant) {
        let base = self.tat.map_or(now, |t| t.max(now));
        self.tat = Some(base + self.interval);
    }
}

/// The limits in force; `None` in [`super::FakeOptions`] disables them.
#[derive(Debug, Clone, Copy)]
pub struct PublishedLimits {
    pub per_chat_per_second: u32,
    pub per_group_per_minute: u32,
    pub global_per_second: u32,
    pub tolerance: Duration,
}

impl Default for PublishedLimits {
    fn default() -> Self {
        Self {
            per_chat_per_second: 1,
            per_group_per_minute: 20,
            global_per_second: 30,
            tolerance: Duration::from_millis(150),
        }
    }
}

#[derive(Debug)]
pub struct Limits {
    config: PublishedLimits,
    global: Bucket,
    chats: HashMap<i64, Bucket>,
    groups: HashMap<i64, Bucket>,
}

impl Limits {
    pub fn new(config: PublishedLimits) -> Self {
        Self {
            global: Bucket::new(Duration::from_secs(1), config.global_per_second),
            chats: HashMap::new(),
            groups: HashMap::new(),
            config,
        }
    }

    /// `Err((retry_after_secs, which limit))` when a message to `chat` now
    /// exceeds a limit; otherwise the message is counted.
    pub fn check(&mut self, chat: i64, is_group: bool) -> Result<(), (u32, &'static str)> {
        let now = Instant::now();
        let cfg = self.config;
        let chat_bucket = self
            .chats
            .entry(chat)
            .or_insert_with(|| Bucket::new(Duration::from_secs(1), cfg.per_chat_per_second));
        let mut waits = vec![
            (chat_bucket.wait(now, cfg.tolerance), "per chat"),
            (self.global.wait(now, cfg.tolerance), "per bot"),
        ];
        if is_group {
            let group = self
                .groups
                .entry(chat)
                .or_insert_with(|| Bucket::new(Duration::from_secs(60), cfg.per_group_per_minute));
            waits.push((group.wait(now, cfg.tolerance), "per group"));
        }
        if let Some((wait, which)) = waits.into_iter().filter(|(w, _)| !w.is_zero()).max() {
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            return Err((u32::try_from(secs.max(1)).unwrap_or(u32::MAX), which));
        }
        self.global.commit(now);
        if let Some(b) = self.chats.get_mut(&chat) {
            b.commit(now);
        }
        if is_group {
            if let Some(b) = self.groups.get_mut(&chat) {
                b.commit(now);
            }
        }
        Ok(())
    }
}
