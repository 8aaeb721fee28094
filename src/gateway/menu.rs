//! Keeps each platform's command menu (Telegram's "/" list) in step with the
//! gateway's commands and the skills, which reload while the gateway runs.

use super::commands;
use super::Inner;
use std::sync::Arc;
use std::time::Duration;

/// After a failed publication, the next try; it doubles while failures
/// repeat (a bot invited without the right scope fails until fixed).
const FIRST_RETRY: Duration = Duration::from_secs(60);
const MAX_RETRY: Duration = Duration::from_secs(3600);

/// Publishes the menu at start and after every skills reload, until shutdown.
pub(crate) async fn publish(inner: Arc<Inner>) {
    let mut reloads = inner.skills.subscribe();
    let mut retry_after = FIRST_RETRY;
    loop {
        reloads.borrow_and_update();
        let menu = commands::menu(&inner.skills.book());
        let mut failed = false;
        for adapter in inner.adapters.values() {
            if let Err(e) = adapter.set_commands(&menu).await {
                failed = true;
                tracing::warn!(platform = %adapter.platform(), error = %e, "could not publish the command menu; typed commands still work");
            }
        }
        let wait = failed.then_some(retry_after);
        retry_after = if failed {
            (retry_after * 2).min(MAX_RETRY)
        } else {
            FIRST_RETRY
        };
        let retry = async {
            match wait {
                Some(wait) => tokio::time::sleep(wait).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = inner.shutdown.cancelled() => return,
            changed = reloads.changed() => if changed.is_err() { return },
            () = retry => {}
        }
    }
}
