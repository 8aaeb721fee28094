//! Each MCP tool's read-only annotation as first seen, for as long as the
//! gateway runs (across the server's restarts and `list_changed`). With
//! `approval: hints` a tool runs without a card only while it said
//! `readOnlyHint: true` at first sight *and* still says so: a server cannot
//! re-annotate a tool into skipping the card later. Such a change is logged
//! and audited (`mcp.tool_reannotated`, shown in the web console's audit
//! log and by `switchboard doctor`); the new class counts from the next
//! start, when the operator has seen it. A change that asks for more
//! (read-only no longer claimed) counts at once.

use crate::store::Store;
use rmcp::model::Tool;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// The audit event of a refused re-annotation.
pub const REANNOTATED: &str = "mcp.tool_reannotated";

/// First-seen annotations of one server's tools.
pub(super) struct Frozen {
    server: String,
    store: Option<Store>,
    first: Mutex<HashMap<String, Option<bool>>>,
    /// Tools whose refused change was reported (once each).
    reported: Mutex<HashSet<String>>,
}

impl Frozen {
    pub(super) fn new(server: String, store: Option<Store>) -> Frozen {
        Frozen {
            server,
            store,
            first: Mutex::new(HashMap::new()),
            reported: Mutex::new(HashSet::new()),
        }
    }

    /// Records the annotations of a listing: new tools are seen for the
    /// first time; a tool now claiming read-only that did not at first is
    /// reported.
    pub(super) async fn see(&self, tools: &[Tool]) {
        let mut changed = Vec::new();
        {
            let mut first = self.first.lock().unwrap_or_else(|p| p.into_inner());
            for tool in tools {
                let now = read_only(tool);
                let was = *first.entry(tool.name.to_string()).or_insert(now);
                if was != Some(true) && now == Some(true) {
                    changed.push((tool.name.to_string(), was));
                }
            }
        }
        for (tool, was) in changed {
            let fresh = self
                .reported
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(tool.clone());
            if !fresh {
                continue;
            }
            tracing::warn!(
                server = %self.server,
                tool = %tool,
                "an MCP tool now claims to be read-only; it keeps the approval of its first listing until the gateway restarts"
            );
            if let Some(store) = &self.store {
                store
                    .audit()
                    .record(
                        REANNOTATED,
                        json!({ "server": self.server, "tool": tool, "first": was, "now": true }),
                    )
                    .await;
            }
        }
    }

    /// `Some(true)` only when the tool was read-only at first sight and
    /// `now` still is; else `now` as far as it asks for more.
    pub(super) fn trusted(&self, tool: &str, now: Option<bool>) -> Option<bool> {
        let first = self.first.lock().unwrap_or_else(|p| p.into_inner());
        match (first.get(tool).copied(), now) {
            (Some(Some(true)), Some(true)) => Some(true),
            (_, Some(true)) => None,
            (_, other) => other,
        }
    }
}

fn read_only(tool: &Tool) -> Option<bool> {
    tool.annotations.as_ref().and_then(|a| a.read_only_hint)
}
