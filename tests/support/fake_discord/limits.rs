//! Discord's rate limits as Discord applies them: message creates and edits of
//! a channel share one bucket (`limit` requests, its reset timer starting at
//! the bucket's first request), and every authenticated request counts
//! against the bot's global limit (a sliding window here: no burst, no
//! tolerance). Interaction callbacks and webhooks are outside the global limit.

use super::rest::Answer;
use serde_json::json;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// At most `limit` requests per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub limit: u32,
    pub per: Duration,
}

impl Rate {
    pub const fn new(limit: u32, per: Duration) -> Self {
        Self { limit, per }
    }
}

/// The limits a fake enforces; `None` in the options disables them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscordLimits {
    /// Creates and edits of messages in one channel: 5 per 5 s.
    pub channel_messages: Rate,
    /// Every authenticated request of the bot: 50 per second.
    pub global: Rate,
}

impl Default for DiscordLimits {
    fn default() -> Self {
        Self {
            channel_messages: Rate::new(5, Duration::from_secs(5)),
            global: Rate::new(50, Duration::from_secs(1)),
        }
    }
}

impl DiscordLimits {
    /// Discord's limits with every window `factor` times shorter (the counts
    /// unchanged), so a test can cross them in a fraction of the time.
    pub fn scaled_down(factor: u32) -> Self {
        let f = factor.max(1);
        let real = Self::default();
        Self {
            channel_messages: Rate::new(real.channel_messages.limit, real.channel_messages.per / f),
            global: Rate::new(real.global.limit, real.global.per / f),
        }
    }
}

/// One channel's bucket: the window opened by its first request.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    opened: Instant,
    used: u32,
}

#[derive(Debug)]
pub(crate) struct Limits {
    config: DiscordLimits,
    buckets: HashMap<u64, Bucket>,
    global: VecDeque<Instant>,
    /// 429s answered by the limits themselves (not injected), by scope.
    pub hits: HashMap<&'static str, usize>,
}

/// Headers describing a bucket after a request (`X-RateLimit-*`).
pub(crate) type Headers = Vec<(&'static str, String)>;

fn epoch_after(wait: Duration) -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| (d + wait).as_secs_f64())
}

fn bucket_id(channel: u64) -> String {
    format!("fake-messages-{channel:x}")
}

impl Limits {
    pub fn new(config: DiscordLimits) -> Self {
        Self {
            config,
            buckets: HashMap::new(),
            global: VecDeque::new(),
            hits: HashMap::new(),
        }
    }

    /// Counts a request against the global limit, or refuses it with a global 429.
    pub fn global(&mut self, now: Instant) -> Result<(), Answer> {
        let rate = self.config.global;
        while self.global.front().is_some_and(|t| *t + rate.per <= now) {
            self.global.pop_front();
        }
        let limit = usize::try_from(rate.limit).unwrap_or(usize::MAX);
        if self.global.len() >= limit {
            let index = self.global.len() - limit;
            let wait = self
                .global
                .get(index)
                .map_or(Duration::ZERO, |t| (*t + rate.per).duration_since(now));
            *self.hits.entry("global").or_default() += 1;
            return Err(too_many(wait, true, Vec::new()));
        }
        self.global.push_back(now);
        Ok(())
    }

    /// Counts a message create/edit in `channel`, returning the bucket's
    /// headers, or refuses it with the bucket's 429.
    pub fn channel(&mut self, channel: u64, now: Instant) -> Result<Headers, Answer> {
        let rate = self.config.channel_messages;
        let bucket = self.buckets.entry(channel).or_insert(Bucket {
            opened: now,
            used: 0,
        });
        if now >= bucket.opened + rate.per {
            *bucket = Bucket {
                opened: now,
                used: 0,
            };
        }
        let reset_after = (bucket.opened + rate.per).duration_since(now);
        if bucket.used >= rate.limit {
            *self.hits.entry("channel").or_default() += 1;
            let headers = bucket_headers(channel, rate.limit, 0, reset_after);
            return Err(too_many(reset_after, false, headers));
        }
        bucket.used += 1;
        Ok(bucket_headers(
            channel,
            rate.limit,
            rate.limit - bucket.used,
            reset_after,
        ))
    }
}

fn bucket_headers(channel: u64, limit: u32, remaining: u32, reset_after: Duration) -> Headers {
    vec![
        ("x-ratelimit-limit", limit.to_string()),
        ("x-ratelimit-remaining", remaining.to_string()),
        (
            "x-ratelimit-reset",
            format!("{:.3}", epoch_after(reset_after)),
        ),
        (
            "x-ratelimit-reset-after",
            format!("{:.3}", reset_after.as_secs_f64()),
        ),
        ("x-ratelimit-bucket", bucket_id(channel)),
    ]
}

/// Discord's 429: the JSON body with a float `retry_after`, `Retry-After` in
/// whole seconds (rounded up), and the scope headers.
pub(crate) fn too_many(wait: Duration, global: bool, mut headers: Headers) -> Answer {
    let retry_after = (wait.as_secs_f64() * 1000.0).ceil() / 1000.0;
    headers.push(("retry-after", format!("{}", retry_after.ceil() as u64)));
    headers.push((
        "x-ratelimit-scope",
        if global { "global" } else { "user" }.to_owned(),
    ));
    if global {
        headers.push(("x-ratelimit-global", "true".to_owned()));
    }
    (
        429,
        json!({
            "message": "You are being rate limited.",
            "retry_after": retry_after,
            "global": global,
        }),
        headers,
    )
}
