//! `getUpdates` failures as a bot meets them: another poller with the same
//! token (409 Conflict), a proxy's 502 in front of the Bot API, and a
//! connection that breaks before the answer (a network error). Each failed
//! call is recorded like any other.

use super::{Call, FakeTelegram, Shared};
use axum::body::Body;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// How every `getUpdates` fails while set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollFault {
    /// 409: another `getUpdates` request with this token (a second instance).
    Conflict,
    /// 502 with an HTML body, as a proxy in front of the API answers.
    BadGateway,
    /// The connection breaks while the answer is sent.
    Network,
}

/// Telegram's exact text when a second poller takes over.
pub const CONFLICT: &str =
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";

pub(super) fn answer(shared: &Shared, fault: PollFault, params: Value) -> Response {
    let (code, description) = match fault {
        PollFault::Conflict => (409, CONFLICT),
        PollFault::BadGateway => (502, "Bad Gateway"),
        PollFault::Network => (0, "connection reset"),
    };
    shared.lock().calls.push(Call {
        method: "getUpdates".into(),
        params,
        ok: false,
        error_code: Some(code),
        description: Some(description.into()),
        at: tokio::time::Instant::now(),
    });
    shared.call_recorded.notify_waiters();
    match fault {
        PollFault::Conflict => {
            let body = json!({ "ok": false, "error_code": 409, "description": CONFLICT });
            (StatusCode::CONFLICT, axum::Json(body)).into_response()
        }
        PollFault::BadGateway => (
            StatusCode::BAD_GATEWAY,
            [("content-type", "text/html")],
            "<html><body><h1>502 Bad Gateway</h1></body></html>",
        )
            .into_response(),
        PollFault::Network => {
            // A body that fails mid-way: hyper drops the connection.
            let broken = futures::stream::once(async {
                Err::<axum::body::Bytes, _>(std::io::Error::other("connection reset"))
            });
            Response::new(Body::from_stream(broken))
        }
    }
}

impl FakeTelegram {
    /// Every `getUpdates` fails as `fault` says until called with `None`.
    pub fn fail_polls(&self, fault: Option<PollFault>) {
        self.shared.lock().poll_fault = fault;
    }

    /// How many `getUpdates` calls failed (injected faults included).
    pub fn failed_polls(&self) -> usize {
        self.calls_to("getUpdates").iter().filter(|c| !c.ok).count()
    }
}
