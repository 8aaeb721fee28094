//! Process counters for `/metrics` (Prometheus text format): what came in,
//! how turns ended. Gauges (work in flight, pending approvals, running tasks,
//! queued messages) are read when scraped, not kept here.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// Counters by series (`name{labels}`), in a stable order for scraping.
#[derive(Debug, Default)]
pub struct Metrics {
    counters: Mutex<BTreeMap<(&'static str, String), u64>>,
}

/// What each counter means, for the `# HELP` lines.
const HELP: &[(&str, &str)] = &[
    (
        "switchboard_inbound_messages_total",
        "Messages received from users, by platform.",
    ),
    (
        "switchboard_turns_total",
        "Agent turns finished, by platform and how they ended.",
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
];

impl Metrics {
    /// Adds one to `name` with these labels (values are escaped).
    pub fn inc(&self, name: &'static str, labels: &[(&str, &str)]) {
        let labels = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect::<Vec<_>>()
            .join(",");
        *self
            .counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((name, labels))
            .or_default() += 1;
    }

    /// The counters in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        for (name, help) in HELP {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for ((series, labels), value) in counters.iter().filter(|((n, _), _)| n == name) {
                let _ = writeln!(out, "{series}{{{labels}}} {value}");
            }
        }
        out
    }
}

/// Appends a gauge with its help and type lines.
pub fn gauge(out: &mut String, name: &str, help: &str, value: i64) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
    );
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_render_in_the_text_format() {
        let m = Metrics::default();
        m.inc(
            "switchboard_inbound_messages_total",
            &[("platform", "telegram")],
        );
        m.inc(
            "switchboard_inbound_messages_total",
            &[("platform", "telegram")],
        );
        m.inc(
            "switchboard_turns_total",
            &[("platform", "discord"), ("stop", "answered")],
        );
        let text = m.render();
        assert!(
            text.contains("# TYPE switchboard_inbound_messages_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("switchboard_inbound_messages_total{platform=\"telegram\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("switchboard_turns_total{platform=\"discord\",stop=\"answered\"} 1\n"),
            "{text}"
        );
        let mut g = String::new();
        gauge(&mut g, "switchboard_in_flight", "Work in flight.", 3);
        assert_eq!(
            g,
            "# HELP switchboard_in_flight Work in flight.\n# TYPE switchboard_in_flight gauge\nswitchboard_in_flight 3\n"
        );
        assert_eq!(escape("a\"b\\c"), "a\\\"b\\\\c");
    }
}
