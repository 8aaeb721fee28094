//! Where each channel's delivered messages end, kept on disk so that the
//! next process knows what was posted while none ran.
//!
//! Discord replays nothing to a new process: a message posted while the
//! gateway was stopped (an upgrade, a crash) is never sent as an event. So
//! the pump records, per channel, the newest message it handed to the core
//! (or dropped on purpose), and this file keeps those marks:
//! `DATA_DIR/discord-<bot id>-shards-<first>-<last>.json`, one per process's
//! shard range, written atomically (temp file, fsync, rename) at most every
//! [`FLUSH_EVERY`] and once more when the adapter stops. At start the marks
//! of channels active within the backfill window seed the backfill of each
//! shard's first session (see `backfill.rs`).
//!
//! After a crash the file may lag the last seconds of deliveries: those
//! messages are fetched again, and the core drops them as repeats
//! ([`switchboard_platform::PlatformAdapter::may_redeliver`]). A file that
//! does not read is reported and set aside; nothing is backfilled then.

use crate::backfill::ACTIVE_WITHIN;
use crate::seen::snowflake_at;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// How often changed marks are written. The whole file is rewritten (up to
/// ~1 MB with every channel known), so not every second under steady
/// traffic; what a crash leaves behind is fetched again and dropped by the
/// core as a repeat.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_secs(10);
/// Channels kept; past this the least recently active quarter is forgotten.
const MAX_CHANNELS: usize = 20_000;
/// The file's layout version.
const VERSION: u32 = 1;

/// The newest delivered message of one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Mark {
    /// `None` for a DM channel.
    pub guild: Option<u64>,
    pub last: u64,
}

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    channels: HashMap<u64, Mark>,
}

#[derive(Default)]
struct State {
    channels: HashMap<u64, Mark>,
    dirty: bool,
    /// Channels the file on disk has a mark for: a restart backfills them.
    durable: std::collections::HashSet<u64>,
}

/// The marks of this process, and the file they go to (none: memory only).
pub(crate) struct Marks {
    path: Option<PathBuf>,
    state: Mutex<State>,
}

impl Marks {
    /// Marks kept in memory only (no state directory configured).
    pub fn in_memory() -> Marks {
        Marks {
            path: None,
            state: Mutex::new(State::default()),
        }
    }

    /// The marks of `bot` for shards `first..=last` under `dir`, and those
    /// of channels active within the backfill window (what the previous
    /// process delivered last). A missing file is a first start; one that
    /// does not read is renamed to `*.bad` with a warning.
    pub fn open(
        dir: &Path,
        bot: u64,
        (first, last): (u32, u32),
    ) -> io::Result<(Marks, Vec<(u64, Mark)>)> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("discord-{bot}-shards-{first}-{last}.json"));
        let channels = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<File>(&bytes) {
                Ok(file) if file.version == VERSION => file.channels,
                Ok(file) => {
                    set_aside(
                        &path,
                        &format!("layout version {} is not {VERSION}", file.version),
                    );
                    HashMap::new()
                }
                Err(e) => {
                    set_aside(&path, &e.to_string());
                    HashMap::new()
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => return Err(e),
        };
        let active_since = snowflake_at(SystemTime::now() - ACTIVE_WITHIN);
        let mut active: Vec<(u64, Mark)> = channels
            .iter()
            .filter(|(_, m)| m.last >= active_since)
            .map(|(c, m)| (*c, *m))
            .collect();
        active.sort_unstable_by_key(|(_, m)| std::cmp::Reverse(m.last));
        let marks = Marks {
            path: Some(path),
            state: Mutex::new(State {
                durable: channels.keys().copied().collect(),
                channels,
                dirty: false,
            }),
        };
        Ok((marks, active))
    }

    /// Message `id` of `channel` (in `guild`) was delivered or dropped on purpose.
    pub fn delivered(&self, channel: u64, guild: Option<u64>, id: u64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mark = state
            .channels
            .entry(channel)
            .or_insert(Mark { guild, last: 0 });
        if id <= mark.last {
            return;
        }
        mark.last = id;
        if guild.is_some() {
            mark.guild = guild;
        }
        state.dirty = true;
        if state.channels.len() > MAX_CHANNELS {
            forget_least_active(&mut state.channels, MAX_CHANNELS * 3 / 4);
        }
    }

    /// Makes sure a restart would backfill `channel` from before message
    /// `first` (the oldest of it about to be handed to the core): a channel
    /// the file does not know yet gets a mark just below it. `true` when
    /// that added a mark to write ([`Marks::flush`] before handing over).
    pub fn note_first(&self, channel: u64, guild: Option<u64>, first: u64) -> bool {
        if self.path.is_none() {
            return false;
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.durable.contains(&channel) {
            return false;
        }
        state.channels.entry(channel).or_insert(Mark {
            guild,
            last: first.saturating_sub(1),
        });
        state.dirty = true;
        true
    }

    /// Writes the marks when they changed since the last write. An error is
    /// logged; the marks stay changed and the next flush tries again.
    pub async fn flush(&self) {
        let Some(path) = &self.path else { return };
        let (bytes, written_channels) = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if !state.dirty {
                return;
            }
            state.dirty = false;
            let written: Vec<u64> = state.channels.keys().copied().collect();
            let file = File {
                version: VERSION,
                channels: state.channels.clone(),
            };
            match serde_json::to_vec(&file) {
                Ok(bytes) => (bytes, written),
                Err(e) => {
                    return tracing::error!(error = %e, "could not encode the Discord channel marks")
                }
            }
        };
        let target = path.clone();
        let written = tokio::task::spawn_blocking(move || write_atomically(&target, &bytes)).await;
        let error = match written {
            Ok(Ok(())) => {
                let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                state.durable = written_channels.into_iter().collect();
                return;
            }
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        self.state.lock().unwrap_or_else(|p| p.into_inner()).dirty = true;
        tracing::warn!(path = %path.display(), error = %error, "could not save the Discord channel marks; messages posted while the gateway is stopped may not be fetched at the next start");
    }
}

/// Writes `bytes` to `path` so that a crash leaves the old or the new file whole.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn set_aside(path: &Path, why: &str) {
    let bad = path.with_extension("json.bad");
    let moved = std::fs::rename(path, &bad);
    tracing::warn!(
        path = %path.display(),
        set_aside = %bad.display(),
        moved = moved.is_ok(),
        why,
        "the Discord channel marks do not read; messages posted while no gateway ran are not fetched this time"
    );
}

fn forget_least_active(channels: &mut HashMap<u64, Mark>, keep: usize) {
    let mut newest: Vec<u64> = channels.values().map(|m| m.last).collect();
    newest.sort_unstable_by_key(|n| std::cmp::Reverse(*n));
    if let Some(&threshold) = newest.get(keep) {
        channels.retain(|_, m| m.last > threshold);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recent(offset: u64) -> u64 {
        snowflake_at(SystemTime::now()) + offset
    }

    #[tokio::test]
    async fn marks_survive_a_restart_and_only_active_channels_count() {
        let dir = tempfile::tempdir().unwrap();
        let (marks, active) = Marks::open(dir.path(), 7, (0, 0)).unwrap();
        assert!(active.is_empty(), "a first start");
        let (old, new) = (5, recent(10));
        marks.delivered(1, Some(9), new);
        marks.delivered(1, Some(9), new - 1); // older: no change
        marks.delivered(2, None, recent(20));
        marks.delivered(3, Some(9), old); // long ago
        marks.flush().await;
        let (_, active) = Marks::open(dir.path(), 7, (0, 0)).unwrap();
        let channels: Vec<u64> = active.iter().map(|(c, _)| *c).collect();
        assert_eq!(channels, [2, 1], "newest first, the stale one left out");
        assert_eq!(
            active[1].1,
            Mark {
                guild: Some(9),
                last: new
            }
        );
        let (_, other) = Marks::open(dir.path(), 7, (1, 1)).unwrap();
        assert!(
            other.is_empty(),
            "another shard range has a file of its own"
        );
    }

    #[tokio::test]
    async fn an_unchanged_set_is_not_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let (marks, _) = Marks::open(dir.path(), 7, (0, 0)).unwrap();
        marks.flush().await;
        let path = dir.path().join("discord-7-shards-0-0.json");
        assert!(!path.exists(), "nothing delivered, nothing written");
        marks.delivered(1, None, recent(1));
        marks.flush().await;
        std::fs::remove_file(&path).unwrap();
        marks.flush().await;
        assert!(!path.exists(), "clean after the write");
    }

    #[tokio::test]
    async fn a_file_that_does_not_read_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("discord-7-shards-0-0.json");
        std::fs::write(&path, b"{ not json").unwrap();
        let (marks, active) = Marks::open(dir.path(), 7, (0, 0)).unwrap();
        assert!(active.is_empty());
        assert!(dir.path().join("discord-7-shards-0-0.json.bad").exists());
        marks.delivered(1, None, recent(1));
        marks.flush().await;
        assert_eq!(Marks::open(dir.path(), 7, (0, 0)).unwrap().1.len(), 1);
    }

    #[test]
    fn the_least_active_channels_are_forgotten_past_the_limit() {
        let marks = Marks::in_memory();
        for channel in 1..=(MAX_CHANNELS as u64 + 1) {
            marks.delivered(channel, None, channel * 10);
        }
        let state = marks.state.lock().unwrap();
        assert_eq!(state.channels.len(), MAX_CHANNELS * 3 / 4);
        assert!(state.channels.contains_key(&(MAX_CHANNELS as u64 + 1)));
        assert!(!state.channels.contains_key(&1));
    }
}
