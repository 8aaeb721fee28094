//! URLs as shown in logs and messages: the password and the values of
//! credential query parameters (`?key=`, `?token=`, …) replaced.

/// Query parameters whose value is a credential (Gemini's `?key=`, many
/// APIs' `?api_key=` / `?access_token=`).
const SECRET_PARAMS: &[&str] = &[
    "key",
    "api_key",
    "apikey",
    "api-key",
    "token",
    "access_token",
    "auth",
    "secret",
    "password",
    "sig",
    "signature",
];

/// What a redacted part is replaced with.
const SHOWN: &str = "redacted";

/// Whether a query parameter's name says its value is a credential.
pub(crate) fn is_secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMS.contains(&name.as_str())
}

/// The values of `url`'s credential query parameters (raw and decoded), for
/// the scrubber.
pub(crate) fn query_secrets(url: &url::Url) -> Vec<String> {
    let mut out = Vec::new();
    let raw_pairs = url.query().unwrap_or_default().split('&');
    for pair in raw_pairs {
        if let Some((name, value)) = pair.split_once('=') {
            if is_secret_param(name) && !value.is_empty() {
                out.push(value.to_owned());
            }
        }
    }
    for (name, value) in url.query_pairs() {
        if is_secret_param(&name) && !value.is_empty() && !out.iter().any(|v| *v == value) {
            out.push(value.into_owned());
        }
    }
    out
}

/// `raw` with its password and credential query values replaced; unchanged
/// (byte for byte) when it has neither or is not a URL.
pub fn shown_url(raw: &str) -> String {
    let Ok(mut url) = url::Url::parse(raw) else {
        return raw.to_owned();
    };
    let secret_query = url.query_pairs().any(|(name, _)| is_secret_param(&name));
    if url.password().is_none() && !secret_query {
        return raw.to_owned();
    }
    if url.password().is_some() {
        let _ = url.set_password(Some(SHOWN));
    }
    if secret_query {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(name, value)| {
                let value = if is_secret_param(&name) {
                    SHOWN.to_owned()
                } else {
                    value.into_owned()
                };
                (name.into_owned(), value)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_and_key_parameters_are_hidden_and_the_rest_kept() {
        assert_eq!(
            shown_url("https://user:pw@llm.internal/v1"),
            "https://user:redacted@llm.internal/v1"
        );
        let shown = shown_url(
            "https://generativelanguage.googleapis.com/v1beta?alt=sse&key=AIzaSy-secret-123",
        );
        assert!(!shown.contains("AIzaSy-secret-123"), "{shown}");
        assert!(
            shown.contains("alt=sse") && shown.contains("key=redacted"),
            "{shown}"
        );
        let shown = shown_url("http://h/v1?Api_Key=abc%2Fdef&x=1");
        assert!(!shown.contains("abc"), "{shown}");
        assert!(shown.contains("x=1"), "{shown}");
        // Nothing to hide: the text is left exactly as given.
        for plain in [
            "http://localhost:11434",
            "not a url",
            "http://h/v1?keyboard=1",
        ] {
            assert_eq!(shown_url(plain), plain);
        }
    }

    #[test]
    fn query_secrets_are_found_raw_and_decoded() {
        let url = url::Url::parse("http://h/v1?key=a%2Bb&token=tok-123&q=x")
            .unwrap_or_else(|_| unreachable!("a valid URL"));
        let found = query_secrets(&url);
        assert!(found.contains(&"a%2Bb".to_owned()), "{found:?}");
        assert!(found.contains(&"a+b".to_owned()), "{found:?}");
        assert!(found.contains(&"tok-123".to_owned()), "{found:?}");
        assert!(!found.contains(&"x".to_owned()));
    }
}
