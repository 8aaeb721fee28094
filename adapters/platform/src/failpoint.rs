//! Failure points for the crash tests: named places on a message's path
//! where a process built with the `failpoints` feature (the test builds)
//! kills itself with `SIGKILL` when `SWITCHBOARD_FAILPOINT` names the point
//! (`kept`, or `kept:3` for its third hit). Without the feature a point
//! compiles to nothing. Here, in the contract's crate, so the adapters and
//! the core share one switch.
//!
//! The points, in the order a message meets them: `received` (the core took
//! a burst from the adapters), `kept` (its inbox rows are committed, the
//! adapters not yet told), `confirmed` (an adapter forgot an update on the
//! platform's side: Telegram's offset saved, the webhook's spool file
//! removed), `queued`, `turn_started`, `model_answered` (a
//! model call returned, its tools not run), `tool_started` (a tool with side
//! effects is recorded and about to run), `tool_finished`, `answer_sent`
//! (the answer is in the chat, its rows not removed), `answer_recorded`.

/// The point named by `SWITCHBOARD_FAILPOINT`, and which hit of it kills.
#[cfg(feature = "failpoints")]
fn armed() -> Option<&'static (String, u32)> {
    static ARMED: std::sync::OnceLock<Option<(String, u32)>> = std::sync::OnceLock::new();
    ARMED
        .get_or_init(|| {
            let spec = std::env::var("SWITCHBOARD_FAILPOINT").ok()?;
            let (name, nth) = match spec.split_once(':') {
                Some((name, nth)) => (name, nth.parse().ok()?),
                None => (spec.as_str(), 1),
            };
            Some((name.to_owned(), nth))
        })
        .as_ref()
}

/// Dies here (`SIGKILL`, as a crash would) when this is the armed point.
#[cfg(feature = "failpoints")]
pub fn hit(point: &str) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static HITS: AtomicU32 = AtomicU32::new(0);
    let Some((name, nth)) = armed() else { return };
    if name != point || HITS.fetch_add(1, Ordering::SeqCst) + 1 != *nth {
        return;
    }
    eprintln!("failpoint {point}: killing this process");
    // As `kill -9` would: no unwinding, no destructors, no flush.
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    std::process::abort();
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn hit(_point: &str) {}
