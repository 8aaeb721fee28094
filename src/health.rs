//! `HEALTH_LISTEN`: `GET /healthz` (the database answers and its file is the
//! one opened — not deleted or replaced under the gateway; 503 otherwise) and
//! `GET /metrics` (OpenMetrics text) for load balancers and monitoring.
//!
//! `/healthz` also lists each adapter's connection state; while one is
//! reconnecting (or its receive loop ended) the status is `degraded`, still
//! with 200: the adapter reconnects on its own, and a probe that restarted
//! the process for it would only lose what it holds.

use crate::busy::Busy;
use crate::metrics::Metrics;
use crate::store::{FileState, Store};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::PlatformAdapter;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How long a health check waits for the database.
const DB_CHECK: Duration = Duration::from_secs(2);

/// What the endpoints read.
#[derive(Clone)]
pub(crate) struct Probe {
    pub store: Store,
    pub busy: Busy,
    pub metrics: Arc<Metrics>,
    pub adapters: Vec<Arc<dyn PlatformAdapter>>,
    pub mcp: Arc<crate::mcp::LiveMcp>,
}

/// Serves the endpoints on `listener` until `shutdown`, and the web console
/// when it shares the listener (`WEB_LISTEN` = `HEALTH_LISTEN`).
pub(crate) async fn serve(
    listener: TcpListener,
    probe: Probe,
    console: Option<Router>,
    shutdown: CancellationToken,
) {
    let probes = Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_text))
        .with_state(probe);
    let app = match console {
        Some(console) => probes.merge(console),
        None => probes,
    };
    let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
    let stop = async move { shutdown.cancelled().await };
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::error!(error = %e, "the health endpoint stopped");
    }
}

async fn healthz(State(p): State<Probe>) -> impl IntoResponse {
    let file = p.store.check_file().await;
    if file != FileState::Present {
        return unavailable(file.as_str());
    }
    match tokio::time::timeout(DB_CHECK, p.store.ping()).await {
        Ok(Ok(())) => {
            let (adapters, degraded) = adapter_states(&p.adapters);
            let status = if degraded { "degraded" } else { "ok" };
            (
                StatusCode::OK,
                Json(
                    serde_json::json!({ "status": status, "database": "ok", "adapters": adapters }),
                ),
            )
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "health check: database unavailable");
            unavailable("unavailable")
        }
        Err(_) => unavailable("timed out"),
    }
}

/// Each adapter's connection state by platform, and whether any is down
/// (reconnecting, or its receive loop ended). Starting is not down.
fn adapter_states(adapters: &[Arc<dyn PlatformAdapter>]) -> (serde_json::Value, bool) {
    use switchboard_platform::LinkState;
    let mut states = serde_json::Map::new();
    let mut degraded = false;
    for a in adapters {
        let state = a.link().state;
        degraded |= matches!(state, LinkState::Reconnecting | LinkState::Stopped);
        states.insert(a.platform().to_string(), state.as_str().into());
    }
    (serde_json::Value::Object(states), degraded)
}

/// What each adapter skipped because it could not read it (malformed
/// updates; each also logged), and whether it is connected.
fn adapters(metrics: &Metrics, adapters: &[Arc<dyn PlatformAdapter>]) {
    for a in adapters {
        let platform = [("platform", a.platform().as_str())];
        metrics.set_counter(
            "switchboard_inbound_unreadable_total",
            &platform,
            a.unreadable_inbound(),
        );
        if let Some(waits) = a.pacer_waits() {
            metrics.set_histogram("switchboard_pacer_wait", &platform, waits);
        }
        let connected = a.link().state == switchboard_platform::LinkState::Connected;
        metrics.set_gauge(
            "switchboard_adapter_connected",
            &platform,
            i64::from(connected),
        );
    }
}

fn unavailable(database: &str) -> (StatusCode, Json<serde_json::Value>) {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(serde_json::json!({ "status": "unavailable", "database": database })),
    )
}

async fn metrics_text(State(p): State<Probe>) -> impl IntoResponse {
    let m = &p.metrics;
    adapters(m, &p.adapters);
    crate::mcp::record_metrics(m, p.mcp.clients().servers());
    let in_flight = i64::try_from(p.busy.count()).unwrap_or(i64::MAX);
    m.set_gauge("switchboard_in_flight", &[], in_flight);
    match p.store.live_counts().await {
        Ok(c) => {
            m.set_gauge("switchboard_approvals_pending", &[], c.pending_approvals);
            m.set_gauge("switchboard_tasks_running", &[], c.running_tasks);
            m.set_gauge("switchboard_inbox_queued", &[], c.queued_messages);
            // A file deleted or replaced under the gateway still answers,
            // but a restart would not find this data: not up.
            let in_place = p.store.check_file().await == FileState::Present;
            m.set_gauge("switchboard_database_up", &[], i64::from(in_place));
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics: database unavailable");
            m.set_gauge("switchboard_database_up", &[], 0);
        }
    }
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        m.render(),
    )
}
