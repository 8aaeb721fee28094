//! `/model` and `/queue` as menus where the platform has them (a Discord
//! select menu): the bare command's reply carries the choices (the current
//! one marked), and a choice (admitted by `intake::menu_press`) is applied
//! exactly like the typed command — by whoever chose, to their own session.

use crate::domain::SessionKey;
use crate::gateway::commands::{Builtin, Command};
use crate::gateway::session::queue::session_worker;
use crate::gateway::session::queue_mode::{self, QueueMode};
use crate::gateway::Inner;
use crate::store::{SessionId, StoreError};
use std::sync::Arc;
use switchboard_platform::{
    ActionId, ButtonPress, InboundMessage, Menu, MenuOption, PlatformAdapter, UserId,
};

const PREFIX: &str = "cm:";

/// Which command a menu chooses for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    Model,
    Queue,
}

impl Which {
    fn code(self) -> &'static str {
        match self {
            Which::Model => "model",
            Which::Queue => "queue",
        }
    }
}

/// `cm:<which>:<user>`: the menu of `which` shown to `user`.
fn action_id(which: Which, user: UserId) -> Option<ActionId> {
    ActionId::parse(&format!("{PREFIX}{}:{}", which.code(), user.0))
}

/// A menu's action id back into what it chooses and whom it was shown to.
pub(crate) fn parse_action(action: &ActionId) -> Option<(Which, UserId)> {
    let rest = action.as_str().strip_prefix(PREFIX)?;
    let (code, user) = rest.split_once(':')?;
    let which = [Which::Model, Which::Queue]
        .into_iter()
        .find(|w| w.code() == code)?;
    Some((which, UserId(user.parse().ok()?)))
}

/// The menu for the reply to `msg` when it is a bare `/model` or `/queue`
/// and `adapter` shows menus; `None` otherwise (the reply is text only).
pub(crate) async fn menu_for(
    inner: &Inner,
    msg: &InboundMessage,
    key: &SessionKey,
    adapter: &dyn PlatformAdapter,
) -> Option<Menu> {
    if !adapter.capabilities().menus {
        return None;
    }
    let cmd = crate::gateway::commands::parse(&msg.text)?;
    if !cmd.args.is_empty() {
        return None;
    }
    let session = inner.store.sessions().open(key).await.ok()?;
    match cmd.builtin? {
        Builtin::Model => model_menu(inner, key, &session, msg.user.id).await,
        Builtin::Queue => {
            let now = queue_mode::stored(inner, key, &session).await;
            Some(queue_menu(now, msg.user.id)?)
        }
        _ => None,
    }
}

/// The models `user` may switch to, the session's current one marked; none
/// when there is nothing to choose between.
async fn model_menu(
    inner: &Inner,
    key: &SessionKey,
    session: &SessionId,
    user: UserId,
) -> Option<Menu> {
    let choosable = inner.features.models.choosable().await;
    if choosable.len() < 2 {
        return None;
    }
    let current = crate::gateway::chat::select(inner, key, session, None)
        .await
        .name;
    let mut options: Vec<MenuOption> = choosable
        .iter()
        .filter(|m| m.name.chars().count() <= Menu::MAX_VALUE_CHARS)
        .map(|m| MenuOption {
            label: m.name.clone(),
            value: m.name.clone(),
            description: (m.role.as_deref() == Some("default")).then(|| "the default".to_owned()),
            default: m.name == current,
        })
        .collect();
    // At most what a menu holds, the current one kept among them.
    while options.len() > Menu::MAX_OPTIONS {
        let drop = options.iter().rposition(|o| !o.default)?;
        options.remove(drop);
    }
    Some(Menu {
        action: action_id(Which::Model, user)?,
        placeholder: "Switch this chat's model".into(),
        options,
    })
}

fn queue_menu(current: QueueMode, user: UserId) -> Option<Menu> {
    let options = QueueMode::ALL
        .into_iter()
        .map(|mode| MenuOption {
            label: mode.as_str().to_owned(),
            value: mode.as_str().to_owned(),
            description: Some(
                match mode {
                    QueueMode::Followup => "each message gets its own answer, in order",
                    QueueMode::Collect => "messages sent meanwhile are answered together",
                    QueueMode::Interrupt => "a new message stops the answer in progress",
                }
                .to_owned(),
            ),
            default: mode == current,
        })
        .collect();
    Some(Menu {
        action: action_id(Which::Queue, user)?,
        placeholder: "What happens to messages sent while I answer".into(),
        options,
    })
}

/// Runs the command the choice stands for, as `/<which> <value>` typed by
/// the chooser in the menu's chat.
pub(crate) async fn apply(
    inner: &Arc<Inner>,
    press: &ButtonPress,
    which: Which,
    value: &str,
) -> Result<String, StoreError> {
    let key = SessionKey::of(&press.chat, press.user.id);
    match which {
        Which::Model => {
            let cmd = Command {
                name: "model".into(),
                builtin: Some(Builtin::Model),
                args: vec![value],
            };
            let session = inner.store.sessions().open(&key).await?;
            crate::gateway::commands::model::run(inner, &cmd, &key, &session).await
        }
        Which::Queue => {
            let cell = session_worker(inner, key).mode_cell();
            Ok(queue_mode::answer(inner, &key, &[value], &cell).await)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn menu_ids_round_trip_and_fit() {
        for which in [Which::Model, Which::Queue] {
            let id = action_id(which, UserId(1_300_000_000_000_000_011)).unwrap();
            assert!(id.as_str().len() <= ActionId::MAX_LEN);
            assert_eq!(
                parse_action(&id),
                Some((which, UserId(1_300_000_000_000_000_011)))
            );
        }
        for bad in ["cm:model", "cm:voice:1", "cm:queue:x", "ap:model:1"] {
            assert_eq!(parse_action(&ActionId::parse(bad).unwrap()), None, "{bad}");
        }
    }

    #[test]
    fn the_queue_menu_marks_the_current_mode() {
        let menu = queue_menu(QueueMode::Collect, UserId(7)).unwrap();
        let marked: Vec<(&str, bool)> = menu
            .options
            .iter()
            .map(|o| (o.value.as_str(), o.default))
            .collect();
        assert_eq!(
            marked,
            [("followup", false), ("collect", true), ("interrupt", false)]
        );
    }
}
