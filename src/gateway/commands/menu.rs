//! Keeps each platform's command menu (Telegram's "/" list) in step with the
//! gateway's commands and the skills, which reload while the gateway runs.

use crate::gateway::commands;
use crate::gateway::Inner;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// After a failed publication, the next try; it doubles while failures
/// repeat (a bot invited without the right scope fails until fixed).
const FIRST_RETRY: Duration = Duration::from_secs(60);
const MAX_RETRY: Duration = Duration::from_secs(3600);

/// Publishes the menu at start and after every skills reload, until shutdown.
pub(crate) async fn publish(inner: Arc<Inner>) {
    let reloads = inner.features.skills.subscribe();
    let shutdown = inner.life.shutdown.clone();
    keep_published(reloads, shutdown, || {
        let inner = Arc::clone(&inner);
        async move {
            let menu = commands::menu(&inner.features.skills.book());
            let mut published = true;
            for adapter in inner.platforms.adapters.values() {
                if let Err(e) = adapter.set_commands(&menu).await {
                    published = false;
                    tracing::warn!(platform = %adapter.platform(), error = %e, "could not publish the command menu; typed commands still work");
                }
            }
            published
        }
    })
    .await;
}

/// Runs `publish_once` now, after every change on `reloads`, and after a
/// backoff while it fails (the first retry after [`FIRST_RETRY`], doubling up
/// to [`MAX_RETRY`]; a success or a reload starts the backoff over).
async fn keep_published<F, Fut>(
    mut reloads: watch::Receiver<u64>,
    shutdown: CancellationToken,
    mut publish_once: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let mut retry_after = FIRST_RETRY;
    loop {
        reloads.borrow_and_update();
        let published = publish_once().await;
        let wait = (!published).then_some(retry_after);
        retry_after = if published {
            FIRST_RETRY
        } else {
            (retry_after * 2).min(MAX_RETRY)
        };
        let retry = async {
            match wait {
                Some(wait) => tokio::time::sleep(wait).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            changed = reloads.changed() => {
                if changed.is_err() {
                    return;
                }
                retry_after = FIRST_RETRY;
            }
            () = retry => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use tokio::time::Instant;

    /// Attempts (time since start, in seconds) of a publisher failing
    /// `failures` times, until `until` seconds have passed.
    async fn attempts(failures: usize, until: u64, reload_at: Option<u64>) -> Vec<u64> {
        let start = Instant::now();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = watch::channel(0);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(keep_published(rx, shutdown.clone(), {
            let seen = Arc::clone(&seen);
            move || {
                let mut seen = seen.lock().unwrap();
                seen.push(start.elapsed().as_secs());
                let published = seen.len() > failures;
                async move { published }
            }
        }));
        if let Some(at) = reload_at {
            tokio::time::sleep(Duration::from_secs(at)).await;
            tx.send_replace(1);
        }
        tokio::time::sleep_until(start + Duration::from_secs(until)).await;
        shutdown.cancel();
        task.await.unwrap();
        let seen = seen.lock().unwrap().clone();
        seen
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_retried_with_a_doubling_backoff_capped_at_an_hour() {
        // 60, 120, 240, 480, 960, 1920, then 3600 s apart.
        let at = attempts(9, 4 * 3600 + 1000, None).await;
        assert_eq!(at, [0, 60, 180, 420, 900, 1860, 3780, 7380, 10980, 14580]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_success_ends_the_retries() {
        assert_eq!(attempts(2, 5 * 3600, None).await, [0, 60, 180]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reload_publishes_at_once_and_starts_the_backoff_over() {
        // Failing throughout: 0, 60, 180, 420; the reload at 500 publishes at
        // once and the next retry is 60 s after it.
        let at = attempts(usize::MAX, 600, Some(500)).await;
        assert_eq!(at, [0, 60, 180, 420, 500, 560]);
    }
}
