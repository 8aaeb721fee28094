//! `/identity`: the agent profile in use, for users to read — and, when the
//! operator allows it (`IDENTITY_USER_EDITS=on`), a user's own settings for
//! how the agent presents itself to them in direct messages
//! (`/identity name|persona|style add|style clear|reset`). Also the one
//! place profiles enter a turn's system prompt.

use crate::domain::SessionKey;
use crate::gateway::commands::Command;
use crate::gateway::Inner;
use crate::identity::{Identity, IdentityError, Profile, ProfileEdit};
use crate::store::MemoryOwner;

const USAGE: &str =
    "`/identity name <name>`, `/identity persona <text>`, `/identity style add <rule>`, \
`/identity style clear` or `/identity reset` — how I present myself to you in direct messages.";

/// Runs `/identity …` for the user of `key`.
pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    key: &SessionKey,
    private: bool,
) -> Result<String, IdentityError> {
    let owner = MemoryOwner::new(key.platform, key.user);
    if cmd.args.is_empty() {
        return show(inner, owner).await;
    }
    if !inner.features.identity_user_edits {
        return Ok(
            "Changing how I present myself is the operator's (IDENTITY_USER_EDITS is off).".into(),
        );
    }
    if !private {
        return Ok(
            "Your own identity settings apply to our direct messages: send them to me there."
                .into(),
        );
    }
    let mine = own(inner, owner).await?;
    let text = cmd.args[1..].join(" ");
    let (edit, change) = match (cmd.args[0], cmd.args.get(1).copied()) {
        ("reset", _) => {
            inner.store.set_user_identity(owner, None, "reset").await?;
            return Ok(
                "Your own identity settings are cleared: I present myself as the operator set me."
                    .into(),
            );
        }
        ("name", Some(_)) => (
            ProfileEdit {
                name: Some(text),
                ..ProfileEdit::default()
            },
            "name",
        ),
        ("persona", Some(_)) => (
            ProfileEdit {
                persona: Some(text),
                ..ProfileEdit::default()
            },
            "persona",
        ),
        ("style", Some("add")) if cmd.args.len() > 2 => {
            let mut style = mine.style.clone();
            style.push(cmd.args[2..].join(" "));
            (
                ProfileEdit {
                    style: Some(style),
                    ..ProfileEdit::default()
                },
                "style add",
            )
        }
        ("style", Some("clear")) => (
            ProfileEdit {
                style: Some(Vec::new()),
                ..ProfileEdit::default()
            },
            "style clear",
        ),
        _ => return Ok(USAGE.into()),
    };
    let next = match mine.edited(&edit) {
        Ok(next) => next,
        Err(IdentityError::Invalid(why)) => return Ok(format!("Not changed: {why}.")),
        Err(e) => return Err(e),
    };
    let json = serde_json::to_string(&next)
        .map_err(|e| IdentityError::Invalid(format!("unwritable profile: {e}")))?;
    let stored = (!next.is_empty()).then_some(json.as_str());
    inner.store.set_user_identity(owner, stored, change).await?;
    Ok(format!(
        "Noted — from your next message, in our direct messages:\n{}",
        next.describe()
    ))
}

/// The operator's profile, and the user's own settings if any.
async fn show(inner: &Inner, owner: MemoryOwner) -> Result<String, IdentityError> {
    let (version, profile) = Identity::new(inner.store.clone()).current().await?;
    let mut out = if version == 0 {
        "I have no configured identity beyond my instructions.".to_owned()
    } else {
        format!(
            "**Identity** (version {version}, set by the operator)\n{}",
            profile.describe()
        )
    };
    let mine = own(inner, owner).await?;
    if !mine.is_empty() {
        out.push_str(&format!(
            "\n\n**Your own settings** (our direct messages)\n{}",
            mine.describe()
        ));
    }
    if inner.features.identity_user_edits {
        out.push_str(&format!("\n\n{USAGE}"));
    }
    Ok(out)
}

/// The user's own profile (empty when none, or unreadable).
async fn own(inner: &Inner, owner: MemoryOwner) -> Result<Profile, IdentityError> {
    Ok(inner
        .store
        .user_identity(owner)
        .await?
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_default())
}

/// `context` with the identity's sections first — their only place in the
/// system prompt: the operator's profile, then (in a direct message, when
/// users may set one) the user's own. Read per turn, so an edit applies to
/// the next message.
pub(crate) async fn with_identity(
    inner: &Inner,
    context: Option<String>,
    user: Option<MemoryOwner>,
) -> Option<String> {
    let section = match Identity::new(inner.store.clone()).current().await {
        Ok((_, profile)) => profile.render(),
        Err(e) => {
            tracing::warn!(error = %e, "identity unavailable; answering without it");
            None
        }
    };
    let mine = match user.filter(|_| inner.features.identity_user_edits) {
        Some(owner) => match own(inner, owner).await {
            Ok(p) => p.render_for_user(),
            Err(e) => {
                tracing::warn!(error = %e, "a user's identity settings are unavailable");
                None
            }
        },
        None => None,
    };
    let parts: Vec<String> = [section, mine, context].into_iter().flatten().collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}
