//! Discord adapter configuration: parsed from `DISCORD_*` variables, every error
//! naming the variable and the fix.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;
use switchboard_platform::{Pacer, Quota, Secret};

/// Everything the Discord adapter needs. Build it with [`DiscordConfig::from_env`]
/// or [`DiscordConfig::new`] and adjust the public fields (tests shorten timings).
#[derive(Debug, Clone)]
pub struct DiscordConfig {
    /// The bot token (`DISCORD_BOT_TOKEN`), without any `Bot ` prefix.
    pub token: Secret,
    /// REST base replacing `https://discord.com` (`DISCORD_API_URL`), e.g.
    /// `http://127.0.0.1:3000`. When set, serenity's own limiter is off and
    /// only ours paces calls.
    pub api_url: Option<String>,
    /// User ids allowed to decide approvals (`DISCORD_APPROVERS`).
    pub approvers: HashSet<u64>,
    /// Role ids whose members may decide approvals (`DISCORD_APPROVER_ROLES`).
    pub approver_roles: HashSet<u64>,
    /// Channels answered without a mention (`DISCORD_FREE_CHANNELS`); threads
    /// under a free channel are free too.
    pub free_channels: HashSet<u64>,
    /// Total shard count of the bot (`DISCORD_SHARDS`, default 1).
    pub shards: u32,
    /// The inclusive range of shards this process runs (`DISCORD_SHARD_RANGE`);
    /// `None` runs all of them.
    pub shard_range: Option<(u32, u32)>,
    /// Per-channel quota on message creates and edits (Discord: 5 per 5 s);
    /// see [`DiscordConfig::new`] for how the default is chosen.
    pub channel_quota: Quota,
    /// Bot-wide request quota (Discord: 50 requests per second).
    pub bot_quota: Quota,
    /// Delays of the adapter's own timers.
    pub timings: DiscordTimings,
    /// Where the newest delivered message per channel is kept across
    /// restarts (`DATA_DIR`), so the next process fetches what was posted
    /// while none ran; `None` keeps it in memory only.
    pub state_dir: Option<PathBuf>,
    /// The status reactions on users' messages (`REACTIONS`, `REACTION_*`);
    /// `None` when off.
    pub reactions: Option<switchboard_platform::StatusEmoji>,
}

/// Timers of the adapter; the defaults match Discord, tests shorten them.
#[derive(Debug, Clone, Copy)]
pub struct DiscordTimings {
    /// Unanswered interactions get a deferred update this long after receipt
    /// (Discord invalidates them after 3 s).
    pub defer_after: Duration,
    /// How often the typing indicator is renewed (it lasts ~10 s on Discord).
    pub typing_interval: Duration,
    /// A typing indicator never outlives this, even if `Idle` never comes.
    pub typing_max: Duration,
    /// Typing starts only for turns still running this long after they
    /// began: a quick answer costs no typing call (it would be one REST call
    /// of the bot's 50/s for an indicator the answer ends at once).
    pub typing_delay: Duration,
    /// Give up looking up a channel's kind after this long (then: plain channel).
    pub lookup_timeout: Duration,
    /// After a failed channel look-up, messages of that channel count as a
    /// plain channel for this long before the look-up is tried again.
    pub lookup_retry: Duration,
    /// Interaction tokens stay usable this long (15 min on Discord).
    pub interaction_ttl: Duration,
    /// An interaction callback not answered within this is given up (it must
    /// reach Discord within 3 s of the press, so waiting longer buys nothing).
    pub callback_timeout: Duration,
    /// Gateway events wait this long so that each channel's events are
    /// forwarded in the order Discord created them (see the gateway module).
    pub reorder_window: Duration,
    /// A file download that receives nothing for this long is given up.
    pub download_stall: Duration,
    /// How often the shards' connection stages are checked for the link
    /// status (`/healthz`, web console) while serenity reconnects.
    pub link_check: Duration,
}

impl Default for DiscordTimings {
    fn default() -> Self {
        Self {
            defer_after: Duration::from_millis(2500),
            typing_interval: Duration::from_secs(8),
            typing_max: Duration::from_secs(15 * 60),
            typing_delay: Duration::from_secs(1),
            lookup_timeout: Duration::from_secs(5),
            lookup_retry: Duration::from_secs(10),
            interaction_ttl: Duration::from_secs(15 * 60),
            callback_timeout: Duration::from_secs(3),
            reorder_window: Duration::from_millis(50),
            download_stall: switchboard_platform::DOWNLOAD_STALL,
            link_check: Duration::from_secs(1),
        }
    }
}

/// A `DISCORD_*` variable that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}: {problem}; {fix}")]
pub struct DiscordConfigError {
    pub var: &'static str,
    pub problem: String,
    pub fix: &'static str,
}

impl DiscordConfigError {
    fn new(var: &'static str, problem: impl Into<String>, fix: &'static str) -> Self {
        Self {
            var,
            problem: problem.into(),
            fix,
        }
    }
}

const ID_LIST_FIX: &str = "use numeric Discord ids separated by commas (Developer Mode → Copy ID)";

/// Time added to Discord's windows so that requests arriving with a little
/// jitter still fall outside the window of the request they follow.
pub const RATE_MARGIN: Duration = Duration::from_millis(50);

impl DiscordConfig {
    /// A configuration with Discord's defaults for `token`.
    ///
    /// The quotas never exceed Discord's windows as Discord counts them (on
    /// arrival; [`Pacer::quota_within`] with [`RATE_MARGIN`]): a GCRA with burst
    /// `b` and period `T` lets `b + ceil(W / T) - 1` requests into a window `W`.
    /// - channel, 5 per 5 s: `b = 2`, `T = 5.052 s / 4 = 1.263 s` (with the
    ///   pacer's 2 ms timer slack), so a reply and its first edit go out at
    ///   once and 4 more per 5.05 s follow (Discord's bucket resets 5 s after
    ///   its first request, so this also never meets a full bucket);
    /// - bot, 50 per 1 s: `b = 1`, `T = 1.052 s / 50 = 21.04 ms` (47.5/s
    ///   sustained across all channels, waiting requests served in arrival
    ///   order and on schedule however late their timer wakes them).
    pub fn new(token: Secret) -> Self {
        Self {
            token,
            api_url: None,
            approvers: HashSet::new(),
            approver_roles: HashSet::new(),
            free_channels: HashSet::new(),
            shards: 1,
            shard_range: None,
            channel_quota: Pacer::quota_within(5, Duration::from_secs(5), 2, RATE_MARGIN),
            bot_quota: Pacer::quota_within(50, Duration::from_secs(1), 1, RATE_MARGIN),
            timings: DiscordTimings::default(),
            state_dir: None,
            reactions: Some(crate::reactions::default_status_emoji()),
        }
    }

    /// Reads the `DISCORD_*` variables through `get`. `None` when
    /// `DISCORD_BOT_TOKEN` is unset or empty (Discord disabled).
    pub fn from_env(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, DiscordConfigError> {
        let Some(raw_token) = get("DISCORD_BOT_TOKEN").filter(|t| !t.trim().is_empty()) else {
            return Ok(None);
        };
        let token = raw_token.trim();
        let token = token.strip_prefix("Bot ").unwrap_or(token).trim();
        if token.chars().any(|c| c.is_whitespace() || c.is_control()) || token.len() < 8 {
            return Err(DiscordConfigError::new(
                "DISCORD_BOT_TOKEN",
                "does not look like a bot token",
                "copy the token from the Developer Portal (Bot → Reset Token), without quotes",
            ));
        }
        let mut config = DiscordConfig::new(Secret::new(token));
        config.api_url = get("DISCORD_API_URL")
            .filter(|u| !u.trim().is_empty())
            .map(|u| parse_api_url(&u))
            .transpose()?;
        config.reactions = switchboard_platform::StatusEmoji::from_env(
            &get,
            crate::reactions::default_status_emoji(),
            "Discord",
            crate::reactions::allowed_reaction,
        )
        .map_err(|e| {
            DiscordConfigError::new(e.var, e.problem, "set a Unicode emoji, or REACTIONS=off")
        })?;
        config.approvers = id_set(&get, "DISCORD_APPROVERS")?;
        config.approver_roles = id_set(&get, "DISCORD_APPROVER_ROLES")?;
        config.free_channels = id_set(&get, "DISCORD_FREE_CHANNELS")?;
        if let Some(raw) = get("DISCORD_SHARDS").filter(|s| !s.trim().is_empty()) {
            config.shards = raw
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    DiscordConfigError::new(
                        "DISCORD_SHARDS",
                        format!("`{}` is not a shard count", raw.trim()),
                        "use a whole number ≥ 1 (the bot's total shard count)",
                    )
                })?;
        }
        if let Some(raw) = get("DISCORD_SHARD_RANGE").filter(|s| !s.trim().is_empty()) {
            config.shard_range = Some(parse_shard_range(raw.trim(), config.shards)?);
        }
        Ok(Some(config))
    }

    /// The shards this process runs, as an inclusive range.
    pub fn shard_span(&self) -> (u32, u32) {
        self.shard_range
            .unwrap_or((0, self.shards.saturating_sub(1)))
    }
}

fn parse_api_url(raw: &str) -> Result<String, DiscordConfigError> {
    let url = raw.trim().trim_end_matches('/');
    let url = url.strip_suffix("/api/v10").unwrap_or(url);
    let url = url.strip_suffix("/api").unwrap_or(url);
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && url.len() > "https://".len()
        && !url.chars().any(char::is_whitespace);
    if ok {
        Ok(url.to_owned())
    } else {
        Err(DiscordConfigError::new(
            "DISCORD_API_URL",
            format!("`{url}` is not an http(s) base URL"),
            "use a base like http://127.0.0.1:3000, or unset it to talk to discord.com",
        ))
    }
}

fn id_set(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<HashSet<u64>, DiscordConfigError> {
    let Some(raw) = get(var) else {
        return Ok(HashSet::new());
    };
    raw.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u64>()
                .ok()
                .filter(|id| *id > 0 && i64::try_from(*id).is_ok())
                .ok_or_else(|| {
                    DiscordConfigError::new(var, format!("`{s}` is not a Discord id"), ID_LIST_FIX)
                })
        })
        .collect()
}

fn parse_shard_range(raw: &str, total: u32) -> Result<(u32, u32), DiscordConfigError> {
    let err = |problem: String| {
        DiscordConfigError::new(
            "DISCORD_SHARD_RANGE",
            problem,
            "use FIRST-LAST (inclusive, e.g. 0-3) within 0..DISCORD_SHARDS-1, or a single shard id",
        )
    };
    let (a, b) = match raw.split_once('-') {
        Some((a, b)) => (a.trim(), b.trim()),
        None => (raw, raw),
    };
    let (Ok(first), Ok(last)) = (a.parse::<u32>(), b.parse::<u32>()) else {
        return Err(err(format!("`{raw}` is not a shard range")));
    };
    if first > last {
        return Err(err(format!("`{raw}` starts after it ends")));
    }
    if last >= total {
        return Err(err(format!(
            "`{raw}` goes past the last shard {} of DISCORD_SHARDS={total}",
            total.saturating_sub(1)
        )));
    }
    Ok((first, last))
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn default_quotas_never_exceed_discords_windows() {
        // b + ceil((W + margin) / T) - 1 <= limit.
        let most = |q: Quota, window: Duration| {
            let span = (window + RATE_MARGIN).as_nanos();
            u128::from(q.burst_size().get()) + span.div_ceil(q.replenish_interval().as_nanos()) - 1
        };
        let c = DiscordConfig::new(Secret::new("token-token"));
        assert_eq!(most(c.channel_quota, Duration::from_secs(5)), 5);
        assert_eq!(c.channel_quota.burst_size().get(), 2);
        assert_eq!(most(c.bot_quota, Duration::from_secs(1)), 50);
        assert_eq!(c.bot_quota.burst_size().get(), 1);
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn no_token_means_disabled() {
        assert!(matches!(DiscordConfig::from_env(env(&[])), Ok(None)));
        assert!(matches!(
            DiscordConfig::from_env(env(&[("DISCORD_BOT_TOKEN", "  ")])),
            Ok(None)
        ));
    }

    #[test]
    fn parses_every_variable() {
        let config = DiscordConfig::from_env(env(&[
            ("DISCORD_BOT_TOKEN", "Bot abc.def.ghi-123"),
            ("DISCORD_API_URL", "http://127.0.0.1:9/api/v10/"),
            ("DISCORD_APPROVERS", "11, 12"),
            ("DISCORD_APPROVER_ROLES", "21"),
            ("DISCORD_FREE_CHANNELS", "31 32"),
            ("DISCORD_SHARDS", "8"),
            ("DISCORD_SHARD_RANGE", "2-5"),
        ]));
        let Ok(Some(config)) = config else {
            panic!("config should parse: {config:?}");
        };
        assert_eq!(config.token.expose(), "abc.def.ghi-123");
        assert_eq!(config.api_url.as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(config.approvers, HashSet::from([11, 12]));
        assert_eq!(config.approver_roles, HashSet::from([21]));
        assert_eq!(config.free_channels, HashSet::from([31, 32]));
        assert_eq!(config.shards, 8);
        assert_eq!(config.shard_span(), (2, 5));
    }

    #[test]
    fn defaults_run_every_shard() {
        let config = DiscordConfig::new(Secret::new("token-token"));
        assert_eq!(config.shard_span(), (0, 0));
        let mut config = config;
        config.shards = 4;
        assert_eq!(config.shard_span(), (0, 3));
    }

    #[test]
    fn errors_name_the_variable_and_never_the_token() {
        let cases = [
            ("DISCORD_APPROVERS", "alice"),
            ("DISCORD_FREE_CHANNELS", "12,x"),
            ("DISCORD_SHARDS", "0"),
            ("DISCORD_SHARD_RANGE", "3-9"),
            ("DISCORD_SHARD_RANGE", "2-1"),
            ("DISCORD_API_URL", "discord.local"),
        ];
        for (var, value) in cases {
            let result = DiscordConfig::from_env(env(&[
                ("DISCORD_BOT_TOKEN", "secret-token-value"),
                (
                    "DISCORD_SHARDS",
                    if var == "DISCORD_SHARDS" { value } else { "4" },
                ),
                (var, value),
            ]));
            let Err(e) = result else {
                panic!("{var}={value} should be refused");
            };
            assert_eq!(e.var, var);
            let text = e.to_string();
            assert!(text.starts_with(var), "{text}");
            assert!(!text.contains("secret-token-value"), "{text}");
        }
    }

    #[test]
    fn a_malformed_token_is_refused_without_echoing_it() {
        let e = DiscordConfig::from_env(env(&[("DISCORD_BOT_TOKEN", "abc def ghi jkl")]));
        let Err(e) = e else {
            panic!("a token with spaces should be refused");
        };
        assert_eq!(e.var, "DISCORD_BOT_TOKEN");
        assert!(!e.to_string().contains("abc def"));
    }
}
