//! Property test of the HTTP tool URL builder (issue 18's fuzzing target): a
//! path value — slashes, `..`, `?`, `#`, `@`, percent signs, any Unicode —
//! stays inside its own segment: the request goes to the declared host and
//! path shape, and a query value never adds a parameter of its own.

use crate::fuzzing::check_items_url;
use proptest::prelude::*;

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
        check_items_url(&id, &q);
    }
}
