//! The commands answered the moment they arrive instead of queueing behind
//! the session's turn: decisions, card listings, `/stop` and `/queue`.

use super::commands::{self, Builtin};
use super::{approvals_cmd, approve_cmd, queue_mode, stop, Gateway};
use crate::domain::SessionKey;
use std::sync::Arc;
use switchboard_platform::{InboundMessage, PlatformAdapter};

impl Gateway {
    /// The commands answered as they arrive instead of queueing: `Some` when
    /// `msg` was one, with the reply (if any).
    pub(super) async fn inline_command(
        &self,
        msg: &InboundMessage,
        key: &SessionKey,
        adapter: &Arc<dyn PlatformAdapter>,
    ) -> Option<Option<String>> {
        let inner = &self.inner;
        let cmd = commands::parse(&msg.text)?;
        Some(match cmd.builtin? {
            // A decision is quick and may be for a card of another session
            // (an approver's), so it does not queue behind this session's
            // turn; an edit's new arguments right behind it then find the
            // approval already sent back.
            Builtin::Approve => Some(approve_cmd::run(inner, adapter, &msg.user, &cmd.args).await),
            // A read of the cards, not a turn.
            Builtin::Approvals => Some(approvals_cmd::run(inner, &cmd, key).await.unwrap_or_else(
                |e| {
                    tracing::error!(error = %e, "could not list approvals");
                    "⚠️ I can't read the approvals right now (storage unavailable).".into()
                },
            )),
            // `/stop` cancels the turn running now; it must not queue behind
            // it. A stopped turn answers for itself ("Cancelled.").
            Builtin::Stop => {
                if self.session_if_exists(key).is_some_and(|h| h.stop()) {
                    None
                } else {
                    Some(
                        stop::deny_waiting_card(inner, key, &msg.user)
                            .await
                            .unwrap_or_else(|| stop::NOTHING_TO_STOP.to_owned()),
                    )
                }
            }
            // About the turn running now: answered at once.
            Builtin::Queue => {
                Some(queue_mode::answer(inner, key, &cmd.args, &self.session(*key)).await)
            }
            _ => return None,
        })
    }
}
