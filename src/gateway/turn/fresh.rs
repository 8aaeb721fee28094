//! A message asking for fresh information (the search route's cues: "latest",
//! "today", "news", 新闻, 最新, 实时…, or a link) gets a line in the system
//! context pointing the model at `web_search` — when the tool is there —
//! rather than at what it remembers from training.

use crate::gateway::Inner;

/// The note, worded for the model.
pub(in crate::gateway) const NOTE: &str = "The user asks about something current: look it up with \
     web_search (then read the best result with web_fetch) instead of answering from memory, \
     and say where the answer comes from.";

/// [`NOTE`] when `text` carries the search cues and `web_search` exists.
pub(in crate::gateway) fn note(inner: &Inner, text: &str) -> Option<String> {
    let settings = inner.features.models.settings();
    let cues = settings.routes.search_pattern.as_ref()?;
    (cues.is_match(text) && inner.agent.tools().get("web_search").is_some())
        .then(|| NOTE.to_owned())
}
