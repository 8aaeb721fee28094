//! A model endpoint's URL credentials (`https://user:pass@host/v1`,
//! `?key=…`) kept out of the catalogue: the row stores the URL without
//! them and names the variable holding the whole URL (`url_env`), the way
//! `key_env` names the variable of an API key.

use crate::secrets::is_secret_param;

/// `raw` without its user, password and credential query parameters, and
/// whether it had any. A value that is not a URL is returned as it is.
pub fn without_credentials(raw: &str) -> (String, bool) {
    let Ok(mut url) = url::Url::parse(raw.trim()) else {
        return (raw.to_owned(), false);
    };
    let mut had = !url.username().is_empty() || url.password().is_some();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    if pairs.iter().any(|(name, _)| is_secret_param(name)) {
        had = true;
        let kept: Vec<&(String, String)> = pairs
            .iter()
            .filter(|(name, _)| !is_secret_param(name))
            .collect();
        if kept.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(kept);
        }
    }
    (url.to_string(), had)
}

/// The URL to call: `full` (the variable's value, with its credentials),
/// when it names the same endpoint as the catalogue's `stored` URL; a
/// credential is never sent to an endpoint the catalogue does not name.
pub fn with_credentials(stored: &str, full: &str, var: &str) -> Result<String, String> {
    if without_credentials(full).0 == without_credentials(stored).0 {
        Ok(full.trim().to_owned())
    } else {
        Err(format!(
            "its URL variable {var} names another endpoint than the catalogue's {stored}; update one of them"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_come_off_and_go_back_only_to_the_same_endpoint() {
        let full = "https://ann:s3cret@llm.example.com/v1?key=abc&region=eu";
        let (bare, had) = without_credentials(full);
        assert!(had);
        assert_eq!(bare, "https://llm.example.com/v1?region=eu");
        assert!(!bare.contains("s3cret") && !bare.contains("abc") && !bare.contains("ann"));
        assert_eq!(
            without_credentials("http://127.0.0.1:1/v1"),
            ("http://127.0.0.1:1/v1".to_owned(), false)
        );
        assert_eq!(
            with_credentials(&bare, full, "LLM_BASE_URL").as_deref(),
            Ok(full)
        );
        let moved = with_credentials("https://other.example.com/v1", full, "LLM_BASE_URL");
        assert!(moved.is_err_and(|e| e.contains("LLM_BASE_URL") && !e.contains("s3cret")));
    }
}
