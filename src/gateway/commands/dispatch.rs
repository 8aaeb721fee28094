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
    let store = &inner.store;
    let Some(builtin) = cmd.builtin else {
        return Ok(format!("Unknown command /{}. Try /help.", cmd.name));
    };
    Ok(match builtin {
        Builtin::Help | Builtin::Start if inner.local_operator(key.platform) => {
            format!("{}{CONSOLE_HELP}", help())
        }
        Builtin::Help | Builtin::Start => help(),
        Builtin::Clear => {
            let n = store.clear_history(session).await?;
            store.set_waiting_question(key, None).await?;
            store.clear_session_state(session).await?;
            format!(
                "Cleared this conversation ({n} messages), its task state and execution state. \
                 Long-term memories (/memory), settings and rules are unchanged."
            )
        }
        Builtin::Usage => crate::gateway::commands::usage::run(inner, cmd, key).await?,
        Builtin::Whoami => format!(
            "You are {} (user id {}) on {}. Chat {}{}. Approver: {}.",
            user.display_name,
            user.id,
            key.platform,
            key.chat,
            key.thread
                .map(|t| format!(", thread {t}"))
                .unwrap_or_default(),
            if user.is_approver { "yes" } else { "no" }
        ),
        Builtin::Model => crate::gateway::commands::model::run(inner, cmd, key, session).await?,
        Builtin::Tasks => crate::gateway::commands::tasks::run(inner, cmd, session).await?,
        Builtin::Verbose => {
            crate::gateway::commands::verbose::run(inner, cmd, key, session).await?
        }
        Builtin::Approvals => crate::gateway::commands::approvals::run(inner, cmd, key).await?,
        Builtin::Memory => crate::gateway::commands::memory::run(inner, cmd, key, private).await?,
        Builtin::Plan => crate::gateway::commands::plan::run(inner, session).await?,
        Builtin::Checkins => {
            crate::gateway::commands::checkins::run(inner, cmd, key, session, user, private).await?
        }
        Builtin::Identity => {
            match crate::gateway::commands::identity::run(inner, cmd, key, private).await {
                Ok(text) => text,
                Err(crate::identity::IdentityError::Store(e)) => return Err(e),
                Err(e) => format!("The identity could not be read: {e}"),
            }
        }
        Builtin::Skills => {
            let skills = inner.skills.book();
            if skills.is_empty() {
                "No skills are installed.".into()
            } else {
                format!(
                    "**Skills** (run one with `/name <input>`)\n{}",
                    skills.listing("/")
                )
            }
        }
        Builtin::Settings => {
            crate::gateway::commands::settings::run(inner, key, user, private).await
        }
        Builtin::Tools => crate::gateway::commands::tools::run(inner, cmd, user).await,
        // Handled as they arrive (`on_message`), never queued; reaching here
        // `/stop` found nothing running.
        Builtin::Stop => super::stop::NOTHING_TO_STOP.to_owned(),
        Builtin::Approve => crate::gateway::commands::approve::USAGE.to_owned(),
        // Answered as it arrives (`inline_command`); a queued copy (taken
        // over from another process's inbox) sets nothing.
        Builtin::Queue => "Send `/queue` again to see or change the queue mode.".to_owned(),
    })
}
