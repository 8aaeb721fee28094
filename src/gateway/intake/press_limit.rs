//! Button presses under the per-user rate limit. Feedback presses count against
//! the same limit as messages (each may start a model call to distill rules),
//! as do reasoning pages (each sends a message);
//! approval decisions have an allowance of their own, so a user who is being
//! rate-limited can still answer the card their turn waits on.

use crate::gateway::intake::limiter::Limit;
use crate::gateway::Inner;
use switchboard_platform::{ButtonPress, PlatformAdapter, PressAnswer};

/// Which allowance a press draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::gateway) enum PressKind {
    Approval,
    Feedback,
    /// A 💭 reasoning page.
    Reading,
}

const SLOW_DOWN: &str = "Slow down — too many presses. Try again in a minute.";

/// Whether `press` may be handled; when not, it is answered with a short
/// "slow down" and nothing else happens.
pub(in crate::gateway) async fn admit(
    inner: &Inner,
    adapter: &dyn PlatformAdapter,
    press: &ButtonPress,
    kind: PressKind,
) -> bool {
    // The operator at the machine, as for messages.
    if adapter.capabilities().local_operator {
        return true;
    }
    let limiter = match kind {
        PressKind::Approval => &inner.gate.approval_presses,
        PressKind::Feedback | PressKind::Reading => &inner.gate.limiter,
    };
    if limiter.check(press.chat.platform, press.user.id) == Limit::Allowed {
        return true;
    }
    tracing::debug!(user = press.user.id.0, kind = ?kind, "press over the rate limit");
    if let Err(e) = adapter
        .answer_press(press, PressAnswer::Private(SLOW_DOWN.into()))
        .await
    {
        tracing::warn!(error = %e, "could not answer a press");
    }
    false
}
