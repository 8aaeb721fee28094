//! The process gives back what only its start-up needed: once every adapter
//! is connected and no turn is running, the executable's pages that start-up
//! paged in leave the resident set, and the heap returns what start-up freed.
//!
//! Start-up runs code that never runs again (migrations, configuration, TLS
//! roots, the adapters' handshakes), and the kernel maps the binary's pages
//! around each fault, so an idle gateway would keep most of its code resident
//! (13 MB of a 24 MB binary, measured in `idle_footprint`). Only mappings of
//! our own executable that are read-only and were never written (no
//! anonymous page in `/proc/self/smaps`) are released: their bytes are the
//! file's, so the next use reads them again from the page cache (a minor
//! fault) — nothing changes for the program but its resident set.

use crate::busy::Busy;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{LinkState, PlatformAdapter};
use tokio_util::sync::CancellationToken;

/// How long start-up may take before the pages are released anyway.
const START_WAIT: Duration = Duration::from_secs(30);
/// How often the adapters' state is looked at meanwhile.
const POLL: Duration = Duration::from_millis(200);
/// How long the gateway stays quiet before the release.
const QUIET: Duration = Duration::from_secs(2);

/// Releases start-up's pages once the gateway has settled: every adapter
/// connected (or [`START_WAIT`] passed) and no turn running for [`QUIET`].
pub(crate) async fn release_after_start(
    adapters: Vec<Arc<dyn PlatformAdapter>>,
    busy: Busy,
    shutdown: CancellationToken,
) {
    let settled = async {
        let deadline = tokio::time::Instant::now() + START_WAIT;
        while tokio::time::Instant::now() < deadline
            && !adapters
                .iter()
                .all(|a| a.link().state == LinkState::Connected)
        {
            tokio::time::sleep(POLL).await;
        }
        loop {
            busy.idle().await;
            tokio::time::sleep(QUIET).await;
            if busy.count() == 0 {
                break;
            }
        }
    };
    tokio::select! {
        () = settled => {}
        () = shutdown.cancelled() => return,
    }
    match tokio::task::spawn_blocking(release_start_up_pages).await {
        Ok(Ok(released)) => tracing::info!(
            code_kib = released.code_kib,
            mappings = released.mappings,
            "start-up pages released"
        ),
        Ok(Err(e)) => tracing::debug!(error = %e, "start-up pages kept"),
        Err(e) => tracing::debug!(error = %e, "start-up pages kept"),
    }
}

/// What [`release_start_up_pages`] gave back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Released {
    /// Resident KiB of the released mappings just before.
    pub code_kib: u64,
    pub mappings: usize,
}

/// Releases the executable's clean read-only pages and trims the heap.
pub(crate) fn release_start_up_pages() -> std::io::Result<Released> {
    let exe = std::fs::read_link("/proc/self/exe")?;
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let mut released = Released::default();
    for m in clean_mappings(&smaps, &exe.to_string_lossy()) {
        drop_pages(&m)?;
        released.code_kib += m.rss_kib;
        released.mappings += 1;
    }
    release_freed_heap();
    Ok(released)
}

/// One mapping of the executable that start-up paged in and nothing wrote.
#[derive(Debug, PartialEq, Eq)]
struct Mapping {
    start: usize,
    end: usize,
    rss_kib: u64,
}

/// The mappings of `exe` in `smaps` that may be released: read-only
/// (`r-xp`, `r--p`), resident, not locked, with no anonymous (written) page
/// — the relocated read-only data (RELRO) has such pages and stays.
fn clean_mappings(smaps: &str, exe: &str) -> Vec<Mapping> {
    let mut found = Vec::new();
    let mut current: Option<(Mapping, bool)> = None;
    for line in smaps.lines() {
        if let Some(header) = mapping_header(line, exe) {
            found.extend(current.take().and_then(|(m, ok)| ok.then_some(m)));
            current = header.map(|m| (m, true));
            continue;
        }
        let Some((m, ok)) = current.as_mut() else {
            continue;
        };
        let (key, value) = line.split_once(':').unwrap_or((line, ""));
        let kib = || value.trim().trim_end_matches("kB").trim().parse::<u64>();
        match key {
            "Rss" => m.rss_kib = kib().unwrap_or(0),
            "Anonymous" => *ok &= kib() == Ok(0),
            "VmFlags" => *ok &= !value.split_whitespace().any(|f| f == "lo"),
            _ => {}
        }
    }
    found.extend(current.and_then(|(m, ok)| ok.then_some(m)));
    found.retain(|m| m.rss_kib > 0);
    found
}

/// `Some(_)` for a mapping's first line: `Some(Some(m))` when it maps `exe`
/// read-only, `Some(None)` for any other mapping; `None` for a field line.
fn mapping_header(line: &str, exe: &str) -> Option<Option<Mapping>> {
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let perms = fields.next()?;
    let path = fields.nth(3).unwrap_or("").trim();
    let read_only = matches!(perms, "r-xp" | "r--p");
    Some(
        (read_only && path == exe && end > start).then_some(Mapping {
            start,
            end,
            rss_kib: 0,
        }),
    )
}

/// Drops the mapping's pages from the resident set; the next access reads
/// them again from the file.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn drop_pages(m: &Mapping) -> std::io::Result<()> {
    // SAFETY: the range is one whole mapping of our own executable, private,
    // without write permission and without a written page (checked in
    // `clean_mappings`), so every page holds exactly the file's bytes; after
    // MADV_DONTNEED the next access faults them in from the same file (the
    // kernel keeps a running executable from being written). No Rust object
    // lives in it and no reference into it changes.
    let rc = unsafe {
        libc::madvise(
            m.start as *mut libc::c_void,
            m.end - m.start,
            libc::MADV_DONTNEED,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn drop_pages(_: &Mapping) -> std::io::Result<()> {
    Ok(())
}

/// Hands freed heap memory back to the system (glibc keeps it otherwise).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn release_freed_heap() {
    // SAFETY: `malloc_trim` only returns free pages of glibc's own heaps to
    // the kernel; it takes glibc's arena locks and touches no Rust object.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn release_freed_heap() {}

#[cfg(test)]
mod tests {
    use super::*;

    const EXE: &str = "/opt/switchboard/bin/switchboard";

    fn smaps() -> String {
        [
            "55d0c0000000-55d0c0400000 r--p 00000000 fd:01 42                         /opt/switchboard/bin/switchboard",
            "Size:               4096 kB",
            "Rss:                3500 kB",
            "Anonymous:             0 kB",
            "VmFlags: rd mr mw me dw sd",
            "55d0c0400000-55d0c1400000 r-xp 00400000 fd:01 42                         /opt/switchboard/bin/switchboard",
            "Rss:               13200 kB",
            "Anonymous:             0 kB",
            "VmFlags: rd ex mr mw me dw sd",
            "55d0c1400000-55d0c1500000 r--p 01400000 fd:01 42                         /opt/switchboard/bin/switchboard",
            "Rss:                 900 kB",
            "Anonymous:           900 kB",
            "VmFlags: rd mr mw me dw ac sd",
            "55d0c1500000-55d0c1600000 rw-p 01500000 fd:01 42                         /opt/switchboard/bin/switchboard",
            "Rss:                 100 kB",
            "Anonymous:           100 kB",
            "7f0000000000-7f0000100000 r-xp 00000000 fd:01 7                          /usr/lib/x86_64-linux-gnu/libc.so.6",
            "Rss:                1000 kB",
            "Anonymous:             0 kB",
            "7f0000200000-7f0000300000 r-xp 00000000 fd:01 43                         /opt/switchboard/bin/switchboard",
            "Rss:                   0 kB",
            "Anonymous:             0 kB",
            "7f0000400000-7f0000500000 r-xp 00000000 fd:01 43                         /opt/switchboard/bin/switchboard",
            "Rss:                  64 kB",
            "Anonymous:             0 kB",
            "VmFlags: rd ex mr mw me lo",
        ]
        .join("\n")
    }

    #[test]
    fn only_the_executables_unwritten_read_only_resident_mappings_are_released() {
        let found = clean_mappings(&smaps(), EXE);
        assert_eq!(
            found,
            vec![
                Mapping {
                    start: 0x55d0_c000_0000,
                    end: 0x55d0_c040_0000,
                    rss_kib: 3500
                },
                Mapping {
                    start: 0x55d0_c040_0000,
                    end: 0x55d0_c140_0000,
                    rss_kib: 13200
                },
            ],
            "RELRO (written), data (rw), a library, an empty and a locked mapping stay"
        );
    }

    #[test]
    fn another_path_releases_nothing() {
        assert!(clean_mappings(&smaps(), "/usr/bin/other").is_empty());
    }

    #[test]
    fn this_test_process_keeps_running_after_its_pages_are_released() {
        let released = release_start_up_pages().unwrap();
        assert!(released.mappings > 0, "{released:?}");
        // The released code runs again: this very function, formatting, …
        assert_eq!(format!("{}", 6 * 7), "42");
    }
}
