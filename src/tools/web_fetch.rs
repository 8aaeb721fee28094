//! web_fetch (being written).
pub struct WebFetchConfig;
pub struct WebFetchTool;
