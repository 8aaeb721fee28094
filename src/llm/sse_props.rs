//! Property test of the SSE reader (issue 18's fuzzing target): however the
//! network cuts a stream — inside a line, inside a `\r\n`, inside a multi-byte
//! character — the events read are the same as from the whole body.

use crate::fuzzing::sse_events as read;
use proptest::prelude::*;

fn event() -> impl Strategy<Value = String> {
    let data = "[a-zé中😀 {}\":,]{0,20}";
    prop_oneof![
        data.prop_map(|d| format!("data: {d}\n\n")),
        data.prop_map(|d| format!("data: {d}\r\n\r\n")),
        (data, data).prop_map(|(a, b)| format!("data: {a}\ndata: {b}\n\n")),
        Just(": keep-alive\n\n".to_owned()),
        data.prop_map(|d| format!("event: delta\ndata: {d}\n\n")),
    ]
}

proptest! {
    #[test]
    fn cuts_anywhere_read_the_same_events(
        events in prop::collection::vec(event(), 0..8),
        cuts in prop::collection::vec(any::<usize>(), 0..10),
    ) {
        let body = events.concat().into_bytes();
        prop_assert_eq!(read(&body, &cuts), read(&body, &[]));
    }
}
