//! `/queue followup|collect|interrupt`: what happens to a message that
//! arrives while the session's turn runs — its own turn after it (followup,
//! the default), one turn for all that arrived (collect), or the running turn
//! stopped for it (interrupt). Kept per session; the session worker caches it.

use crate::gateway::Inner;
use crate::store::{SessionKey, StoreError};
use std::sync::{Arc, Mutex};
use switchboard_platform::InboundMessage;

pub use crate::domain::QueueMode;

/// A session's mode as its worker knows it: `None` until read from storage
/// (or set with `/queue`).
#[derive(Clone, Default)]
pub(crate) struct ModeCell(Arc<Mutex<Option<QueueMode>>>);

impl ModeCell {
    pub(crate) fn get(&self) -> Option<QueueMode> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set(&self, mode: QueueMode) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(mode);
    }
}

const USAGE: &str = "Usage: `/queue followup|collect|interrupt` — what happens to messages sent while I am answering: followup answers each in turn; collect answers all that arrived in one next turn; interrupt stops the answer in progress and takes the new message.";

/// The session's stored mode, or the operator's default.
pub(crate) async fn stored(
    inner: &Inner,
    key: &SessionKey,
    session: &crate::store::SessionId,
) -> QueueMode {
    // The chat's own default (`CHATS_FILE`), else the operator's.
    let default = inner
        .chat_settings(key)
        .and_then(|c| c.queue)
        .unwrap_or(inner.features.queue_mode);
    match inner.store.queue_mode(session).await {
        Ok(Some(raw)) => QueueMode::parse(&raw).unwrap_or(default),
        Ok(None) => default,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the session's queue mode; using the default");
            default
        }
    }
}

/// `/queue [mode]`, answered as it arrives (it must not wait behind the
/// turn it is about) for the session whose worker caches its mode in `cell`.
pub(crate) async fn answer(
    inner: &Inner,
    key: &SessionKey,
    args: &[&str],
    cell: &ModeCell,
) -> String {
    run(inner, key, args, cell).await.unwrap_or_else(|e| {
        tracing::error!(error = %e, "could not set the queue mode");
        "⚠️ I can't change that right now (storage unavailable).".into()
    })
}

async fn run(
    inner: &Inner,
    key: &SessionKey,
    args: &[&str],
    cell: &ModeCell,
) -> Result<String, StoreError> {
    let session = inner.store.sessions().open(key).await?;
    let Some(arg) = args.first() else {
        let now = stored(inner, key, &session).await;
        return Ok(format!("Queue mode here: **{}**.\n{USAGE}", now.as_str()));
    };
    let Some(mode) = QueueMode::parse(arg) else {
        return Ok(format!(
            "Unknown queue mode `{}`. {USAGE}",
            arg.replace('`', "'")
        ));
    };
    inner
        .store
        .set_queue_mode(&session, Some(mode.as_str()))
        .await?;
    cell.set(mode);
    Ok(match mode {
        QueueMode::Followup => {
            "Queue mode: **followup** — each message gets its own answer, in order."
        }
        QueueMode::Collect => {
            "Queue mode: **collect** — messages sent while I answer are answered together next."
        }
        QueueMode::Interrupt => {
            "Queue mode: **interrupt** — a new message stops the answer in progress."
        }
    }
    .to_owned())
}

/// Messages that arrived during a turn as one: `first` and `rest`, their
/// texts in order (each its own paragraph), all their files; the last one's
/// id is replied to.
pub(crate) fn merge(first: InboundMessage, rest: Vec<InboundMessage>) -> InboundMessage {
    let mut merged = first;
    let mut texts = vec![std::mem::take(&mut merged.text)];
    let mut files = std::mem::take(&mut merged.attachments);
    for mut m in rest {
        texts.push(std::mem::take(&mut m.text));
        files.append(&mut m.attachments);
        merged = m;
    }
    texts.retain(|t| !t.trim().is_empty());
    merged.text = texts.join("\n\n");
    merged.attachments = files;
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: i64, text: &str) -> InboundMessage {
        let mut m = crate::store::test_message(text);
        m.message_id = switchboard_platform::MessageId(id);
        m
    }

    #[test]
    fn collected_messages_become_one_in_order() {
        let merged = merge(msg(1, "one"), vec![msg(2, ""), msg(3, "three")]);
        assert_eq!(merged.text, "one\n\nthree");
        assert_eq!(merged.message_id.0, 3);
        assert_eq!(merge(msg(4, "alone"), Vec::new()).text, "alone");
    }

    #[test]
    fn modes_parse() {
        for m in QueueMode::ALL {
            assert_eq!(QueueMode::parse(m.as_str()), Some(m));
        }
        assert_eq!(QueueMode::parse("later"), None);
    }
}
