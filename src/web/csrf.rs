//! CSRF tokens: every form carries one bound to the browser's session (an
//! HMAC of its nonce), compared in constant time on every POST.

use super::session::{Auth, Session};
use super::WebError;
use serde::Deserialize;
use std::collections::HashMap;
use subtle::ConstantTimeEq;

/// The form field the token travels in.
pub(crate) const FIELD: &str = "_csrf";

/// A posted form: its fields by name.
#[derive(Debug, Default, Deserialize)]
#[serde(transparent)]
pub(crate) struct Form(HashMap<String, String>);

impl Form {
    pub(crate) fn field(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

/// The token of the session with `nonce`.
pub(crate) fn token(auth: &Auth, nonce: &str) -> String {
    auth.mac(&["csrf", nonce])
}

/// Refuses a form without the session's token.
pub(crate) fn check(auth: &Auth, session: &Session, form: &Form) -> Result<(), WebError> {
    let expected = token(auth, &session.nonce);
    let offered = form.field(FIELD).unwrap_or("");
    if expected.is_empty() || !bool::from(expected.as_bytes().ct_eq(offered.as_bytes())) {
        return Err(WebError::Csrf);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_bound_to_its_session() {
        let auth = Auth::new(&super::super::WebConfig::default());
        let a = Session {
            nonce: "a".into(),
            ..Session::new(true, 0)
        };
        let b = Session {
            nonce: "b".into(),
            ..Session::new(true, 0)
        };
        let form = Form(HashMap::from([(FIELD.to_owned(), token(&auth, "a"))]));
        assert!(check(&auth, &a, &form).is_ok());
        assert!(check(&auth, &b, &form).is_err());
        assert!(check(&auth, &a, &Form::default()).is_err());
    }
}
