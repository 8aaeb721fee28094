//! The Streamable HTTP transport of a `url` entry: rmcp's reqwest client with
//! the entry's headers (`Authorization` included) on every request.

use super::error::ConnectError;
use rmcp::service::RoleClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use std::collections::HashMap;

/// The transport to `url` sending `headers`.
pub(super) fn transport(
    url: &str,
    headers: &[(String, String)],
) -> Result<impl Transport<RoleClient> + 'static, ConnectError> {
    // rmcp's client takes its TLS crypto from the process default.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut map = HashMap::new();
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ConnectError::Http(format!("`{name}` is not a header name")))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| ConnectError::Http(format!("the `{name}` header's value is invalid")))?;
        map.insert(name, value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(map);
    Ok(StreamableHttpClientTransport::from_config(config))
}
