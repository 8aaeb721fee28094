//! What the OpenTelemetry export is told to do (read from `OTEL_*` by
//! `crate::config`): where, with which headers, and which traces.

use switchboard_platform::Secret;

/// The service name spans carry unless `OTEL_SERVICE_NAME` says otherwise.
pub const DEFAULT_SERVICE_NAME: &str = "switchboard";

/// Which turns are exported (`OTEL_TRACES_SAMPLER`): a turn's trace is the
/// root, so the parent-based samplers decide by their root sampler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// Follow a sampled or unsampled parent (`parentbased_*`).
    pub parent_based: bool,
    pub root: RootSampling,
}

/// The sampler of traces without a parent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RootSampling {
    On,
    Off,
    /// This fraction of traces, by trace id.
    Ratio(f64),
}

impl Default for Sampling {
    /// `parentbased_always_on`, the specification's default.
    fn default() -> Self {
        Sampling {
            parent_based: true,
            root: RootSampling::On,
        }
    }
}

/// Where and as what spans are exported; off unless `traces_url` is set.
/// Every part that may carry a credential is a [`Secret`].
#[derive(Debug, Clone)]
pub struct OtelConfig {
    /// `{OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`, without the user and
    /// password the endpoint may carry (they become an `authorization`
    /// header).
    pub traces_url: Option<Secret>,
    /// Headers sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`, and the
    /// endpoint's credentials): names in the clear, values secret.
    pub headers: Vec<(String, Secret)>,
    /// `service.name` of the exported resource (`OTEL_SERVICE_NAME`).
    pub service_name: String,
    /// Which traces are exported.
    pub sampling: Sampling,
    /// The endpoint as configured, for the secret registry.
    pub(crate) raw_endpoint: Option<Secret>,
}

impl Default for OtelConfig {
    fn default() -> Self {
        OtelConfig {
            traces_url: None,
            headers: Vec::new(),
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            sampling: Sampling::default(),
            raw_endpoint: None,
        }
    }
}
