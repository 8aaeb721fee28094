//! Serving a fake API on 127.0.0.1 until the fake is dropped.

use std::net::SocketAddr;

use axum::Router;
use tokio_util::sync::CancellationToken;

pub mod model;

/// A running server. Dropping it cancels `shutdown` (which also releases the
/// fake's stalled streams) and stops the server task.
pub struct Served {
    pub addr: SocketAddr,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    /// Serves `app` on `addr` (port 0: an ephemeral one) until `shutdown`.
    pub async fn bind(
        addr: SocketAddr,
        app: Router,
        shutdown: CancellationToken,
        name: &'static str,
    ) -> std::io::Result<Served> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let stop = shutdown.clone();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned());
            if let Err(error) = serve.await {
                tracing::warn!(%error, "{name} stopped");
            }
        });
        Ok(Served {
            addr,
            shutdown,
            task,
        })
    }

    /// [`Served::bind`] on an ephemeral loopback port.
    #[allow(clippy::expect_used)] // a fixture that cannot bind loopback cannot run any test
    pub async fn loopback(app: Router, shutdown: CancellationToken, name: &'static str) -> Served {
        Served::bind(SocketAddr::from(([127, 0, 0, 1], 0)), app, shutdown, name)
            .await
            .expect("fake server: cannot bind 127.0.0.1")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.shutdown.cancel();
        self.task.abort();
    }
}
