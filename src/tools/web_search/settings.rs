//! `web_search`'s settings, read from the configuration (`src/config/search.rs`).

use switchboard_platform::Secret;
use url::Url;

/// Results a search returns when `SEARCH_RESULTS` is unset.
pub const DEFAULT_SEARCH_RESULTS: u8 = 5;
/// The most `SEARCH_RESULTS` may ask for (the model reads every one).
pub const MAX_SEARCH_RESULTS: u8 = 10;

/// A search API `web_search` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchProvider {
    /// A SearXNG instance's `/search?format=json` (JSON enabled in its settings).
    Searxng,
    /// Brave's Web Search API (`X-Subscription-Token`).
    Brave,
    /// Tavily's `/search` (a bearer key).
    Tavily,
}

impl SearchProvider {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchProvider::Searxng => "searxng",
            SearchProvider::Brave => "brave",
            SearchProvider::Tavily => "tavily",
        }
    }

    /// The public endpoint, for the providers that have one.
    pub(crate) fn default_url(self) -> Option<&'static str> {
        match self {
            SearchProvider::Searxng => None,
            SearchProvider::Brave => Some("https://api.search.brave.com/res/v1/web/search"),
            SearchProvider::Tavily => Some("https://api.tavily.com/search"),
        }
    }
}

/// Where and how `web_search` asks.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    pub provider: SearchProvider,
    /// The search endpoint: SearXNG's base URL, or the API's search URL.
    pub url: Url,
    pub api_key: Option<Secret>,
    /// Results per search, 1–10.
    pub results: u8,
}
