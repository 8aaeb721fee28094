//! Keeps each platform's command menu (Telegram's "/" list) in step with the
//! gateway's commands and the skills, which reload while the gateway runs.

use super::commands;
use super::Inner;
use std::sync::Arc;
use std::time::Duration;

/// After a failed publication, the next try.
const RETRY_AFTER: Duration = Duration::from_secs(60);

/// Publishes the menu at start and after every skills reload, until shutdown.
pub(crate) async fn publish(inner: Arc<Inner>) {
    let mut reloads = inner.skills.subscribe();
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
        let retry = async {
            if failed {
                tokio::time::sleep(RETRY_AFTER).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = inner.shutdown.cancelled() => return,
            changed = reloads.changed() => if changed.is_err() { return },
            () = retry => {}
        }
    }
}
