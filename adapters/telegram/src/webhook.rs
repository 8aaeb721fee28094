//! Webhook mode: `setWebhook` with a secret token, then teloxide's axum
//! webhook router (which answers 401 to a wrong `X-Telegram-Bot-Api-Secret-Token`)
//! served on the configured address; updates are forwarded in arrival order.
//!
//! The webhook is not deleted on shutdown: several instances may share it
//! behind a load balancer, and one stopping must not cut off the others.

use crate::adapter::Inner;
use crate::config::WebhookConfig;
use crate::errors::scrubbed;
use futures::StreamExt;
use std::sync::Arc;
use switchboard_platform::{InboundSink, PlatformError};
use teloxide::payloads::SetWebhookSetters;
use teloxide::prelude::Requester;
use teloxide::types::AllowedUpdate;
use teloxide::update_listeners::webhooks::{axum_no_setup, Options};
use teloxide::update_listeners::{AsUpdateStream, UpdateListener};
use tokio_util::sync::CancellationToken;

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

    let mut options = Options::new(hook.listen, hook.url.clone());
    options.secret_token = Some(hook.secret.expose().to_owned());
    let (mut listener, _stop_future, router) = axum_no_setup(options);
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

    let stop_listener = listener.stop_token();
    let mut updates = std::pin::pin!(listener.as_stream());
    let result = loop {
        let next = tokio::select! {
            _ = shutdown.cancelled() => break Ok(()),
            next = updates.next() => next,
        };
        let Some(Ok(update)) = next else {
            break Ok(());
        };
        let sent = tokio::select! {
            _ = shutdown.cancelled() => break Ok(()),
            sent = inner.dispatch(&update, sink) => sent,
        };
        if let Err(e) = sent {
            break Err(e);
        }
    };
    stop_listener.stop();
    stop_server.cancel();
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "webhook server ended with an error"),
        Err(e) => tracing::warn!(error = %e, "webhook server task failed"),
    }
    result
}
