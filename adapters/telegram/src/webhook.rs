//! Webhook mode: `setWebhook` with a secret token, then an axum route on the
//! configured address that answers 401 to a wrong
//! `X-Telegram-Bot-Api-Secret-Token`; updates are forwarded in arrival order.
//! A body that does not parse is answered 200 (Telegram would otherwise
//! resend it forever), counted, and logged by its `update_id` only.
//!
//! Albums are held as in polling (see `album.rs`), but a delivery is
//! acknowledged once queued, so a held album, like the queue, lives in
//! memory until forwarded: a crash within the window loses it, as it loses
//! queued updates. Holding the answer instead would stall Telegram's next
//! delivery — the album's next part — for the whole window. Behind a load
//! balancer, parts that reach different instances arrive as separate
//! messages.
//!
//! The webhook is not deleted on shutdown: several instances may share it
//! behind a load balancer, and one stopping must not cut off the others.

use crate::adapter::Inner;
use crate::album::Albums;
use crate::bad_update::parse_update;
use crate::config::WebhookConfig;
use crate::errors::scrubbed;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use std::sync::Arc;
use switchboard_platform::{InboundSink, PlatformError, Secret};
use teloxide::payloads::SetWebhookSetters;
use teloxide::prelude::Requester;
use teloxide::types::{AllowedUpdate, Update};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Updates received and not yet forwarded; a full queue holds Telegram's
/// next delivery back.
const QUEUE: usize = 64;

/// What the route needs.
#[derive(Clone)]
struct Hook {
    inner: Arc<Inner>,
    secret: Secret,
    updates: mpsc::Sender<Update>,
}

pub(crate) async fn serve(
    inner: &Arc<Inner>,
    hook: &WebhookConfig,
    sink: &InboundSink,
    shutdown: &CancellationToken,
) -> Result<(), PlatformError> {
    let token = &inner.config.token;
    // Same kinds as `polling::ALLOWED_UPDATES`.
    let allowed = vec![AllowedUpdate::Message, AllowedUpdate::CallbackQuery];
    inner
        .bot
        .set_webhook(hook.url.clone())
        .secret_token(hook.secret.expose().to_owned())
        .allowed_updates(allowed)
        .await
        .map_err(|e| PlatformError::Rejected(format!("setWebhook: {}", scrubbed(&e, token))))?;

    let (updates, mut received) = mpsc::channel(QUEUE);
    let state = Hook {
        inner: inner.clone(),
        secret: hook.secret.clone(),
        updates,
    };
    let path = match hook.url.path() {
        "" => "/",
        path => path,
    };
    let router = axum::Router::new()
        .route(path, axum::routing::post(receive))
        .with_state(state);
    let tcp = tokio::net::TcpListener::bind(hook.listen)
        .await
        .map_err(|e| {
            PlatformError::Network(format!(
                "cannot bind the webhook listener {}: {e}",
                hook.listen
            ))
        })?;
    let local = tcp
        .local_addr()
        .map_err(|e| PlatformError::Network(format!("webhook listener address: {e}")))?;
    inner.webhook_addr.send_replace(Some(local));
    tracing::info!(listen = %local, path = hook.url.path(), "Telegram webhook server listening");

    let server_stop = shutdown.child_token();
    let stop_server = server_stop.clone();
    let server = tokio::spawn(async move {
        axum::serve(tcp, router)
            .with_graceful_shutdown(server_stop.cancelled_owned())
            .await
    });

    let mut albums = Albums::new(inner.config.album_window);
    let result = loop {
        let due = albums.next_deadline();
        let next = tokio::select! {
            _ = shutdown.cancelled() => break Ok(()),
            next = received.recv() => next,
            () = sleep_until_some(due) => {
                let sent = tokio::select! {
                    _ = shutdown.cancelled() => break Ok(()),
                    sent = inner.flush_albums(&mut albums, sink) => sent,
                };
                match sent {
                    Ok(()) => continue,
                    Err(e) => break Err(e),
                }
            }
        };
        let Some(update) = next else {
            break Ok(());
        };
        let sent = tokio::select! {
            _ = shutdown.cancelled() => break Ok(()),
            sent = inner.dispatch(&update, sink, &mut albums) => sent,
        };
        if let Err(e) = sent {
            break Err(e);
        }
    };
    // Deliveries from now on are answered 503: Telegram keeps them.
    received.close();
    stop_server.cancel();
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "webhook server ended with an error"),
        Err(e) => tracing::warn!(error = %e, "webhook server task failed"),
    }
    result
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until_some(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// One delivery from Telegram.
async fn receive(State(hook): State<Hook>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let given = headers
        .get("x-telegram-bot-api-secret-token")
        .map(|v| v.as_bytes());
    if !given.is_some_and(|given| same(given, hook.secret.expose().as_bytes())) {
        return StatusCode::UNAUTHORIZED;
    }
    match parse_update(&String::from_utf8_lossy(&body)) {
        Ok(update) => match hook.updates.send(update).await {
            Ok(()) => StatusCode::OK,
            Err(_) => StatusCode::SERVICE_UNAVAILABLE,
        },
        Err(bad) => {
            hook.inner.skipped.record(bad, "webhook");
            StatusCode::OK
        }
    }
}

/// Compares secrets in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn secrets_compare_exactly() {
        assert!(same(b"right-secret", b"right-secret"));
        assert!(!same(b"right-secret", b"right-secreT"));
        assert!(!same(b"right", b"right-secret"));
        assert!(!same(b"", b"x"));
    }
}
