//! Typed Telegram configuration read from the environment.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use switchboard_platform::{Pacer, Quota, Secret, DOWNLOAD_STALL};
use url::Url;

/// Telegram's official Bot API endpoint.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";

/// Everything the Telegram adapter needs. Fields are public so tests and the
/// wiring can adjust defaults after [`TelegramConfig::new`] or
/// [`TelegramConfig::from_env`].
#[derive(Debug, Clone)]
pub struct TelegramConfig {
    pub token: Secret,
    /// Bot API base URL; `None` means [`DEFAULT_API_URL`].
    pub api_url: Option<Url>,
    /// Users who may decide anyone's approvals (`TELEGRAM_APPROVERS`).
    pub approvers: HashSet<i64>,
    /// Webhook mode when set; long polling otherwise.
    pub webhook: Option<WebhookConfig>,
    /// Where the long-poll offset file (`telegram-offset-<bot id>`) lives.
    pub state_dir: PathBuf,
    /// Long-poll timeout; must stay well under teloxide's 17 s client timeout.
    pub poll_timeout_secs: u32,
    /// Outbound flood-control quotas.
    pub limits: TelegramLimits,
    /// A button press the core has not answered by then is answered empty.
    pub press_answer_timeout: Duration,
    /// How often `sendChatAction typing` is repeated while a turn runs.
    pub typing_interval: Duration,
    /// Upper bound on one typing indicator, in case `Idle` never comes.
    pub typing_max: Duration,
    /// A file download that receives nothing for this long is given up
    /// ([`DOWNLOAD_STALL`] by default; tests shorten it).
    pub download_stall: Duration,
    /// How long an album (media group) waits for another part after its
    /// latest one before it goes to the core as one message.
    pub album_window: Duration,
    /// After a failed `getUpdates`, polling waits this long, doubled on each
    /// further failure up to [`TelegramConfig::poll_backoff_max`].
    pub poll_backoff: Duration,
    pub poll_backoff_max: Duration,
    /// The status reactions on users' messages (`REACTIONS`, `REACTION_*`);
    /// `None` when off.
    pub reactions: Option<switchboard_platform::StatusEmoji>,
    /// Answers in private chats stream as native drafts (`sendMessageDraft`)
    /// rather than a message edited in place (`TELEGRAM_DRAFTS`, on by default).
    pub drafts: bool,
}

/// Webhook mode: Telegram posts updates to `url`, which reaches `listen`.
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// Public URL registered with `setWebhook`; its path is the route served.
    pub url: Url,
    /// Local address the webhook server binds (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Expected `X-Telegram-Bot-Api-Secret-Token` header.
    pub secret: Secret,
}

/// Outbound flood control: governor quotas that keep every send and edit within
/// Telegram's published windows — 1 message per second in a chat, 20 per minute
/// in a group, 30 per second for the bot — as Telegram counts them (on arrival,
/// over any window), with [`LIMIT_MARGIN`] to spare for network jitter.
///
/// Each quota comes from [`Pacer::quota_within`]: burst `b` and period
/// `T = (window + margin + timer slack) / (limit - b + 1)`, so that
/// `b + ceil(W / T) - 1`, the most a GCRA lets into any window `W`, is at
/// most `limit`:
/// - per chat: 1 per 1 s, `b = 1`, `T = 1.052 s` (a burst is impossible);
/// - per group: 20 per 60 s, `b = 3`, `T = 3.336 s` (three answers at once,
///   then 18 per minute; the per-chat quota still spaces those three);
/// - per bot: 30 per 1 s, `b = 1`, `T = 35.07 ms` (28.5 per second
///   sustained, 95 % of the limit; waiting sends take the bot-wide token in
///   arrival order, on schedule however late their timer wakes them, so a
///   burst costs nothing here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TelegramLimits {
    /// Sends and edits in one chat, whatever its kind.
    pub per_chat: Quota,
    /// Sends and edits in one group or supergroup, on top of `per_chat`.
    pub per_group: Quota,
    /// Sends and edits of the whole bot.
    pub per_bot: Quota,
}

/// Time added to every window so that calls arriving with a little jitter
/// still fall outside the window of the call they follow.
pub const LIMIT_MARGIN: Duration = Duration::from_millis(50);

impl Default for TelegramLimits {
    fn default() -> Self {
        Self::scaled_down(1, LIMIT_MARGIN)
    }
}

impl TelegramLimits {
    /// Quotas for Telegram's windows made `factor` times shorter (the counts
    /// and bursts unchanged) with `margin` added: tests cross the real limits
    /// of a fake scaled the same way in a fraction of the time.
    pub fn scaled_down(factor: u32, margin: Duration) -> Self {
        let f = factor.max(1);
        let second = Duration::from_secs(1) / f;
        Self {
            per_chat: Pacer::quota_within(1, second, 1, margin),
            per_group: Pacer::quota_within(20, Duration::from_secs(60) / f, 3, margin),
            per_bot: Pacer::quota_within(30, second, 1, margin),
        }
    }
}

/// A configuration variable is present but unusable. The message names the
/// variable and the fix, and never contains a secret.
#[derive(Debug, thiserror::Error)]
#[error("{var}: {problem}")]
pub struct TelegramConfigError {
    pub var: &'static str,
    pub problem: String,
}

fn invalid(var: &'static str, problem: impl Into<String>) -> TelegramConfigError {
    TelegramConfigError {
        var,
        problem: problem.into(),
    }
}

impl TelegramConfig {
    /// A configuration with every default: official API, long polling.
    pub fn new(token: Secret, state_dir: impl Into<PathBuf>) -> Self {
        Self {
            token,
            api_url: None,
            approvers: HashSet::new(),
            webhook: None,
            state_dir: state_dir.into(),
            poll_timeout_secs: 10,
            limits: TelegramLimits::default(),
            press_answer_timeout: Duration::from_secs(10),
            typing_interval: Duration::from_secs(4),
            typing_max: Duration::from_secs(600),
            download_stall: DOWNLOAD_STALL,
            album_window: crate::album::ALBUM_WINDOW,
            poll_backoff: Duration::from_millis(500),
            poll_backoff_max: Duration::from_secs(30),
            reactions: Some(crate::reactions::default_status_emoji()),
            drafts: true,
        }
    }

    /// Reads `TELEGRAM_*` variables through `get`. `Ok(None)` when
    /// `TELEGRAM_BOT_TOKEN` is unset or empty (Telegram disabled).
    /// `TELEGRAM_ALLOWED_USERS` is the core's business and is not read here.
    pub fn from_env(
        get: impl Fn(&str) -> Option<String>,
        state_dir: &Path,
    ) -> Result<Option<Self>, TelegramConfigError> {
        let get = |name: &str| {
            get(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let Some(token) = get("TELEGRAM_BOT_TOKEN") else {
            return Ok(None);
        };
        if !looks_like_token(&token) {
            return Err(invalid(
                "TELEGRAM_BOT_TOKEN",
                "not a bot token; expected `<bot id>:<secret>` as issued by @BotFather",
            ));
        }
        let mut config = TelegramConfig::new(Secret::new(token), state_dir);
        if let Some(raw) = get("TELEGRAM_API_URL") {
            config.api_url = Some(parse_http_url("TELEGRAM_API_URL", &raw)?);
        }
        if let Some(raw) = get("TELEGRAM_APPROVERS") {
            config.approvers = parse_ids("TELEGRAM_APPROVERS", &raw)?;
        }
        config.reactions = switchboard_platform::StatusEmoji::from_env(
            get,
            crate::reactions::default_status_emoji(),
            "Telegram",
            crate::reactions::allowed_reaction,
        )
        .map_err(|e| invalid(e.var, e.problem))?;
        if let Some(raw) = get("TELEGRAM_DRAFTS") {
            config.drafts = parse_switch("TELEGRAM_DRAFTS", &raw)?;
        }
        config.webhook = webhook_from(
            get("TELEGRAM_WEBHOOK_URL"),
            get("TELEGRAM_WEBHOOK_LISTEN"),
            get("TELEGRAM_WEBHOOK_SECRET"),
        )?;
        Ok(Some(config))
    }

    /// The Bot API base URL in use.
    pub fn api_base(&self) -> Result<Url, TelegramConfigError> {
        match &self.api_url {
            Some(url) => Ok(url.clone()),
            None => Url::parse(DEFAULT_API_URL)
                .map_err(|e| invalid("TELEGRAM_API_URL", format!("default URL: {e}"))),
        }
    }
}

fn looks_like_token(token: &str) -> bool {
    match token.split_once(':') {
        Some((id, secret)) => {
            !id.is_empty()
                && id.bytes().all(|b| b.is_ascii_digit())
                && !secret.is_empty()
                && secret
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        }
        None => false,
    }
}

fn parse_http_url(var: &'static str, raw: &str) -> Result<Url, TelegramConfigError> {
    let url = Url::parse(raw).map_err(|e| {
        invalid(
            var,
            format!("not a URL ({e}); expected e.g. https://host/path"),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(var, "must be an http:// or https:// URL"));
    }
    Ok(url)
}

/// Ports Telegram delivers webhooks to.
const WEBHOOK_PORTS: [u16; 4] = [443, 80, 88, 8443];

/// Telegram only posts to HTTPS URLs on ports 443, 80, 88 or 8443; anything
/// else would be refused by `setWebhook` at start-up, so refuse it here with
/// the variable named.
fn parse_webhook_url(raw: &str) -> Result<Url, TelegramConfigError> {
    const VAR: &str = "TELEGRAM_WEBHOOK_URL";
    let url = parse_http_url(VAR, raw)?;
    if url.scheme() != "https" {
        return Err(invalid(
            VAR,
            "Telegram only delivers webhooks over HTTPS; use an https:// URL \
             (e.g. behind a TLS-terminating reverse proxy)",
        ));
    }
    match url.port_or_known_default() {
        Some(port) if WEBHOOK_PORTS.contains(&port) => Ok(url),
        port => Err(invalid(
            VAR,
            format!(
                "port {} is not one Telegram delivers webhooks to; use 443, 80, 88 or 8443",
                port.map_or_else(|| "?".to_owned(), |p| p.to_string())
            ),
        )),
    }
}

/// `on` or `off` (also `true`/`false`, `1`/`0`, `yes`/`no`).
fn parse_switch(var: &'static str, raw: &str) -> Result<bool, TelegramConfigError> {
    match raw.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        other => Err(invalid(var, format!("`{other}` is neither `on` nor `off`"))),
    }
}

/// Comma-separated numeric user ids.
fn parse_ids(var: &'static str, raw: &str) -> Result<HashSet<i64>, TelegramConfigError> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<i64>().map_err(|_| {
                invalid(
                    var,
                    format!("`{s}` is not a numeric Telegram user id (comma-separated ids, e.g. 12345,67890)"),
                )
            })
        })
        .collect()
}

fn webhook_from(
    url: Option<String>,
    listen: Option<String>,
    secret: Option<String>,
) -> Result<Option<WebhookConfig>, TelegramConfigError> {
    let (url, listen, secret) = match (url, listen, secret) {
        (None, None, None) => return Ok(None),
        (Some(u), Some(l), Some(s)) => (u, l, s),
        (u, l, s) => {
            let missing: Vec<&str> = [
                ("TELEGRAM_WEBHOOK_URL", u.is_none()),
                ("TELEGRAM_WEBHOOK_LISTEN", l.is_none()),
                ("TELEGRAM_WEBHOOK_SECRET", s.is_none()),
            ]
            .into_iter()
            .filter_map(|(name, absent)| absent.then_some(name))
            .collect();
            return Err(invalid(
                "TELEGRAM_WEBHOOK_URL",
                format!(
                    "webhook mode needs TELEGRAM_WEBHOOK_URL, TELEGRAM_WEBHOOK_LISTEN and \
                     TELEGRAM_WEBHOOK_SECRET together; missing {} (unset all three for long polling)",
                    missing.join(", ")
                ),
            ));
        }
    };
    let url = parse_webhook_url(&url)?;
    let listen = listen.parse::<SocketAddr>().map_err(|_| {
        invalid(
            "TELEGRAM_WEBHOOK_LISTEN",
            format!("`{listen}` is not a socket address; expected e.g. 0.0.0.0:8443"),
        )
    })?;
    if !valid_webhook_secret(&secret) {
        return Err(invalid(
            "TELEGRAM_WEBHOOK_SECRET",
            "must be 1-256 characters of A-Z, a-z, 0-9, `_` or `-` (Telegram's rule)",
        ));
    }
    Ok(Some(WebhookConfig {
        url,
        listen,
        secret: Secret::new(secret),
    }))
}

/// Telegram accepts 1-256 characters from `A-Za-z0-9_-` as a webhook secret.
pub(crate) fn valid_webhook_secret(secret: &str) -> bool {
    (1..=256).contains(&secret.len())
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    const TOKEN: &str = "123456:ABC-def_ghi";

    #[test]
    fn unset_token_disables_telegram() {
        let cfg = TelegramConfig::from_env(env(&[]), Path::new("/tmp"));
        assert!(matches!(cfg, Ok(None)));
        let cfg = TelegramConfig::from_env(env(&[("TELEGRAM_BOT_TOKEN", " ")]), Path::new("/tmp"));
        assert!(matches!(cfg, Ok(None)));
    }

    #[test]
    fn full_configuration_parses() {
        let cfg = TelegramConfig::from_env(
            env(&[
                ("TELEGRAM_BOT_TOKEN", TOKEN),
                ("TELEGRAM_API_URL", "http://127.0.0.1:9/"),
                ("TELEGRAM_APPROVERS", "1, 22 ,333"),
                ("TELEGRAM_WEBHOOK_URL", "https://bot.example.com/tg"),
                ("TELEGRAM_WEBHOOK_LISTEN", "0.0.0.0:8443"),
                ("TELEGRAM_WEBHOOK_SECRET", "s3cr3t_-"),
            ]),
            Path::new("/var/lib/sb"),
        );
        let Ok(Some(cfg)) = cfg else {
            panic!("expected a config, got {cfg:?}");
        };
        assert_eq!(cfg.token.expose(), TOKEN);
        assert_eq!(cfg.approvers, HashSet::from([1, 22, 333]));
        assert_eq!(
            cfg.api_base().map(|u| u.to_string()).ok().as_deref(),
            Some("http://127.0.0.1:9/")
        );
        let hook = cfg
            .webhook
            .as_ref()
            .map(|w| (w.url.path().to_owned(), w.listen.port()));
        assert_eq!(hook, Some(("/tg".to_owned(), 8443)));
        assert_eq!(cfg.state_dir, PathBuf::from("/var/lib/sb"));
        assert!(cfg.drafts, "drafts are on by default");
    }

    #[test]
    fn drafts_can_be_turned_off() {
        let read = |value: &str| {
            TelegramConfig::from_env(
                env(&[("TELEGRAM_BOT_TOKEN", TOKEN), ("TELEGRAM_DRAFTS", value)]),
                Path::new("."),
            )
            .map(|c| c.map(|c| c.drafts))
            .map_err(|e| e.to_string())
        };
        assert_eq!(read("off"), Ok(Some(false)));
        assert_eq!(read(" ON "), Ok(Some(true)));
        let e = read("sometimes").err().unwrap_or_default();
        assert!(
            e.starts_with("TELEGRAM_DRAFTS:") && e.contains("`sometimes`"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_variable_and_never_the_token() {
        let bad_token = "not-a-token-but-secret";
        let e = TelegramConfig::from_env(env(&[("TELEGRAM_BOT_TOKEN", bad_token)]), Path::new("."))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("TELEGRAM_BOT_TOKEN:"), "{e}");
        assert!(!e.contains(bad_token));

        let e = TelegramConfig::from_env(
            env(&[
                ("TELEGRAM_BOT_TOKEN", TOKEN),
                ("TELEGRAM_APPROVERS", "12,bob"),
            ]),
            Path::new("."),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            e.contains("TELEGRAM_APPROVERS") && e.contains("`bob`"),
            "{e}"
        );

        let e = TelegramConfig::from_env(
            env(&[
                ("TELEGRAM_BOT_TOKEN", TOKEN),
                ("TELEGRAM_WEBHOOK_URL", "https://x.example/tg"),
            ]),
            Path::new("."),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            e.contains("missing TELEGRAM_WEBHOOK_LISTEN, TELEGRAM_WEBHOOK_SECRET"),
            "{e}"
        );

        let e = TelegramConfig::from_env(
            env(&[
                ("TELEGRAM_BOT_TOKEN", TOKEN),
                ("TELEGRAM_WEBHOOK_URL", "https://x.example/tg"),
                ("TELEGRAM_WEBHOOK_LISTEN", "0.0.0.0:8443"),
                ("TELEGRAM_WEBHOOK_SECRET", "has spaces"),
            ]),
            Path::new("."),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(e.starts_with("TELEGRAM_WEBHOOK_SECRET:"), "{e}");
        assert!(!e.contains("has spaces"));
    }

    fn webhook_error(url: &str) -> Option<String> {
        TelegramConfig::from_env(
            env(&[
                ("TELEGRAM_BOT_TOKEN", TOKEN),
                ("TELEGRAM_WEBHOOK_URL", url),
                ("TELEGRAM_WEBHOOK_LISTEN", "0.0.0.0:8443"),
                ("TELEGRAM_WEBHOOK_SECRET", "s3cr3t"),
            ]),
            Path::new("."),
        )
        .err()
        .map(|e| e.to_string())
    }

    #[test]
    fn webhook_urls_follow_telegrams_rules() {
        let e = webhook_error("http://bot.example.com/tg").unwrap_or_default();
        assert!(
            e.starts_with("TELEGRAM_WEBHOOK_URL:") && e.contains("HTTPS"),
            "{e}"
        );
        let e = webhook_error("https://bot.example.com:9000/tg").unwrap_or_default();
        assert!(
            e.starts_with("TELEGRAM_WEBHOOK_URL:") && e.contains("port 9000"),
            "{e}"
        );
        for ok in [
            "https://bot.example.com/tg",
            "https://bot.example.com:443/tg",
            "https://bot.example.com:80/tg",
            "https://bot.example.com:88/tg",
            "https://bot.example.com:8443/tg",
        ] {
            assert_eq!(webhook_error(ok), None, "{ok}");
        }
    }

    #[test]
    fn default_limits_never_exceed_telegrams_windows() {
        // b + ceil((W + margin) / T) - 1 <= limit, for every window.
        let most = |q: Quota, window: Duration| {
            let spans = (window + LIMIT_MARGIN).as_nanos();
            let t = q.replenish_interval().as_nanos();
            u128::from(q.burst_size().get()) + spans.div_ceil(t) - 1
        };
        let l = TelegramLimits::default();
        assert_eq!(most(l.per_chat, Duration::from_secs(1)), 1);
        assert_eq!(most(l.per_group, Duration::from_secs(60)), 20);
        assert_eq!(most(l.per_bot, Duration::from_secs(1)), 30);
        assert_eq!(l.per_group.burst_size().get(), 3);
        assert_eq!(l.per_bot.burst_size().get(), 1);
    }
}
