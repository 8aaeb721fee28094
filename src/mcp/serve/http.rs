//! `switchboard mcp` over Streamable HTTP (`MCP_LISTEN`): rmcp's service at
//! `/mcp` behind the [`guard`](super::guard) (own origin, bearer token), one
//! [`Bridge`] per MCP session, bodies capped, ended by the shutdown token.

use super::guard::{self, Ends, Gate};
use super::{Bridge, ServeError};
use crate::secrets::TokenDigest;
use axum::middleware;
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::Secret;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// `switchboard mcp` over Streamable HTTP: where, and the token every
/// request must carry. A listener never exists without its token.
#[derive(Debug, Clone)]
pub struct McpHttpConfig {
    /// `MCP_LISTEN`: the address served (`/mcp` on it).
    pub listen: SocketAddr,
    /// `MCP_TOKEN`: `Authorization: Bearer <token>` on every request.
    pub token: Secret,
}

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The largest request body accepted (a tool call's arguments are small;
/// larger is 413).
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// How long open streams may take to close after the shutdown before the
/// server stops regardless.
const GRACE: Duration = Duration::from_secs(5);

/// The endpoint's routes: `/mcp`, each request through the guard; sessions
/// and their open requests end when `shutdown` is cancelled.
pub fn router(bridge: Bridge, token: TokenDigest, shutdown: &CancellationToken) -> Router {
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        // The guard checks the Origin against the address actually reached
        // and requires the token, so rmcp's loopback-only Host list (which
        // would refuse a LAN address or a proxy's name) is not needed.
        .disable_allowed_hosts();
    // Every session gets its own bridge; they share the store.
    let service = StreamableHttpService::new(
        move || Ok(bridge.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(
            Gate::new(token),
            guard::check,
        ))
}

impl Bridge {
    /// Serves MCP over Streamable HTTP on `config.listen` until `shutdown`,
    /// every request needing `config.token`.
    pub async fn serve_http(
        self,
        config: &McpHttpConfig,
        shutdown: CancellationToken,
    ) -> Result<(), ServeError> {
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| ServeError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let addr = listener.local_addr().map_err(ServeError::Http)?;
        let app = router(self, TokenDigest::new(&config.token), &shutdown)
            .into_make_service_with_connect_info::<Ends>();
        tracing::info!(url = %format!("http://{addr}{MCP_PATH}"), "MCP server listening (Streamable HTTP, bearer MCP_TOKEN)");
        let stop = shutdown.clone();
        let server = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned());
        tokio::select! {
            served = async { server.await } => served.map_err(ServeError::Http),
            () = async {
                shutdown.cancelled().await;
                tokio::time::sleep(GRACE).await;
            } => {
                tracing::warn!("MCP over HTTP: connections still open after the shutdown; stopping anyway");
                Ok(())
            }
        }
    }
}
