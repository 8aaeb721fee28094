//! `HEALTH_LISTEN`: `GET /healthz` (the database answers and its file is the
//! one opened — not deleted or replaced under the gateway; 503 otherwise) and
//! `GET /metrics` (Prometheus text) for load balancers and monitoring.

use crate::busy::Busy;
use crate::metrics::{gauge, Metrics};
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

#[derive(Clone)]
struct Probe {
    store: Store,
    busy: Busy,
    metrics: Arc<Metrics>,
    adapters: Vec<Arc<dyn PlatformAdapter>>,
}

/// Serves the endpoints on `listener` until `shutdown`.
pub(crate) async fn serve(
    listener: TcpListener,
    store: Store,
    busy: Busy,
    metrics: Arc<Metrics>,
    adapters: Vec<Arc<dyn PlatformAdapter>>,
    shutdown: CancellationToken,
) {
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_text))
        .with_state(Probe {
            store,
            busy,
            metrics,
            adapters,
        });
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
        Ok(Ok(())) => (
            StatusCode::OK,
            Json(serde_json::json!({ "status": "ok", "database": "ok" })),
        ),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "health check: database unavailable");
            unavailable("unavailable")
        }
        Err(_) => unavailable("timed out"),
    }
}

/// `switchboard_inbound_unreadable_total`: what each adapter skipped because
/// it could not read it (malformed updates; each also logged).
fn unreadable_inbound(out: &mut String, adapters: &[Arc<dyn PlatformAdapter>]) {
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "# HELP switchboard_inbound_unreadable_total Inbound updates skipped because they could not be read (each logged).\n# TYPE switchboard_inbound_unreadable_total counter"
    );
    for a in adapters {
        let _ = writeln!(
            out,
            "switchboard_inbound_unreadable_total{{platform=\"{}\"}} {}",
            a.platform(),
            a.unreadable_inbound()
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
    let mut out = p.metrics.render();
    unreadable_inbound(&mut out, &p.adapters);
    let in_flight = i64::try_from(p.busy.count()).unwrap_or(i64::MAX);
    gauge(
        &mut out,
        "switchboard_in_flight",
        "Queued inputs, running turns and background tasks of this process.",
        in_flight,
    );
    match p.store.live_counts().await {
        Ok(c) => {
            gauge(
                &mut out,
                "switchboard_approvals_pending",
                "Approval cards waiting for a decision (all processes).",
                c.pending_approvals,
            );
            gauge(
                &mut out,
                "switchboard_tasks_running",
                "Background tasks running (all processes).",
                c.running_tasks,
            );
            gauge(
                &mut out,
                "switchboard_inbox_queued",
                "Accepted messages waiting for their session (all processes).",
                c.queued_messages,
            );
            // A file deleted or replaced under the gateway still answers,
            // but a restart would not find this data: not up.
            let in_place = p.store.check_file().await == FileState::Present;
            gauge(
                &mut out,
                "switchboard_database_up",
                "Whether the database answered this scrape (and its file is the one opened).",
                i64::from(in_place),
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics: database unavailable");
            gauge(
                &mut out,
                "switchboard_database_up",
                "Whether the database answered this scrape (and its file is the one opened).",
                0,
            );
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
}
