//! The listeners a start binds besides the platforms: health and metrics
//! (`HEALTH_LISTEN`) and the web console (`WEB_LISTEN`).

use super::RunError;
use crate::config::Config;
use crate::gateway::Gateway;
use crate::loaded::Loaded;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The `HEALTH_LISTEN` listener, bound (a taken port stops the start).
pub(super) async fn bind_health(
    config: &Config,
) -> Result<Option<tokio::net::TcpListener>, RunError> {
    let Some(addr) = config.health_listen else {
        return Ok(None);
    };
    tokio::net::TcpListener::bind(addr)
        .await
        .map(Some)
        .map_err(|e| RunError::Health {
            addr: addr.to_string(),
            reason: e.to_string(),
        })
}

/// Serves the web console when `WEB_LISTEN` is set; returns where.
pub(super) async fn start_web(
    config: &Config,
    gateway: &Gateway,
    shutdown: &CancellationToken,
    loaded: &Arc<Loaded>,
) -> Result<Option<std::net::SocketAddr>, RunError> {
    let Some(addr) = config.web.listen else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| RunError::Web {
            addr: addr.to_string(),
            reason: e.to_string(),
        })?;
    let bound = listener.local_addr().ok();
    let state = web_state(config, gateway, loaded);
    tokio::spawn(crate::web::serve(listener, state, shutdown.clone()));
    tracing::info!(addr = ?bound, "web console listening");
    Ok(bound)
}

pub(super) fn web_state(
    config: &Config,
    gateway: &Gateway,
    loaded: &Arc<Loaded>,
) -> crate::web::WebState {
    let settings = crate::web::WebSettings {
        access_policy: format!("{:?}", config.access_policy).to_ascii_lowercase(),
        allowed_users: config.allowed_users.clone(),
        loaded: Some(Arc::clone(loaded)),
    };
    crate::web::WebState::new(gateway.operator(), &config.web, settings)
}
