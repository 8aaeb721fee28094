//! Webhook mode: `setWebhook` with a secret token, then an axum route on the
//! configured address that answers 401 to a wrong
//! `X-Telegram-Bot-Api-Secret-Token`; updates are forwarded in arrival order.
//! A delivery is answered 200 only once it is durable: written to the spool
//! (see `webhook_spool.rs`) and synced, and — unless the core gives no
//! receipt within 5 s — kept by the core too, so a process killed before
//! that leaves the update with Telegram, which delivers it again (to a peer
//! behind the same URL). It leaves the spool when the core has acknowledged
//! it, and a restart forwards what a crash left there. A
//! delivery Telegram repeats while its first copy waits is kept once (the
//! core drops a repeat of one already forwarded, by its message). A body
//! that does not parse is answered 200 (Telegram would otherwise resend it
//! forever), counted, logged by its `update_id` only, and kept for the
//! operator (size-capped). A spool that cannot be written answers 503, so
//! Telegram keeps the update and retries.
//!
//! Albums are held as in polling (see `album.rs`): a part is answered 200
//! at once (holding the answer would stall Telegram's next delivery — the
//! album's next part — for the whole window) but stays in the spool until
//! its album has been forwarded, so a crash within the window replays it
//! at the next start. Behind a load balancer, parts that reach different
//! instances arrive as separate messages.
//!
//! The webhook is not deleted on shutdown: several instances may share it
//! behind a load balancer, and one stopping must not cut off the others.

use crate::adapter::Inner;
use crate::album::Albums;
use crate::bad_update::parse_update;
use crate::config::WebhookConfig;
use crate::errors::scrubbed;
use crate::webhook_spool::Spool;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use std::collections::VecDeque;
use std::sync::Arc;
use switchboard_platform::{InboundSink, Pending, PlatformError, Secret};
use teloxide::payloads::SetWebhookSetters;
use teloxide::prelude::Requester;
use teloxide::types::{AllowedUpdate, Update, UpdateKind};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Updates received and not yet forwarded; a full queue holds Telegram's
/// next delivery back.
const QUEUE: usize = 64;
/// How long a delivery's answer waits for the core's receipt before the
/// spool alone vouches for it.
const RECEIPT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What the route needs.
#[derive(Clone)]
struct Hook {
    inner: Arc<Inner>,
    secret: Secret,
    updates: mpsc::Sender<Update>,
    spool: Arc<Spool>,
}

pub(crate) async fn serve(
    inner: &Arc<Inner>,
    hook: &WebhookConfig,
    sink: &InboundSink,
    shutdown: &CancellationToken,
) -> Result<(), PlatformError> {
    register(inner, hook).await?;
    let spool = Arc::new(
        Spool::open(&inner.config.state_dir, inner.me.id)
            .map_err(|e| local("cannot open the webhook spool", e))?,
    );
    let replay = spooled(inner, &spool)?;
    let (updates, mut received) = mpsc::channel(QUEUE);
    let state = Hook {
        inner: inner.clone(),
        secret: hook.secret.clone(),
        updates,
        spool: Arc::clone(&spool),
    };
    let stop_server = shutdown.child_token();
    let server = listen(inner, hook, state, stop_server.clone()).await?;
    let result = forward(inner, sink, &spool, replay, &mut received, shutdown).await;
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

/// Tells Telegram where to deliver, with the secret it must present.
async fn register(inner: &Inner, hook: &WebhookConfig) -> Result<(), PlatformError> {
    // Same kinds as `polling::ALLOWED_UPDATES`.
    let allowed = vec![
        AllowedUpdate::Message,
        AllowedUpdate::CallbackQuery,
        AllowedUpdate::MessageReaction,
    ];
    inner
        .bot
        .set_webhook(hook.url.clone())
        .secret_token(hook.secret.expose().to_owned())
        .allowed_updates(allowed)
        .await
        .map_err(|e| {
            let token = &inner.config.token;
            PlatformError::Rejected(format!("setWebhook: {}", scrubbed(&e, token)))
        })?;
    Ok(())
}

/// What a previous run acknowledged and did not forward: it goes first.
fn spooled(inner: &Inner, spool: &Spool) -> Result<VecDeque<Update>, PlatformError> {
    let left = spool
        .pending()
        .map_err(|e| local("cannot read the webhook spool", e))?;
    let mut replay = VecDeque::new();
    for (id, body) in left {
        match parse_update(&String::from_utf8_lossy(&body)) {
            Ok(update) => replay.push_back(update),
            Err(bad) => {
                inner.skipped.record(bad, "webhook spool");
                spool.done(id);
            }
        }
    }
    if !replay.is_empty() {
        tracing::info!(
            count = replay.len(),
            "forwarding webhook updates kept before a restart"
        );
    }
    Ok(replay)
}

/// Binds the webhook listener and serves the route until `stop`.
async fn listen(
    inner: &Inner,
    hook: &WebhookConfig,
    state: Hook,
    stop: CancellationToken,
) -> Result<JoinHandle<std::io::Result<()>>, PlatformError> {
    let path = match hook.url.path() {
        "" => "/",
        path => path,
    };
    let router = axum::Router::new()
        .route(path, axum::routing::post(receive))
        .with_state(state);
    let tcp = tokio::net::TcpListener::bind(hook.listen)
        .await
        .map_err(|source| PlatformError::Local {
            what: format!("cannot bind the webhook listener {}", hook.listen),
            source,
        })?;
    let local = tcp
        .local_addr()
        .map_err(|e| local("webhook listener address", e))?;
    inner.webhook_addr.send_replace(Some(local));
    tracing::info!(listen = %local, path = hook.url.path(), "Telegram webhook server listening");
    inner.link.connected();
    Ok(tokio::spawn(async move {
        axum::serve(tcp, router)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await
    }))
}

/// Forwards the spooled updates, then each delivery, in order, until
/// shutdown; an update leaves the spool once the core has acknowledged it
/// (an album part once its album has been).
async fn forward(
    inner: &Arc<Inner>,
    sink: &InboundSink,
    spool: &Arc<Spool>,
    replay: VecDeque<Update>,
    received: &mut mpsc::Receiver<Update>,
    shutdown: &CancellationToken,
) -> Result<(), PlatformError> {
    let (settling, receipts) = mpsc::unbounded_channel();
    let settler = tokio::spawn(settle(receipts, sink.clone(), Arc::clone(spool)));
    let result = hand_over(inner, sink, spool, replay, received, &settling, shutdown).await;
    drop(settling);
    // At shutdown the core acknowledges what it still has queued; what
    // gets no receipt in time stays in the spool for the next start.
    let _ = tokio::time::timeout(SETTLE_AT_STOP, settler).await;
    result
}

/// How long a stopping webhook waits for the receipts still due.
const SETTLE_AT_STOP: std::time::Duration = std::time::Duration::from_secs(5);

/// Removes each update from the spool once its receipt has come, in order.
async fn settle(
    mut receipts: mpsc::UnboundedReceiver<(i64, Pending)>,
    sink: InboundSink,
    spool: Arc<Spool>,
) {
    while let Some((id, pending)) = receipts.recv().await {
        match pending.settle(&sink).await {
            Ok(_) => {
                spool.done(id);
                switchboard_platform::failpoint::hit("confirmed");
            }
            // The core has gone: the update stays for the next start.
            Err(_) => return,
        }
    }
}

/// The forwarding loop of [`forward`]: hands each update over and passes
/// its receipt to the settler.
async fn hand_over(
    inner: &Arc<Inner>,
    sink: &InboundSink,
    spool: &Spool,
    mut replay: VecDeque<Update>,
    received: &mut mpsc::Receiver<Update>,
    settling: &mpsc::UnboundedSender<(i64, Pending)>,
    shutdown: &CancellationToken,
) -> Result<(), PlatformError> {
    let mut albums = Albums::new(inner.config.album_window);
    loop {
        let due = albums.next_deadline();
        let next = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            next = async { match replay.pop_front() { Some(u) => Some(u), None => received.recv().await } } => next,
            () = sleep_until_some(due) => {
                // The parts of the albums acknowledged (or not for the bot)
                // leave the spool, also when a stop cuts the flush short.
                let mut done = Vec::new();
                let flushed = {
                    let flush = inner.flush_albums(&mut albums, sink, &mut done);
                    tokio::pin!(flush);
                    tokio::select! {
                        biased;
                        sent = &mut flush => Some(sent),
                        _ = shutdown.cancelled() => {
                            let _ = tokio::time::timeout(SETTLE_AT_STOP, flush).await;
                            None
                        }
                    }
                };
                for id in done {
                    spool.done(id);
                }
                match flushed {
                    Some(sent) => sent?,
                    None => return Ok(()),
                }
                continue;
            }
        };
        let Some(update) = next else {
            return Ok(());
        };
        let pending = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            sent = inner.dispatch(&update, sink, &mut albums) => sent?,
        };
        let id = i64::from(update.id.0);
        let settled = match pending {
            Some(pending) => settling.send((id, pending)).is_ok(),
            // Nothing was handed over; a held album part stays in the
            // spool until its album has been acknowledged.
            None => {
                if !albums.holds(id) {
                    spool.done(id);
                }
                true
            }
        };
        if !settled {
            return Err(PlatformError::Closed);
        }
    }
}

/// A failure of the webhook's own spool or listener.
fn local(what: &str, source: std::io::Error) -> PlatformError {
    PlatformError::Local {
        what: what.to_owned(),
        source,
    }
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
        Ok(update) => {
            // Durable before Telegram is told it arrived.
            let spool = Arc::clone(&hook.spool);
            let id = i64::from(update.id.0);
            let kept = tokio::task::spawn_blocking(move || spool.put(id, &body)).await;
            match kept {
                Ok(Ok(true)) => {}
                // Already kept and waiting: this is Telegram repeating it.
                Ok(Ok(false)) => return StatusCode::OK,
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "cannot write the webhook spool; Telegram will retry");
                    return StatusCode::SERVICE_UNAVAILABLE;
                }
                Err(_) => return StatusCode::SERVICE_UNAVAILABLE,
            }
            let album_part =
                matches!(&update.kind, UpdateKind::Message(m) if m.media_group_id().is_some());
            if hook.updates.send(update).await.is_err() {
                // Stopping: the update stays in the spool for the next start.
                return StatusCode::OK;
            }
            // Answered once the core has it, so a process that dies before
            // that leaves the update with Telegram (and a peer behind the
            // same URL) rather than in its own spool; an album part at once.
            if !album_part && !hook.spool.wait_done(id, RECEIPT_WAIT).await {
                tracing::debug!(update_id = id, "no receipt yet; answered from the spool");
            }
            StatusCode::OK
        }
        Err(bad) => {
            hook.inner.skipped.record(bad, "webhook");
            let spool = Arc::clone(&hook.spool);
            let _ = tokio::task::spawn_blocking(move || spool.keep_bad(&body)).await;
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
