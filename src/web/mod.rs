//! The operator web console (`WEB_LISTEN`): server-rendered pages over the
//! store, with the gateway's own decision paths behind its buttons.
//!
//! Every page reads through the store (no SQL here), every list is a page,
//! every action is audited with actor `web`, and no secret is rendered.

mod approvals;
mod audit;
mod auth;
mod chart;
mod client;
mod conversations;
mod csrf;
mod layout;
mod loaded;
mod markdown;
mod mask;
mod overview;
mod plan_table;
mod reauth;
mod session;
mod settings;
mod tasks;
mod users;

pub use markdown::render as render_markdown;
pub use mask::{mask_json, mask_text};
pub use settings::{WebConfig, DEFAULT_REAUTH, MIN_WEB_TOKEN_CHARS};

use crate::gateway::Operator;
use crate::store::{Store, StoreError};
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use switchboard_platform::{Platform, UserId};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Rows on a page of any list.
pub(crate) const PER_PAGE: u32 = 50;
/// The furthest page any list goes to: beyond it is a bad request.
pub(crate) const MAX_PAGE: u32 = 10_000;

const CSS: &str = include_str!("static/console.css");
const JS: &str = include_str!("static/console.js");

/// Everything the console's handlers share. Cheap to clone.
#[derive(Clone)]
pub struct WebState {
    pub(crate) operator: Operator,
    pub(crate) auth: Arc<auth::Auth>,
    pub(crate) settings: Arc<WebSettings>,
}

/// What the console shows of the configuration.
#[derive(Debug, Clone, Default)]
pub struct WebSettings {
    pub access_policy: String,
    pub allowed_users: HashMap<Platform, HashSet<UserId>>,
    /// What the operator's files hold now (live reload); none: not shown.
    pub loaded: Option<Arc<crate::loaded::Loaded>>,
}

impl WebState {
    pub fn new(operator: Operator, config: &WebConfig, settings: WebSettings) -> WebState {
        WebState {
            operator,
            auth: Arc::new(auth::Auth::new(config)),
            settings: Arc::new(settings),
        }
    }

    pub(crate) fn store(&self) -> &Store {
        self.operator.store()
    }

    /// Records an operator action, actor `web`.
    pub(crate) async fn audit(&self, kind: &str, mut detail: serde_json::Value) {
        if let Some(map) = detail.as_object_mut() {
            map.insert("actor".into(), "web".into());
        }
        self.store().audit().record(kind, detail).await;
    }
}

/// Why a page could not be served.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("not found")]
    NotFound,
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("the form is stale or forged; reload the page and try again")]
    Csrf,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let status = match &self {
            WebError::NotFound => StatusCode::NOT_FOUND,
            WebError::BadRequest(_) => StatusCode::BAD_REQUEST,
            WebError::Csrf => StatusCode::FORBIDDEN,
            WebError::Store(e) => {
                tracing::error!(error = %e, "web console: storage error");
                StatusCode::SERVICE_UNAVAILABLE
            }
        };
        let text = match &self {
            WebError::Store(_) => "The database did not answer; try again shortly.".to_owned(),
            other => other.to_string(),
        };
        (status, layout::respond(layout::error_page(status, &text))).into_response()
    }
}

/// The console's routes (also used by the handler tests and the benchmark).
pub fn router(state: WebState) -> Router {
    let pages = Router::new()
        .route("/", get(overview::page))
        .route("/conversations", get(conversations::list))
        .route("/conversations/{id}", get(conversations::show))
        .route("/approvals", get(approvals::page))
        .route("/approvals/{id}/decide", post(approvals::decide))
        .route("/rules/{id}/revoke", post(approvals::revoke_rule))
        .route("/tasks", get(tasks::page))
        .route("/tasks/{id}/cancel", post(tasks::cancel_task))
        .route("/schedules/{id}/cancel", post(tasks::cancel_schedule))
        .route("/users", get(users::page))
        .route("/pairings/{code}/decide", post(users::decide_pairing))
        .route(
            "/memories/{platform}/{user}/{id}/forget",
            post(users::forget),
        )
        .route("/audit", get(audit::page))
        .route("/logout", post(auth::logout))
        .fallback(not_found)
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::require));
    Router::new()
        .route("/login", get(auth::login_page).post(auth::login))
        .route("/static/console.css", get(css))
        .route("/static/console.js", get(js))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .merge(pages)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            auth::host_check,
        ))
        .layer(middleware::from_fn(security_headers))
        .with_state(state)
}

/// Serves the console on `listener` until `shutdown`.
pub async fn serve(listener: TcpListener, state: WebState, shutdown: CancellationToken) {
    let app = router(state).into_make_service_with_connect_info::<SocketAddr>();
    let stop = async move { shutdown.cancelled().await };
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::error!(error = %e, "the web console stopped");
    }
}

async fn not_found() -> WebError {
    WebError::NotFound
}

async fn css() -> impl IntoResponse {
    static_file("text/css; charset=utf-8", CSS)
}

async fn js() -> impl IntoResponse {
    static_file("text/javascript; charset=utf-8", JS)
}

fn static_file(kind: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        body,
    )
}

/// The content security policy: no inline script or style, nothing framed.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// `?page=N` (1-based): the offset of its first row, or a bad request.
pub(crate) fn offset(page: Option<u32>, per: u32) -> Result<(u32, u64), WebError> {
    let page = page.unwrap_or(1);
    if page == 0 || page > MAX_PAGE {
        return Err(WebError::BadRequest(format!(
            "page must be between 1 and {MAX_PAGE}"
        )));
    }
    Ok((page, u64::from(page - 1) * u64::from(per)))
}
