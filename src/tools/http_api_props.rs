//! Property test of the HTTP tool URL builder (issue 18's fuzzing target): a
//! path value — slashes, `..`, `?`, `#`, `@`, percent signs, any Unicode —
//! stays inside its own segment: the request goes to the declared host and
//! path shape, and a query value never adds a parameter of its own.

use super::http_api::HttpApiTool;
use super::http_api_defs::HttpToolDef;
use super::DeclaredSchema;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::time::Duration;

fn tool(method: reqwest::Method) -> HttpApiTool {
    let parameters = DeclaredSchema::parse(json!({"type": "object", "properties": {
        "id": {"type": "string"}, "q": {"type": "string"}}}));
    let Ok(parameters) = parameters else {
        unreachable!("a valid schema")
    };
    HttpApiTool::new(
        HttpToolDef {
            name: "items".into(),
            description: "items".into(),
            method,
            url: "https://api.example.com/v1/items/{id}/detail".into(),
            parameters,
            placeholders: vec!["id".into()],
            auth: None,
            headers: Vec::new(),
            requires_approval: false,
            allow_private: false,
            timeout: Duration::from_secs(5),
        },
        &[],
    )
}

fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "\\PC{0,6}",
        prop::sample::select(vec![
            "/",
            "..",
            "../",
            "?",
            "#",
            "@",
            "%2F",
            "%",
            "\\",
            ":",
            "//evil.com",
            " "
        ])
        .prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn a_path_value_stays_in_its_segment(id in hostile(), q in hostile()) {
        let args: Map<String, Value> = [("id".to_owned(), json!(id)), ("q".to_owned(), json!(q))]
            .into_iter()
            .collect();
        match tool(reqwest::Method::GET).build_for_test(&args) {
            Err(_) => prop_assert!(id == "." || id == ".." , "only dot segments are refused: {id:?}"),
            Ok(url) => {
                prop_assert_eq!(url.host_str(), Some("api.example.com"));
                let segments: Vec<&str> = url.path_segments().map(Iterator::collect).unwrap_or_default();
                prop_assert_eq!(segments.len(), 4, "{}", url);
                prop_assert_eq!((segments[0], segments[1], segments[3]), ("v1", "items", "detail"));
                prop_assert!(url.fragment().is_none(), "{}", url);
                let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
                prop_assert_eq!(pairs, vec![("q".to_owned(), q.clone())]);
            }
        }
    }
}
