//! The process's own background jobs beside the gateway: the liveness
//! heartbeat, the memory embedder (`EMBEDDINGS_*`), and giving back the
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

/// The background worker embedding memories, when `EMBEDDINGS_*` is set.
fn spawn_embedder(config: &Config, store: &Store, shutdown: &CancellationToken) {
    let Some(embeddings) = config.memory.embeddings.clone() else {
        return;
    };
    if config.memory.enabled {
        tokio::spawn(crate::memory::semantic::run_worker(
            store.clone(),
            crate::memory::semantic::Embedder::new(embeddings),
            shutdown.clone(),
        ));
    }
}
