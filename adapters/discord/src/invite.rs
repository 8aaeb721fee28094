//! The URL that invites the bot to a server with what Switchboard needs.

/// View Channels, Send Messages, Read Message History, Send Messages in Threads.
const PERMISSIONS: u64 = (1 << 10) | (1 << 11) | (1 << 16) | (1 << 38);

/// The OAuth2 invite of `application`: the `bot` scope (with
/// `applications.commands`, for the slash commands) and [`PERMISSIONS`].
pub fn invite_url(application: u64) -> String {
    format!(
        "https://discord.com/oauth2/authorize?client_id={application}&scope=bot+applications.commands&permissions={PERMISSIONS}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_invite_asks_for_the_bot_scope_and_the_permissions_readme_names() {
        assert_eq!(
            invite_url(123),
            "https://discord.com/oauth2/authorize?client_id=123&scope=bot+applications.commands&permissions=274877975552"
        );
    }
}
