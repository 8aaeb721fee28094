//! The process's metrics for `/metrics`, kept with `prometheus-client` and
//! served in the OpenMetrics text format: counters of what came in and how
//! turns ended, latency histograms (turns, model calls, tools, delivery,
//! approvals), and gauges the scrape reads from the database, the adapters
//! and the MCP servers ([`Metrics::set_gauge`], [`Metrics::set_counter`]).

use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_platform::WaitSnapshot;

/// A series' labels, in order.
type Labels = Vec<(String, String)>;

/// Counters: name (as scraped, `_total` included) and help.
const COUNTERS: &[(&str, &str)] = &[
    (
        "switchboard_inbound_messages_total",
        "Messages received from users, by platform.",
    ),
    (
        "switchboard_turns_total",
        "Agent turns finished, by platform and how they ended.",
    ),
    (
        "switchboard_turns_by_model_total",
        "Agent turns finished, by the model that served them last.",
    ),
    (
        "switchboard_intent_checks_total",
        "Turns whose answer lacked a tool the request needs, by platform and outcome (corrected: the model then used it; unmet: answered with a warning).",
    ),
    (
        "switchboard_inputs_held_total",
        "Session inputs held back because storage was unavailable (answered once it is back), by platform.",
    ),
    (
        "switchboard_exchanges_held_total",
        "Answered exchanges whose saving to history failed and was held (spooled, saved once storage is back), by platform.",
    ),
    (
        "switchboard_inbound_unreadable_total",
        "Inbound updates skipped because they could not be read (each logged).",
    ),
    (
        "switchboard_mcp_calls_total",
        "MCP tool calls, by server and how they ended.",
    ),
];

/// Gauges, set when scraped.
const GAUGES: &[(&str, &str)] = &[
    (
        "switchboard_in_flight",
        "Queued inputs, running turns and background tasks of this process.",
    ),
    (
        "switchboard_approvals_pending",
        "Approval cards waiting for a decision (all processes).",
    ),
    (
        "switchboard_tasks_running",
        "Background tasks running (all processes).",
    ),
    (
        "switchboard_inbox_queued",
        "Accepted messages waiting for their session (all processes).",
    ),
    (
        "switchboard_database_up",
        "Whether the database answered this scrape (and its file is the one opened).",
    ),
    (
        "switchboard_mcp_server_up",
        "Whether each MCP server is connected (1) or down (0).",
    ),
    (
        "switchboard_adapter_connected",
        "Whether each platform adapter is connected (1) or reconnecting or failed (0).",
    ),
];

/// Histograms kept elsewhere (each adapter's flood control) and copied in
/// at each scrape ([`Metrics::set_histogram`]): name (without `_seconds`) and help.
const COPIED_HISTOGRAMS: &[(&str, &str)] = &[(
    "switchboard_pacer_wait",
    "Outbound platform calls: time queued in flood control (behind the chat's earlier calls, for a quota, out a 429 pause) before the first attempt went out, by platform.",
)];

/// A histogram whose buckets are counted elsewhere: the last reading.
#[derive(Debug, Clone, Default)]
struct Copied(Arc<Mutex<Option<WaitSnapshot>>>);

impl TypedMetric for Copied {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Copied {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let reading = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let reading = reading.unwrap_or(WaitSnapshot {
            buckets: vec![(f64::INFINITY, 0)],
            count: 0,
            sum_seconds: 0.0,
        });
        encoder.encode_histogram::<NoLabelSet>(
            reading.sum_seconds,
            reading.count,
            &reading.buckets,
            None,
        )
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// The latency histograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Latency {
    /// A turn from its start to its end (answered, paused, failed), by platform and how it stopped.
    Turn,
    /// A model call until its first token (text, reasoning or a tool call), by model.
    FirstToken,
    /// A model call from start to its last token, by model.
    ModelCall,
    /// A tool call, by tool and outcome.
    Tool,
    /// A user's message (its platform timestamp) to the first byte of the answer sent, by platform.
    Delivery,
    /// An approval card from shown to decided, by decision.
    Approval,
}

impl Latency {
    const ALL: [Latency; 6] = [
        Latency::Turn,
        Latency::FirstToken,
        Latency::ModelCall,
        Latency::Tool,
        Latency::Delivery,
        Latency::Approval,
    ];

    /// The name (without the `_seconds` unit suffix) and help.
    fn describe(self) -> (&'static str, &'static str) {
        match self {
            Latency::Turn => ("switchboard_turn_duration", "Agent turns from start to end, by platform and how they ended."),
            Latency::FirstToken => ("switchboard_model_first_token", "Model calls until their first token, by model."),
            Latency::ModelCall => ("switchboard_model_call_duration", "Model calls from request to last token, by model."),
            Latency::Tool => ("switchboard_tool_duration", "Tool calls, by tool and outcome."),
            Latency::Delivery => ("switchboard_delivery_latency", "A user's message (as the platform stamped it) to the first byte of the answer sent, by platform."),
            Latency::Approval => ("switchboard_approval_wait", "Approval cards from shown to decided, by decision."),
        }
    }
}

/// Every series of the process.
pub struct Metrics {
    registry: Registry,
    counters: HashMap<&'static str, Family<Labels, Counter>>,
    gauges: HashMap<&'static str, Family<Labels, Gauge>>,
    latencies: HashMap<Latency, Family<Labels, Histogram>>,
    copied: HashMap<&'static str, Family<Labels, Copied>>,
    /// Serializes the scrape's updates of counters read from elsewhere.
    scrape: Mutex<()>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let mut counters = HashMap::new();
        for (name, help) in COUNTERS {
            let family = Family::<Labels, Counter>::default();
            // The OpenMetrics encoder adds `_total` to a counter's samples.
            let base = name.strip_suffix("_total").unwrap_or(name);
            registry.register(base, *help, family.clone());
            counters.insert(*name, family);
        }
        let mut gauges = HashMap::new();
        for (name, help) in GAUGES {
            let family = Family::<Labels, Gauge>::default();
            registry.register(*name, *help, family.clone());
            gauges.insert(*name, family);
        }
        let mut latencies = HashMap::new();
        for which in Latency::ALL {
            let (name, help) = which.describe();
            // 5 ms to ~82 s, doubling.
            let family = Family::<Labels, Histogram>::new_with_constructor(
                (|| Histogram::new(exponential_buckets(0.005, 2.0, 15))) as fn() -> Histogram,
            );
            registry.register_with_unit(
                name,
                help,
                prometheus_client::registry::Unit::Seconds,
                family.clone(),
            );
            latencies.insert(which, family);
        }
        let mut copied = HashMap::new();
        for (name, help) in COPIED_HISTOGRAMS {
            let family = Family::<Labels, Copied>::default();
            registry.register_with_unit(
                *name,
                *help,
                prometheus_client::registry::Unit::Seconds,
                family.clone(),
            );
            copied.insert(*name, family);
        }
        Metrics {
            registry,
            counters,
            gauges,
            latencies,
            copied,
            scrape: Mutex::new(()),
        }
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

impl Metrics {
    /// Adds one to counter `name` (one of [`COUNTERS`]) with these labels.
    pub fn inc(&self, name: &'static str, labels_: &[(&str, &str)]) {
        match self.counters.get(name) {
            Some(f) => {
                f.get_or_create(&labels(labels_)).inc();
            }
            None => debug_assert!(false, "unknown counter {name}"),
        }
    }

    /// Records how long something took.
    pub fn observe(&self, which: Latency, labels_: &[(&str, &str)], took: Duration) {
        if let Some(f) = self.latencies.get(&which) {
            f.get_or_create(&labels(labels_))
                .observe(took.as_secs_f64());
        }
    }

    /// Sets gauge `name` (one of [`GAUGES`]).
    pub fn set_gauge(&self, name: &'static str, labels_: &[(&str, &str)], value: i64) {
        match self.gauges.get(name) {
            Some(f) => {
                f.get_or_create(&labels(labels_)).set(value);
            }
            None => debug_assert!(false, "unknown gauge {name}"),
        }
    }

    /// Brings counter `name` up to `total`, a count kept elsewhere (an
    /// adapter's, an MCP server's) that only grows.
    pub fn set_counter(&self, name: &'static str, labels_: &[(&str, &str)], total: u64) {
        let _one_at_a_time = self.scrape.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = self.counters.get(name) {
            let c = f.get_or_create(&labels(labels_));
            let now = c.get();
            if total > now {
                c.inc_by(total - now);
            }
        }
    }

    /// Sets histogram `name` (one of [`COPIED_HISTOGRAMS`]) to `reading`, a
    /// histogram counted elsewhere (an adapter's flood control).
    pub fn set_histogram(
        &self,
        name: &'static str,
        labels_: &[(&str, &str)],
        reading: WaitSnapshot,
    ) {
        match self.copied.get(name) {
            Some(f) => {
                *f.get_or_create(&labels(labels_))
                    .0
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(reading);
            }
            None => debug_assert!(false, "unknown histogram {name}"),
        }
    }

    /// Every series in the OpenMetrics text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = encode_registry(&mut out, &self.registry);
        let _ = encode_eof(&mut out);
        out
    }
}

/// The content type of [`Metrics::render`].
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_gauges_and_histograms_render_in_the_openmetrics_format() {
        let m = Metrics::default();
        let tg = [("platform", "telegram")];
        m.inc("switchboard_inbound_messages_total", &tg);
        m.inc("switchboard_inbound_messages_total", &tg);
        m.inc(
            "switchboard_turns_total",
            &[("platform", "discord"), ("stop", "answered")],
        );
        m.set_gauge("switchboard_in_flight", &[], 3);
        m.set_counter("switchboard_inbound_unreadable_total", &tg, 5);
        m.set_counter("switchboard_inbound_unreadable_total", &tg, 5);
        m.observe(
            Latency::Tool,
            &[("tool", "read_file"), ("outcome", "ok")],
            Duration::from_millis(30),
        );
        let text = m.render();
        for line in [
            "# TYPE switchboard_inbound_messages counter\n",
            "switchboard_inbound_messages_total{platform=\"telegram\"} 2\n",
            "switchboard_turns_total{platform=\"discord\",stop=\"answered\"} 1\n",
            "switchboard_in_flight 3\n",
            "switchboard_inbound_unreadable_total{platform=\"telegram\"} 5\n",
            "# TYPE switchboard_tool_duration_seconds histogram\n",
            "# UNIT switchboard_tool_duration_seconds seconds\n",
            "switchboard_tool_duration_seconds_count{tool=\"read_file\",outcome=\"ok\"} 1\n",
            "switchboard_tool_duration_seconds_bucket{le=\"0.04\",tool=\"read_file\",outcome=\"ok\"} 1\n",
            "switchboard_tool_duration_seconds_bucket{le=\"0.02\",tool=\"read_file\",outcome=\"ok\"} 0\n",
        ] {
            assert!(text.contains(line), "{line:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        // Label values are escaped by the encoder.
        m.inc("switchboard_turns_by_model_total", &[("model", "a\"b")]);
        assert!(m.render().contains("model=\"a\\\"b\""));
    }

    #[test]
    fn a_pacers_waits_render_as_a_histogram_with_cumulative_buckets() {
        let m = Metrics::default();
        let waits = switchboard_platform::WaitHistogram::default();
        waits.record(Duration::from_millis(2));
        waits.record(Duration::from_millis(30));
        waits.record(Duration::from_secs(3));
        m.set_histogram(
            "switchboard_pacer_wait",
            &[("platform", "discord")],
            waits.snapshot(),
        );
        let text = m.render();
        for line in [
            "# TYPE switchboard_pacer_wait_seconds histogram\n",
            "switchboard_pacer_wait_seconds_count{platform=\"discord\"} 3\n",
            "switchboard_pacer_wait_seconds_bucket{le=\"0.005\",platform=\"discord\"} 1\n",
            "switchboard_pacer_wait_seconds_bucket{le=\"0.04\",platform=\"discord\"} 2\n",
            "switchboard_pacer_wait_seconds_bucket{le=\"5.12\",platform=\"discord\"} 3\n",
            "switchboard_pacer_wait_seconds_bucket{le=\"+Inf\",platform=\"discord\"} 3\n",
        ] {
            assert!(text.contains(line), "{line:?} in\n{text}");
        }
    }
}
