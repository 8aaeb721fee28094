//! Discord REST calls through the shared [`Pacer`]: per-channel and bot-wide
//! quotas, FIFO per channel, and 429s (`retry_after`, `global`) that pause and
//! retry the refused call.
//!
//! Requests are built with serenity's routes and auth headers but executed here,
//! so the 429 body and headers are ours to read (serenity's `Http` drops them).

use crate::config::DiscordConfig;
use crate::errors::RestError;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use serenity::http::{LightMethod, Request, Route};
use serenity::model::id::{ApplicationId, ChannelId, InteractionId, MessageId};
use std::num::NonZeroU64;
use std::time::Duration;
use switchboard_platform::{Pacer, Retry, Secret};

/// Longest pause a 429 may impose; a bogus `retry_after` must not stall us for hours.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);
pub(crate) const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// What a call is paced by. Only channel messages count against the channel
/// quota; everything counts against the bot quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lane {
    /// Create and edit messages in a channel (5 per 5 s).
    Channel(u64),
    /// One interaction's callback and webhook followups: its calls stay in
    /// order, and a slow or paused call never holds up another press (each
    /// must be answered within 3 s). Lanes of finished interactions are idle
    /// and swept by the pacer.
    Interaction(u64),
    /// Look-ups: the current user, channel kinds and the bot's roles (the
    /// gateway waits on these).
    Lookup,
    /// Slash-command registration: a long 429 on it must not stall look-ups.
    Commands,
    /// Look-ups nothing waits on (a guild's boost level).
    Background,
    /// Message fetches for downloads: never in the way of the gateway's
    /// look-ups.
    Downloads,
    /// Channel history read after a new gateway session (`backfill.rs`).
    Backfill,
}

#[derive(Deserialize)]
pub(crate) struct Created {
    pub id: MessageId,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    code: Option<i64>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    retry_after: Option<f64>,
    #[serde(default)]
    global: Option<bool>,
}

/// The REST client: one reqwest client, serenity routes, our pacing.
pub(crate) struct Rest {
    client: reqwest::Client,
    auth: Secret,
    token: Secret,
    proxy: Option<String>,
    pub(crate) pacer: Pacer<Lane>,
    /// How long an interaction callback may take (Discord's 3 s apply).
    callback_timeout: Duration,
}

impl Rest {
    pub fn new(config: &DiscordConfig) -> Result<Self, RestError> {
        let client = reqwest::Client::builder()
            .timeout(HTTP_TIMEOUT)
            .build()
            .map_err(|e| RestError::Network(e.without_url().to_string()))?;
        let channel_quota = config.channel_quota;
        Ok(Self {
            client,
            auth: Secret::new(format!("Bot {}", config.token.expose())),
            token: config.token.clone(),
            proxy: config.api_url.clone(),
            // Interaction endpoints are not bound to the global rate limit, and
            // a press must be answered within 3 s: never behind a global pause.
            pacer: Pacer::new(config.bot_quota, move |lane: &Lane| match lane {
                Lane::Channel(_) => vec![channel_quota],
                _ => Vec::new(),
            })
            .with_unmetered(|lane: &Lane| matches!(lane, Lane::Interaction(_))),
            callback_timeout: config.timings.callback_timeout,
        })
    }

    /// The HTTP client, shared with serenity's gateway client.
    pub fn http_client(&self) -> reqwest::Client {
        self.client.clone()
    }

    pub fn rate_limited_count(&self) -> u64 {
        self.pacer.rate_limited_count()
    }

    /// Posts a message; returns its id.
    pub async fn create_message(&self, channel: u64, body: &Value) -> Result<u64, RestError> {
        let channel_id = ChannelId::from(nz(channel)?);
        let created: Created = self
            .call(
                Lane::Channel(channel),
                LightMethod::Post,
                Route::ChannelMessages { channel_id },
                Some(body),
            )
            .await
            .and_then(decode)?;
        Ok(created.id.get())
    }

    pub async fn edit_message(
        &self,
        channel: u64,
        message: u64,
        body: &Value,
    ) -> Result<(), RestError> {
        let route = Route::ChannelMessage {
            channel_id: ChannelId::from(nz(channel)?),
            message_id: MessageId::from(nz(message)?),
        };
        self.call(
            Lane::Channel(channel),
            LightMethod::Patch,
            route,
            Some(body),
        )
        .await
        .map(drop)
    }

    /// `POST /channels/{id}/typing` at the pacer's lowest priority: only when
    /// the bot quota has a token no call waits for and the channel has no
    /// message on its way. `Ok(false)` when it gave way (skipped, not queued).
    pub async fn typing(&self, channel: u64) -> Result<bool, RestError> {
        let channel_id = ChannelId::from(nz(channel)?);
        let route = Route::ChannelTyping { channel_id };
        let sent = self
            .pacer
            .run_if_idle(
                &[&Lane::Channel(channel)],
                || self.once(LightMethod::Post, route, None, HTTP_TIMEOUT),
                retry_of,
            )
            .await;
        sent.transpose().map(|s| s.is_some())
    }

    /// `POST /interactions/{id}/{token}/callback`.
    pub async fn interaction_callback(
        &self,
        interaction: u64,
        token: &str,
        body: &Value,
    ) -> Result<(), RestError> {
        let route = Route::InteractionResponse {
            interaction_id: InteractionId::from(nz(interaction)?),
            token,
        };
        self.call_within(
            Lane::Interaction(interaction),
            LightMethod::Post,
            route,
            Some(body),
            self.callback_timeout,
        )
        .await
        .map(drop)
    }

    /// `POST /webhooks/{application}/{token}`: a followup message of an interaction.
    pub async fn followup(
        &self,
        interaction: u64,
        application: u64,
        token: &str,
        body: &Value,
    ) -> Result<(), RestError> {
        let route = Route::WebhookFollowupMessages {
            application_id: ApplicationId::from(nz(application)?),
            token,
        };
        self.call(
            Lane::Interaction(interaction),
            LightMethod::Post,
            route,
            Some(body),
        )
        .await
        .map(drop)
    }

    /// `PATCH /webhooks/{application}/{token}/messages/@original`: after a deferred
    /// update, this edits the message that carried the pressed button.
    pub async fn edit_original(
        &self,
        interaction: u64,
        application: u64,
        token: &str,
        body: &Value,
    ) -> Result<(), RestError> {
        let route = Route::WebhookOriginalInteractionResponse {
            application_id: ApplicationId::from(nz(application)?),
            token,
        };
        self.call(
            Lane::Interaction(interaction),
            LightMethod::Patch,
            route,
            Some(body),
        )
        .await
        .map(drop)
    }

    /// `PUT /applications/{application}/commands`: replaces the global commands.
    pub async fn set_global_commands(
        &self,
        application: u64,
        commands: &Value,
    ) -> Result<(), RestError> {
        let route = Route::Commands {
            application_id: ApplicationId::from(nz(application)?),
        };
        self.call(Lane::Commands, LightMethod::Put, route, Some(commands))
            .await
            .map(drop)
    }

    /// One paced call: waits for the lane and the bot quota, retries 429s.
    pub(crate) async fn call(
        &self,
        lane: Lane,
        method: LightMethod,
        route: Route<'_>,
        body: Option<&Value>,
    ) -> Result<Value, RestError> {
        self.call_within(lane, method, route, body, HTTP_TIMEOUT)
            .await
    }

    /// [`Rest::call`] where each attempt gets `timeout` for its HTTP exchange.
    async fn call_within(
        &self,
        lane: Lane,
        method: LightMethod,
        route: Route<'_>,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<Value, RestError> {
        let bytes = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| RestError::Invalid(e.to_string()))?;
        self.pacer
            .run(
                &lane,
                || self.once(method, route, bytes.clone(), timeout),
                retry_of,
            )
            .await
    }

    async fn once(
        &self,
        method: LightMethod,
        route: Route<'_>,
        body: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<Value, RestError> {
        self.exchange(Request::new(route, method).body(body), timeout)
            .await
    }

    /// Sends one built request (JSON or multipart) and reads Discord's answer.
    pub(crate) async fn exchange(
        &self,
        request: Request<'_>,
        timeout: Duration,
    ) -> Result<Value, RestError> {
        let name = route_name(request.route_ref());
        let request = request
            .build(&self.client, self.auth.expose(), self.proxy.as_deref())
            .map_err(|e| RestError::Invalid(self.scrub(&e.to_string())))?
            .timeout(timeout);
        let response = request
            .send()
            .await
            .map_err(|e| RestError::Network(self.scrub(&e.without_url().to_string())))?;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| RestError::Network(self.scrub(&e.without_url().to_string())))?;
        if status.is_success() {
            if bytes.is_empty() {
                return Ok(Value::Null);
            }
            return serde_json::from_slice(&bytes)
                .map_err(|e| RestError::Decode(format!("{name} answered {e}")));
        }
        let error: Option<ErrorBody> = serde_json::from_slice(&bytes).ok();
        if status.as_u16() == 429 {
            return Err(rate_limited(error.as_ref(), &headers));
        }
        let message = error
            .as_ref()
            .and_then(|e| e.message.clone())
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned());
        Err(RestError::Status {
            status: status.as_u16(),
            code: error.and_then(|e| e.code),
            message: self.scrub(&message),
        })
    }

    fn scrub(&self, text: &str) -> String {
        self.token.scrub(text)
    }
}

/// A 429 is retried after its delay; nothing else is.
pub(crate) fn retry_of(e: &RestError) -> Retry {
    match e {
        RestError::RateLimited { delay, global } => Retry::After {
            delay: *delay,
            global: *global,
        },
        _ => Retry::No,
    }
}

/// Reads a 429: the body's float `retry_after` and `global`, else the headers.
/// A value that is not a finite, non-negative number is skipped.
fn rate_limited(body: Option<&ErrorBody>, headers: &reqwest::header::HeaderMap) -> RestError {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let usable = |s: &f64| s.is_finite() && *s >= 0.0;
    let seconds = body
        .and_then(|b| b.retry_after)
        .filter(usable)
        .or_else(|| {
            header("retry-after")
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(usable)
        })
        .or_else(|| {
            header("x-ratelimit-reset-after")
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(usable)
        })
        .unwrap_or(1.0);
    let global = body.and_then(|b| b.global).unwrap_or(false)
        || header("x-ratelimit-global").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || header("x-ratelimit-scope").is_some_and(|v| v.eq_ignore_ascii_case("global"));
    RestError::RateLimited {
        delay: retry_delay(seconds),
        global,
    }
}

/// `seconds` (finite, non-negative) as a pause of at most [`MAX_RETRY_AFTER`];
/// clamped as a float first, since `Duration::from_secs_f64` panics on values
/// beyond `Duration::MAX`.
fn retry_delay(seconds: f64) -> Duration {
    let capped = seconds.clamp(0.0, MAX_RETRY_AFTER.as_secs_f64());
    Duration::try_from_secs_f64(capped).unwrap_or(MAX_RETRY_AFTER)
}

pub(crate) fn decode<T: DeserializeOwned>(value: Value) -> Result<T, RestError> {
    serde_json::from_value(value).map_err(|e| RestError::Decode(e.to_string()))
}

/// A route's name for error text: the variant, never its fields (tokens live there).
fn route_name(route: &Route<'_>) -> String {
    let debug = format!("{route:?}");
    debug
        .split([' ', '{', '('])
        .next()
        .unwrap_or("route")
        .to_owned()
}

/// Snowflakes are never 0; serenity's id types panic on 0, so refuse it here.
pub(crate) fn nz(id: u64) -> Result<NonZeroU64, RestError> {
    NonZeroU64::new(id).ok_or_else(|| RestError::Invalid("id 0 is not a Discord id".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn a_429_body_wins_over_headers() {
        let body = ErrorBody {
            code: None,
            message: Some("You are being rate limited.".into()),
            retry_after: Some(1.5),
            global: Some(false),
        };
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(
            rate_limited(Some(&body), &headers),
            RestError::RateLimited {
                delay: Duration::from_millis(1500),
                global: false
            }
        );
    }

    #[test]
    fn a_429_without_body_reads_the_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("3"));
        headers.insert("x-ratelimit-global", HeaderValue::from_static("true"));
        assert_eq!(
            rate_limited(None, &headers),
            RestError::RateLimited {
                delay: Duration::from_secs(3),
                global: true
            }
        );
        assert_eq!(
            rate_limited(None, &HeaderMap::new()),
            RestError::RateLimited {
                delay: Duration::from_secs(1),
                global: false
            }
        );
    }

    #[test]
    fn absurd_retry_after_is_capped() {
        let body = ErrorBody {
            code: None,
            message: None,
            retry_after: Some(1e9),
            global: None,
        };
        assert!(matches!(
            rate_limited(Some(&body), &HeaderMap::new()),
            RestError::RateLimited { delay, .. } if delay == MAX_RETRY_AFTER
        ));
    }

    #[test]
    fn a_huge_or_bogus_retry_after_never_panics() {
        let body = |retry_after: f64| ErrorBody {
            code: None,
            message: None,
            retry_after: Some(retry_after),
            global: None,
        };
        let delay = |error: RestError| match error {
            RestError::RateLimited { delay, .. } => delay,
            other => panic!("not a rate limit: {other:?}"),
        };
        let none = HeaderMap::new();
        for huge in [1e20, 1e300, f64::MAX] {
            assert_eq!(
                delay(rate_limited(Some(&body(huge)), &none)),
                MAX_RETRY_AFTER
            );
        }
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("1e30"));
        assert_eq!(delay(rate_limited(None, &headers)), MAX_RETRY_AFTER);
        // NaN, infinite or negative values are skipped for the next source.
        headers.insert("retry-after", HeaderValue::from_static("2.5"));
        for bogus in [f64::NAN, f64::INFINITY, -3.0] {
            assert_eq!(
                delay(rate_limited(Some(&body(bogus)), &headers)),
                Duration::from_millis(2500)
            );
            assert_eq!(
                delay(rate_limited(Some(&body(bogus)), &none)),
                Duration::from_secs(1)
            );
        }
        assert_eq!(retry_delay(0.0), Duration::ZERO);
    }

    #[test]
    fn route_names_hide_tokens() {
        let route = Route::InteractionResponse {
            interaction_id: InteractionId::new(5),
            token: "very-secret-token",
        };
        assert_eq!(route_name(&route), "InteractionResponse");
        assert!(nz(0).is_err());
    }
}
