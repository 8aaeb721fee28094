//! The dispatch table: each of the gateway's commands to its family's file.

use super::parse::{help, Builtin, Command, CONSOLE_HELP};
use crate::gateway::Inner;
use crate::store::{SessionId, SessionKey, StoreError};
use switchboard_platform::User;

/// Runs a command for a session and returns the reply.
pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    key: &SessionKey,
    session: &SessionId,
    user: &User,
    private: bool,
) -> Result<String, StoreError> {
    let Some(builtin) = cmd.builtin else {
        return Ok(format!("Unknown command /{}. Try /help.", cmd.name));
    };
    Ok(match builtin {
        Builtin::Help | Builtin::Start if inner.local_operator(key.platform) => {
            format!(
                "{}{}{CONSOLE_HELP}",
                help(),
                super::skills::templates(inner)
            )
        }
        Builtin::Help | Builtin::Start => format!("{}{}", help(), super::skills::templates(inner)),
        Builtin::Clear => clear(inner, key, session).await?,
        Builtin::Usage => super::usage::run(inner, cmd, key).await?,
        Builtin::Whoami => whoami(key, user),
        Builtin::Model => super::model::run(inner, cmd, key, session).await?,
        Builtin::Tasks => super::tasks::run(inner, cmd, session).await?,
        Builtin::Verbose => super::verbose::run(inner, cmd, key, session).await?,
        Builtin::Voice => super::voice::run(inner, cmd, session).await?,
        Builtin::Approvals => super::approvals::run(inner, cmd, key).await?,
        Builtin::Memory => super::memory::run(inner, cmd, key, private).await?,
        Builtin::Plan => super::plan::run(inner, session).await?,
        Builtin::Checkins => super::checkins::run(inner, cmd, key, session, user, private).await?,
        Builtin::Identity => match super::identity::run(inner, cmd, key, private).await {
            Ok(text) => text,
            Err(crate::identity::IdentityError::Store(e)) => return Err(e),
            Err(e) => format!("The identity could not be read: {e}"),
        },
        Builtin::Skills => super::skills::run(inner, cmd, user),
        Builtin::Settings => super::settings::run(inner, key, user, private).await,
        Builtin::Tools => super::tools::run(inner, cmd, user).await,
        // Handled as they arrive (`on_message`), never queued; reaching here
        // `/stop` found nothing running.
        Builtin::Stop => super::stop::NOTHING_TO_STOP.to_owned(),
        Builtin::Approve => super::approve::USAGE.to_owned(),
        // Answered as it arrives (`inline_command`); a queued copy (taken
        // over from another process's inbox) sets nothing.
        Builtin::Queue => "Send `/queue` again to see or change the queue mode.".to_owned(),
    })
}

/// `/clear`: the conversation's history, waiting question and state.
async fn clear(inner: &Inner, key: &SessionKey, session: &SessionId) -> Result<String, StoreError> {
    let store = &inner.store;
    let n = store.history().clear(session).await?;
    store.turns().set_waiting_question(key, None).await?;
    store.sessions().clear_state(session).await?;
    store.plans().delete(session).await?;
    Ok(format!(
        "Cleared this conversation ({n} messages), its task state and execution state, and its plan. \
         Long-term memories (/memory), settings and rules are unchanged."
    ))
}

/// `/whoami`: the user's ids as the gateway sees them.
fn whoami(key: &SessionKey, user: &User) -> String {
    format!(
        "You are {} (user id {}) on {}. Chat {}{}. Approver: {}.",
        user.display_name,
        user.id,
        key.platform,
        key.chat,
        key.thread
            .map(|t| format!(", thread {t}"))
            .unwrap_or_default(),
        if user.is_approver { "yes" } else { "no" }
    )
}
