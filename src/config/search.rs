//! `web_search`'s provider: `SEARCH_PROVIDER` (SearXNG's JSON API, Brave or
//! Tavily), `SEARCH_URL`, `SEARCH_API_KEY` and `SEARCH_RESULTS`. Unset
//! provider: no `web_search` tool.

use super::{number, ConfigError, Lookup};
pub use crate::tools::{SearchConfig, SearchProvider, DEFAULT_SEARCH_RESULTS, MAX_SEARCH_RESULTS};
use switchboard_platform::Secret;
use url::Url;

/// The four variables, checked together: a provider without the URL or key
/// it needs is refused at start, naming the variable.
pub(super) fn search(get: &Lookup<'_>) -> Result<Option<SearchConfig>, ConfigError> {
    let Some(raw) = get("SEARCH_PROVIDER") else {
        return Ok(None);
    };
    let provider = match raw.to_ascii_lowercase().as_str() {
        "searxng" => SearchProvider::Searxng,
        "brave" => SearchProvider::Brave,
        "tavily" => SearchProvider::Tavily,
        "none" | "off" => return Ok(None),
        _ => {
            return Err(ConfigError::Invalid {
                var: "SEARCH_PROVIDER",
                problem: format!("{raw:?} is not a search provider"),
                fix: "use searxng, brave or tavily, or unset it for no web_search tool",
            })
        }
    };
    let url = url(get, provider)?;
    let api_key = get("SEARCH_API_KEY").map(Secret::new);
    if api_key.is_none() && provider != SearchProvider::Searxng {
        return Err(ConfigError::Missing {
            var: "SEARCH_API_KEY",
            fix: "Brave and Tavily need the API key of your account (Brave: the subscription token; Tavily: tvly-…)",
        });
    }
    let results = number::<u8>(&get, "SEARCH_RESULTS")?.unwrap_or(DEFAULT_SEARCH_RESULTS);
    if results > MAX_SEARCH_RESULTS {
        return Err(ConfigError::Invalid {
            var: "SEARCH_RESULTS",
            problem: format!("{results} is more than {MAX_SEARCH_RESULTS}"),
            fix: "use 1 to 10, or unset it for 5",
        });
    }
    Ok(Some(SearchConfig {
        provider,
        url,
        api_key,
        results,
    }))
}

fn url(get: &Lookup<'_>, provider: SearchProvider) -> Result<Url, ConfigError> {
    let raw = match (get("SEARCH_URL"), provider.default_url()) {
        (Some(raw), _) => raw,
        (None, Some(default)) => default.to_owned(),
        (None, None) => {
            return Err(ConfigError::Missing {
                var: "SEARCH_URL",
                fix: "SearXNG has no public endpoint: set it to your instance's address, e.g. SEARCH_URL=http://searx.lan:8080",
            })
        }
    };
    match Url::parse(&raw) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(url),
        _ => Err(ConfigError::Invalid {
            var: "SEARCH_URL",
            problem: "not an http(s) URL".into(),
            fix: "use the endpoint's absolute URL, e.g. http://searx.lan:8080",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(pairs: &[(&str, &str)]) -> Result<Option<SearchConfig>, ConfigError> {
        let map: HashMap<&str, &str> = pairs.iter().copied().collect();
        let get = |k: &str| map.get(k).map(|v| (*v).to_owned());
        search(&get)
    }

    #[test]
    fn unset_means_no_search_and_each_provider_names_what_it_lacks() {
        assert!(parse(&[]).unwrap().is_none());
        let brave = parse(&[("SEARCH_PROVIDER", "Brave"), ("SEARCH_API_KEY", "k")])
            .unwrap()
            .unwrap();
        assert_eq!(brave.provider, SearchProvider::Brave);
        assert_eq!(brave.url.host_str(), Some("api.search.brave.com"));
        assert_eq!(brave.results, DEFAULT_SEARCH_RESULTS);
        let err = parse(&[("SEARCH_PROVIDER", "tavily")]).unwrap_err();
        assert!(err.to_string().contains("SEARCH_API_KEY"), "{err}");
        let err = parse(&[("SEARCH_PROVIDER", "searxng")]).unwrap_err();
        assert!(err.to_string().contains("SEARCH_URL"), "{err}");
        let err = parse(&[("SEARCH_PROVIDER", "google")]).unwrap_err();
        assert!(err.to_string().contains("SEARCH_PROVIDER"), "{err}");
        let err = parse(&[
            ("SEARCH_PROVIDER", "searxng"),
            ("SEARCH_URL", "http://s.lan"),
            ("SEARCH_RESULTS", "11"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("SEARCH_RESULTS"), "{err}");
        let err =
            parse(&[("SEARCH_PROVIDER", "searxng"), ("SEARCH_URL", "file:///x")]).unwrap_err();
        assert!(err.to_string().contains("SEARCH_URL"), "{err}");
    }
}
