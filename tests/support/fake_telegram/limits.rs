//! Telegram's published flood limits, enforced the way Telegram counts them:
//! a sliding window of the calls it accepted (1 per second in a chat, 20 per
//! minute in a group, 30 per second for the bot), with no burst allowance and
//! no tolerance. Sends and edits (text or keyboard) count alike. A private
//! chat's drafts (`sendMessageDraft`) count in a window of their own, one a
//! second like messages, and in the bot's 30 a second: Telegram publishes
//! no figure for drafts, and bots updating a draft every 300 ms get 429s.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;
use tokio::time::Instant;

/// At most `limit` calls in any window of length `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub limit: u32,
    pub per: Duration,
}

impl Window {
    pub const fn new(limit: u32, per: Duration) -> Self {
        Self { limit, per }
    }
}

/// The limits in force; `None` in [`super::FakeOptions`] disables them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishedLimits {
    /// Every chat, private or group: 1 message per second.
    pub per_chat: Window,
    /// Groups and supergroups, on top of `per_chat`: 20 messages per minute.
    pub per_group: Window,
    /// The whole bot: 30 messages per second.
    pub per_bot: Window,
}

impl Default for PublishedLimits {
    fn default() -> Self {
        Self {
            per_chat: Window::new(1, Duration::from_secs(1)),
            per_group: Window::new(20, Duration::from_secs(60)),
            per_bot: Window::new(30, Duration::from_secs(1)),
        }
    }
}

impl PublishedLimits {
    /// Telegram's limits with every window `factor` times shorter (the counts
    /// unchanged), so a test can cross them in a fraction of the time.
    pub fn scaled_down(factor: u32) -> Self {
        let f = factor.max(1);
        let real = Self::default();
        let scale = |w: Window| Window::new(w.limit, w.per / f);
        Self {
            per_chat: scale(real.per_chat),
            per_group: scale(real.per_group),
            per_bot: scale(real.per_bot),
        }
    }
}

/// The times of the calls accepted within the last window, oldest first.
#[derive(Debug, Clone)]
pub struct SlidingWindow {
    window: Window,
    accepted: VecDeque<Instant>,
}

impl SlidingWindow {
    pub fn new(window: Window) -> Self {
        Self {
            window,
            accepted: VecDeque::new(),
        }
    }

    /// How long a call at `now` must still wait (zero: it fits). A call fits
    /// when fewer than `limit` accepted calls lie in `(now - per, now]`, i.e.
    /// every half-open window `[t, t + per)` holds at most `limit` calls.
    pub fn wait(&mut self, now: Instant) -> Duration {
        while self
            .accepted
            .front()
            .is_some_and(|t| *t + self.window.per <= now)
        {
            self.accepted.pop_front();
        }
        let limit = usize::try_from(self.window.limit).unwrap_or(usize::MAX);
        if self.accepted.len() < limit {
            return Duration::ZERO;
        }
        // The call fits once enough of the oldest ones have left the window.
        let index = self.accepted.len() - limit;
        self.accepted.get(index).map_or(Duration::ZERO, |t| {
            (*t + self.window.per).duration_since(now)
        })
    }

    /// Counts an accepted call at `now`.
    pub fn record(&mut self, now: Instant) {
        self.accepted.push_back(now);
    }
}

#[derive(Debug)]
pub struct Limits {
    config: PublishedLimits,
    bot: SlidingWindow,
    chats: HashMap<i64, SlidingWindow>,
    groups: HashMap<i64, SlidingWindow>,
    drafts: HashMap<i64, SlidingWindow>,
}

impl Limits {
    pub fn new(config: PublishedLimits) -> Self {
        Self {
            bot: SlidingWindow::new(config.per_bot),
            chats: HashMap::new(),
            groups: HashMap::new(),
            drafts: HashMap::new(),
            config,
        }
    }

    /// [`Limits::check`] for a draft in the private chat `chat`: its own
    /// per-chat window, and the bot's.
    pub fn check_draft(&mut self, chat: i64, now: Instant) -> Result<(), (u32, &'static str)> {
        let cfg = self.config;
        let window = self
            .drafts
            .entry(chat)
            .or_insert_with(|| SlidingWindow::new(cfg.per_chat));
        let waits = [
            (window.wait(now), "per chat drafts"),
            (self.bot.wait(now), "per bot"),
        ];
        if let Some((wait, which)) = waits.into_iter().filter(|(w, _)| !w.is_zero()).max() {
            return Err((retry_after(wait), which));
        }
        self.bot.record(now);
        window.record(now);
        Ok(())
    }

    /// `Err((retry_after_secs, which limit))` when a message to `chat` at
    /// `now` exceeds a limit; otherwise the message is counted against all of
    /// them. `retry_after` is whole seconds, rounded up, at least 1 (Telegram).
    pub fn check(
        &mut self,
        chat: i64,
        is_group: bool,
        now: Instant,
    ) -> Result<(), (u32, &'static str)> {
        let cfg = self.config;
        let chat_window = self
            .chats
            .entry(chat)
            .or_insert_with(|| SlidingWindow::new(cfg.per_chat));
        let mut waits = vec![
            (chat_window.wait(now), "per chat"),
            (self.bot.wait(now), "per bot"),
        ];
        if is_group {
            let group = self
                .groups
                .entry(chat)
                .or_insert_with(|| SlidingWindow::new(cfg.per_group));
            waits.push((group.wait(now), "per group"));
        }
        if let Some((wait, which)) = waits.into_iter().filter(|(w, _)| !w.is_zero()).max() {
            return Err((retry_after(wait), which));
        }
        self.bot.record(now);
        if let Some(w) = self.chats.get_mut(&chat) {
            w.record(now);
        }
        if is_group {
            if let Some(w) = self.groups.get_mut(&chat) {
                w.record(now);
            }
        }
        Ok(())
    }
}

/// A wait as Telegram's `retry_after`: whole seconds, rounded up, at least 1.
fn retry_after(wait: Duration) -> u32 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    u32::try_from(secs.max(1)).unwrap_or(u32::MAX)
}
