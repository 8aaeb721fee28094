//! Tests of what this machine may lack and the tests cannot install without
//! root (a browser, bubblewrap, `chattr +i`): skipped with a line on stderr
//! saying why, unless CI asks for them with a `SWITCHBOARD_TEST_REQUIRE_*`
//! variable (`.ci/run` sets them), which makes the skip a failure.

/// Says that a test (or a part of it) is skipped because of `why`, or fails
/// when the environment sets `require`.
pub fn unavailable(require: &str, why: &str) {
    assert!(
        std::env::var_os(require).is_none(),
        "{why}, and {require} asks for this test"
    );
    eprintln!("skipped: {why}");
}
