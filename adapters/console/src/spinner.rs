//! The spinner's clock: while a turn runs (the model thinks, a tool runs),
//! the screen's spinner advances a frame every tick. On a live terminal only.

use crate::render::Screen;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const TICK: Duration = Duration::from_millis(120);

/// Advances `screen`'s spinner while `working` is set, until `stop`.
pub(crate) fn start<W: Write + Send + 'static>(
    screen: Arc<Mutex<Screen<W>>>,
    working: Arc<AtomicBool>,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TICK);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = stop.cancelled() => return,
            }
            if working.load(Ordering::Relaxed) {
                screen.lock().unwrap_or_else(|p| p.into_inner()).spin();
            }
        }
    });
}
