//! Holding a session's input while storage is down: the input stays at the
//! head of its session's queue and is retried with backoff, so a database
//! outage delays answers instead of losing the messages. The sender is told
//! once why the answer is late.

use crate::gateway::delivery::outbound::notify;
use crate::gateway::session::input::SessionInput;
use crate::gateway::Inner;
use crate::store::{Backoff, SessionId, SessionKey};

pub(crate) const STORAGE_DOWN_NOTICE: &str =
    "⚠️ My storage is unavailable right now. I've kept your message and will answer as soon as it's back.";

/// The session of `key`, once storage answers. `None` when the gateway shuts
/// down first (a stored message stays in the inbox for the next process).
/// With `spooled`, storage already refused the input's inbox row: its sender
/// is told at once rather than after another busy timeout.
pub(crate) async fn session_when_stored(
    inner: &Inner,
    key: &SessionKey,
    input: Option<&SessionInput>,
    spooled: bool,
) -> Option<SessionId> {
    let mut backoff = Backoff::default();
    let mut told = false;
    if spooled {
        told = true;
        tell_held(inner, key, input).await;
    }
    loop {
        let e = match inner.store.sessions().open(key).await {
            Ok(session) => {
                inner.durability.storage.worked();
                if told {
                    tracing::info!(%session, "storage is back; answering the held input");
                }
                return Some(session);
            }
            Err(e) => e,
        };
        inner.durability.storage.failed();
        // The next attempt runs on fresh connections (one opened read-only
        // stays so after the file is writable again).
        inner.store.recover();
        tracing::error!(error = %e, retry_in = ?backoff.next_wait(), "storage unavailable; holding the session's input");
        if !told {
            told = true;
            tell_held(inner, key, input).await;
        }
        if !backoff.wait(&inner.life.shutdown).await {
            return None;
        }
    }
}

/// Counts a held input and tells its sender why the answer is late. Only a
/// person who wrote is owed an explanation; notifications, schedules and
/// resumed turns just run late.
async fn tell_held(inner: &Inner, key: &SessionKey, input: Option<&SessionInput>) {
    inner.metrics.inc(
        "switchboard_inputs_held_total",
        &[("platform", key.platform.as_str())],
    );
    if let Some(SessionInput::Message(m)) = input {
        if let Some(adapter) = inner.adapter(m.chat.platform) {
            notify(
                adapter.as_ref(),
                &m.chat,
                STORAGE_DOWN_NOTICE,
                Some(m.message_id),
            )
            .await;
        }
    }
}

/// Runs `op` until storage answers it, with the same backoff as held inputs;
/// `None` when the gateway shuts down first. For steps that must not be
/// skipped, such as claiming a paused turn before its approved call runs.
pub(crate) async fn until_stored<T, F, Fut>(inner: &Inner, what: &str, mut op: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, crate::store::StoreError>>,
{
    let mut backoff = Backoff::default();
    loop {
        match op().await {
            Ok(value) => {
                inner.durability.storage.worked();
                return Some(value);
            }
            Err(e) => {
                inner.durability.storage.failed();
                inner.store.recover();
                tracing::error!(error = %e, retry_in = ?backoff.next_wait(), "storage unavailable; {what} waits for it");
            }
        }
        if !backoff.wait(&inner.life.shutdown).await {
            return None;
        }
    }
}
