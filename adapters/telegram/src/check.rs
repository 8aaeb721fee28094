//! Checking the bot token with `getMe` without starting the adapter (for
//! `switchboard doctor`): nothing is created on disk, no update is fetched.

use crate::config::TelegramConfig;
use crate::errors::{startup_error, TelegramError};
use teloxide::prelude::Requester;
use teloxide::Bot;

/// The bot's `@username` (without the `@`) when Telegram accepts the token;
/// errors never contain the token.
pub async fn check_token(config: &TelegramConfig) -> Result<String, TelegramError> {
    let client = teloxide::net::default_reqwest_settings()
        .build()
        .map_err(|e| TelegramError::Client(config.token.scrub(&e.to_string())))?;
    let bot = Bot::with_client(config.token.expose(), client).set_api_url(config.api_base()?);
    let me = bot
        .get_me()
        .await
        .map_err(|e| startup_error("getMe", &e, &config.token))?;
    Ok(me.user.username.clone().unwrap_or_default())
}
