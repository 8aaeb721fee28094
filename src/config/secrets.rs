//! The configuration's secret values, registered for scrubbing at start.

use super::Config;
use crate::secrets::{token_parts, url_secrets};

impl Config {
    /// Every secret value of `config`: model keys (fallbacks too), bot tokens, the
    /// webhook secret, HTTP tool credentials, the web console's and `switchboard
    /// mcp`'s tokens, and the passwords of its URLs.
    pub fn secret_values(&self) -> Vec<String> {
        let config = self;
        let mut out = Vec::new();
        let keys = std::iter::once(&config.llm.api_key)
            .chain(config.llm.fallbacks.iter().map(|f| &f.api_key))
            .flatten();
        out.extend(keys.map(|k| k.expose().to_owned()));
        let urls = std::iter::once(&config.llm.base_url)
            .chain(config.llm.fallbacks.iter().map(|f| &f.base_url))
            .chain(std::iter::once(&config.database_url));
        for url in urls {
            out.extend(url_secrets(url));
        }
        if let Some(tg) = &config.platforms.telegram {
            out.extend(token_parts(tg.token.expose()));
            if let Some(hook) = &tg.webhook {
                out.push(hook.secret.expose().to_owned());
                out.extend(url_secrets(hook.url.as_str()));
            }
            if let Some(api) = &tg.api_url {
                out.extend(url_secrets(api.as_str()));
            }
        }
        if let Some(stt) = &config.media.stt {
            out.extend(stt.api_key.iter().map(|k| k.expose().to_owned()));
            out.extend(url_secrets(&stt.base_url));
        }
        if let Some(dc) = &config.platforms.discord {
            out.push(dc.token.expose().to_owned());
        }
        for tool in &config.http_tools {
            if let Some((_, secret)) = &tool.auth {
                out.push(secret.expose().to_owned());
            }
            out.extend(url_secrets(&tool.url));
        }
        if let Some(search) = &config.search {
            out.extend(search.api_key.iter().map(|k| k.expose().to_owned()));
            out.extend(url_secrets(search.url.as_str()));
        }
        if let Some(e) = &config.memory.embeddings {
            out.extend(e.api_key.iter().map(|k| k.expose().to_owned()));
            out.extend(url_secrets(&e.base_url));
        }
        if let Some(token) = &config.web.token {
            out.push(token.expose().to_owned());
        }
        if let Some(http) = &config.mcp_http {
            out.push(http.token.expose().to_owned());
        }
        out.extend(self.otel.secret_values());
        // The keys catalogue models and tools added from the chat name.
        out.extend(self.model_keys.values().map(|k| k.expose().to_owned()));
        for server in &self.mcp_servers {
            out.extend(server.secrets.iter().cloned());
        }
        out
    }
}
