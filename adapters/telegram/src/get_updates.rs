//! `getUpdates` over the bot's HTTP client, answered as raw text: the batch
//! is split into one JSON text per update (see [`crate::raw_json`]) so an
//! update no parser accepts fails alone instead of failing every poll.
//!
//! teloxide's request API parses the whole answer with serde_json, which
//! refuses a lone surrogate escape or nesting past 128 levels anywhere in it,
//! even inside a `RawValue`.

use crate::errors::UpdatesError;
use crate::raw_json;
use serde::{Deserialize, Serialize};
use teloxide::types::ResponseParameters;
use teloxide::{ApiError, Bot, RequestError};

/// The parameters of `getUpdates`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GetUpdates {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    pub limit: u8,
    pub timeout: u32,
    pub allowed_updates: &'static [&'static str],
}

/// An `{"ok": false}` answer.
#[derive(Deserialize)]
struct Failure {
    description: ApiError,
    parameters: Option<ResponseParameters>,
}

/// Calls `getUpdates` and returns each update's JSON text, in order.
pub(crate) async fn get_updates(
    bot: &Bot,
    params: &GetUpdates,
) -> Result<Vec<String>, UpdatesError> {
    let mut url = bot.api_url();
    url.path_segments_mut()
        .map_err(|()| UpdatesError::Envelope("the API URL cannot take a path"))?
        .push(&format!("bot{}", bot.token()))
        .push("GetUpdates");
    let body = serde_json::to_vec(params)
        .map_err(|_| UpdatesError::Envelope("cannot encode the parameters"))?;
    // reqwest errors carry the URL; `RequestError::from` removes the token.
    let response = bot
        .client()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .map_err(RequestError::from)?;
    let status = response.status();
    let bytes = response.bytes().await.map_err(RequestError::from)?;
    match split_answer(&String::from_utf8_lossy(&bytes)) {
        Err(UpdatesError::Shape(_) | UpdatesError::Envelope(_)) if !status.is_success() => {
            Err(UpdatesError::Status(status.as_u16()))
        }
        answer => answer,
    }
}

/// The `{ok, result}` envelope → one text per update, or the API's error as
/// teloxide reports it (so 429s keep their `retry_after`).
pub(crate) fn split_answer(text: &str) -> Result<Vec<String>, UpdatesError> {
    let members = raw_json::members(text)?;
    let field = |name: &str| members.iter().find_map(|(k, v)| (*k == name).then_some(*v));
    match field("ok") {
        Some("true") => {
            let result = field("result").ok_or(UpdatesError::Envelope("no result"))?;
            Ok(raw_json::elements(result)?
                .into_iter()
                .map(str::to_owned)
                .collect())
        }
        Some("false") => {
            let failure: Failure = serde_json::from_str(text)
                .map_err(|_| UpdatesError::Envelope("an error without a description"))?;
            Err(UpdatesError::Request(match failure.parameters {
                Some(ResponseParameters::RetryAfter(after)) => RequestError::RetryAfter(after),
                Some(ResponseParameters::MigrateToChatId(to)) => RequestError::MigrateToChatId(to),
                None => RequestError::Api(failure.description),
            }))
        }
        _ => Err(UpdatesError::Envelope("no ok field")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_update_does_not_spoil_the_batch() {
        let body = r#"{"ok":true,"result":[{"update_id":1},{"update_id":2,"message":{"text":"\ud800"}},{"update_id":3}]}"#;
        let updates = split_answer(body).unwrap();
        assert_eq!(updates.len(), 3);
        assert_eq!(updates[1], r#"{"update_id":2,"message":{"text":"\ud800"}}"#);
        assert_eq!(split_answer(r#"{"ok":true,"result":[]}"#).unwrap().len(), 0);
    }

    #[test]
    fn api_errors_keep_their_meaning() {
        let flood = r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7","parameters":{"retry_after":7}}"#;
        assert!(matches!(
            split_answer(flood),
            Err(UpdatesError::Request(RequestError::RetryAfter(s))) if s.seconds() == 7
        ));
        let conflict = r#"{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}"#;
        assert!(matches!(
            split_answer(conflict),
            Err(UpdatesError::Request(RequestError::Api(
                ApiError::TerminatedByOtherGetUpdates
            )))
        ));
    }

    #[test]
    fn unusable_answers_are_errors_without_the_body() {
        for body in [
            "",
            "<html>502</html>",
            r#"{"result":[]}"#,
            r#"{"ok":true}"#,
            r#"{"ok":true,"result":[1,"#,
        ] {
            let e = split_answer(body).unwrap_err().to_string();
            assert!(e.starts_with("unusable getUpdates answer"), "{e}");
        }
        let e = split_answer(r#"{"ok":false,"secret":"PRIVATE"}"#).unwrap_err();
        assert!(!e.to_string().contains("PRIVATE"));
    }
}
