//! The process's own background jobs beside the gateway: the liveness
//! heartbeat, the memory and chat-history embedder (`EMBEDDINGS_*`), and giving back the
//! pages only start-up needed.

use crate::busy::Busy;
use crate::config::Config;
use crate::domain::ProcessId;
use crate::store::Store;
use std::net::SocketAddr;
use std::sync::Arc;
use switchboard_platform::PlatformAdapter;
use tokio_util::sync::CancellationToken;

/// Starts every job; each ends with `shutdown`.
pub(super) fn spawn(
    config: &Config,
    store: &Store,
    instance: ProcessId,
    web_addr: Option<SocketAddr>,
    adapters: &[Arc<dyn PlatformAdapter>],
    busy: &Busy,
    shutdown: &CancellationToken,
) {
    // Renews this process's row in `processes` until shutdown.
    tokio::spawn(crate::heartbeat::run(
        store.clone(),
        instance,
        web_addr.map(|a| a.to_string()),
        shutdown.clone(),
    ));
    spawn_embedder(config, store, shutdown);
    tokio::spawn(crate::footprint::release_after_start(
        adapters.to_vec(),
        busy.clone(),
        shutdown.clone(),
    ));
}

/// The background worker embedding memories and chat messages, when
/// `EMBEDDINGS_*` is set (the history search uses it with memory off too).
fn spawn_embedder(config: &Config, store: &Store, shutdown: &CancellationToken) {
    let Some(embeddings) = config.memory.embeddings.clone() else {
        return;
    };
    tokio::spawn(crate::memory::semantic::run_worker(
        store.clone(),
        crate::memory::semantic::Embedder::new(embeddings),
        shutdown.clone(),
    ));
}
