//! Checking the bot token with `GET /users/@me` without starting the adapter
//! (for `switchboard doctor`): no gateway connection is opened.

use crate::config::DiscordConfig;
use crate::errors::DiscordError;
use crate::rest::Rest;

/// The bot's user name when Discord accepts the token; errors never contain
/// the token.
pub async fn check_token(config: &DiscordConfig) -> Result<String, DiscordError> {
    let rest = Rest::new(config)?;
    let me = rest.current_user().await?;
    Ok(me.username)
}
