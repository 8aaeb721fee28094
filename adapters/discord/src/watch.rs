//! The link status while serenity reconnects on its own.
//!
//! serenity (0.12) recovers from every non-fatal gateway failure without us:
//! it resumes after a dropped connection, op 7, a resumable INVALID_SESSION
//! and most close codes (4000, 4001, 4002, 4005, 4008, an unclean 1006), and
//! starts a new session (IDENTIFY, through its shard queuer: a restart waits
//! up to 5 s for the old runner, boots are 5 s apart and a failed boot is
//! tried again every 5 s) after a missed heartbeat ACK, INVALID_SESSION
//! `d: false`, 4007 and 4009, or a resume that cannot connect. Only 4004
//! (authentication failed), 4010/4011 (shard), 4013/4014 (intents) are fatal.
//!
//! Several of those paths raise no event we could hear: a shard being
//! restarted is simply absent from the shard manager until its new session is
//! READY. So this task reads the manager's view of every shard of our range
//! each [`DiscordTimings::link_check`] and reports the link as reconnecting
//! while any shard is not connected, once it has been connected before.
//!
//! [`DiscordTimings::link_check`]: crate::DiscordTimings::link_check

use crate::adapter::Shared;
use serenity::gateway::{ConnectionStage, ShardManager};
use serenity::model::id::ShardId;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// While the gateway stays down, the warning is repeated this often (not
/// on every check).
const REMIND_EVERY: Duration = Duration::from_secs(60);

/// The shards of `first..=last` that are not connected, with their stage.
async fn down_shards(manager: &ShardManager, first: u32, last: u32) -> Vec<String> {
    let runners = manager.runners.lock().await;
    (first..=last)
        .filter_map(|id| match runners.get(&ShardId(id)).map(|r| r.stage) {
            Some(ConnectionStage::Connected) => None,
            Some(stage) => Some(format!("shard {id}: {stage}")),
            None => Some(format!("shard {id}: restarting")),
        })
        .collect()
}

/// Watches the shards until `shutdown`.
pub(crate) async fn watch(
    manager: Arc<ShardManager>,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) {
    let (first, last) = shared.config.shard_span();
    let every = shared
        .config
        .timings
        .link_check
        .max(Duration::from_millis(10));
    let mut up = false;
    let mut down_since: Option<Instant> = None;
    let mut reminded = Instant::now();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let down = down_shards(&manager, first, last).await;
        match (down.is_empty(), down_since) {
            (true, _) => {
                if let Some(since) = down_since.take() {
                    tracing::info!(
                        down_for = ?since.elapsed(),
                        "Discord gateway connected again"
                    );
                }
                // Also settles a stage update that said "lost" after all.
                shared.link.connected();
                up = true;
            }
            // Not connected yet at start: that is starting, not a failure.
            (false, None) if up => {
                let what = down.join(", ");
                tracing::warn!(
                    shards = %what,
                    "Discord gateway connection lost; reconnecting (resume, or a new session)"
                );
                shared
                    .link
                    .failed(format!("gateway connection lost ({what})"));
                down_since = Some(Instant::now());
                reminded = Instant::now();
            }
            (false, Some(since)) if reminded.elapsed() >= REMIND_EVERY => {
                tracing::warn!(
                    shards = %down.join(", "),
                    down_for = ?since.elapsed(),
                    "Discord gateway still reconnecting"
                );
                reminded = Instant::now();
            }
            (false, _) => {}
        }
    }
}
