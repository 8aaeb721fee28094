//! The trace exporter: OTLP over HTTP (protobuf) with reqwest, spans batched
//! on the tokio runtime, and flushed at shutdown.

use super::settings::{OtelConfig, RootSampling, Sampling};
use super::TARGET;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use std::collections::HashMap;
use std::time::Duration;
use tracing::level_filters::LevelFilter;
use tracing::Subscriber;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// One export may take this long; a collector that does not answer costs
/// at most this much at shutdown.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the exporter could not be set up (the messages name no URL).
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("cannot build the HTTP client for trace export: {0}")]
    Client(#[source] reqwest::Error),
    #[error("cannot set up the OTLP trace exporter for OTEL_EXPORTER_OTLP_ENDPOINT: {0}")]
    Exporter(String),
}

/// The running exporter; [`Telemetry::shutdown`] exports what is left.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Telemetry")
    }
}

/// The tracing layer that exports the spans of [`TARGET`] to the configured
/// collector, and its handle; `None` when no endpoint is configured. Call
/// within the tokio runtime: the batch processor runs on it.
pub fn layer<S>(
    config: &OtelConfig,
) -> Result<Option<(impl Layer<S> + Send + Sync + 'static, Telemetry)>, TelemetryError>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let Some(url) = &config.traces_url else {
        return Ok(None);
    };
    let client = reqwest::Client::builder()
        .timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(TelemetryError::Client)?;
    let headers: HashMap<String, String> = config
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.expose().to_owned()))
        .collect();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url.expose())
        .with_headers(headers)
        .with_http_client(client)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| TelemetryError::Exporter(crate::secrets::scrub_string(e.to_string())))?;
    let processor =
        BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio).build();
    let resource = Resource::builder_empty()
        .with_service_name(config.service_name.clone())
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource)
        .with_sampler(sampler(config.sampling))
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("switchboard"))
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_level(false)
        .with_tracked_inactivity(false)
        // Only the spans made for export; never a log event or another
        // crate's span (their fields are not vetted for secrets).
        .with_filter(Targets::new().with_target(TARGET, LevelFilter::INFO));
    Ok(Some((layer, Telemetry { provider })))
}

/// The SDK's sampler for `OTEL_TRACES_SAMPLER`.
fn sampler(sampling: Sampling) -> Sampler {
    let root = match sampling.root {
        RootSampling::On => Sampler::AlwaysOn,
        RootSampling::Off => Sampler::AlwaysOff,
        RootSampling::Ratio(ratio) => Sampler::TraceIdRatioBased(ratio),
    };
    if sampling.parent_based {
        Sampler::ParentBased(Box::new(root))
    } else {
        root
    }
}

impl Telemetry {
    /// Exports the spans still batched and stops the exporter.
    pub async fn shutdown(self) {
        let provider = self.provider;
        // The processor's shutdown blocks until its task on the runtime has
        // exported: off the runtime's workers.
        match tokio::task::spawn_blocking(move || provider.shutdown()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %crate::secrets::scrub_string(e.to_string()), "the last spans could not be exported")
            }
            Err(e) => tracing::warn!(error = %e, "the trace exporter's shutdown failed"),
        }
    }
}
