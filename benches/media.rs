//! Media through the full path: a photo and a one-minute voice note sent
//! through the test channel into the real core (download → store → resize or
//! transcribe → model request with the image part), against the fake LLM and
//! the fake speech-to-text server on 127.0.0.1.
//!
//! Reports, per kind, the latency the file adds over the same message as
//! plain text (median of the runs) and the peak resident memory the file
//! raised the process by (VmHWM after, reset through `/proc/self/clear_refs`
//! before each run, minus VmRSS before).
//!
//! `cargo bench --bench media`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/stats.rs"]
#[allow(dead_code)]
mod stats;

#[path = "../tests/support"]
#[allow(dead_code)]
mod support {
    pub mod fake_llm;
    pub mod fake_stt;
    pub mod images;
    pub mod multipart;
    pub mod serve;
    pub mod test_channel;
}

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stats::ms;
use support::fake_llm::{FakeLlm, Reply};
use support::fake_stt::FakeStt;
use support::test_channel::{Download, TestChannel};
use switchboard_platform::{AttachmentKind, PlatformAdapter};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 5;

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let llm = FakeLlm::start().await;
    llm.forget_requests();
    llm.set_responder(|_| Reply::text("done"));
    let stt = FakeStt::start().await;
    let data = dir.path().join("data");
    let vars: HashMap<&str, String> = [
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", "fake-model".to_owned()),
        ("LLM_VISION", "true".to_owned()),
        ("STT_BASE_URL", stt.base_url()),
        ("DATA_DIR", data.display().to_string()),
        ("WORKSPACE_DIR", dir.path().join("ws").display().to_string()),
        ("ACCESS_POLICY", "open".to_owned()),
        ("USER_MESSAGES_PER_MINUTE", "1000000".to_owned()),
        ("MEDIA_QUOTA_MB_PER_DAY", "100000".to_owned()),
        ("MEMORY_ENABLED", "false".to_owned()),
        ("FEEDBACK_BUTTONS", "false".to_owned()),
    ]
    .into_iter()
    .collect();
    let config = switchboard::Config::from_lookup(|k| vars.get(k).cloned()).expect("config");
    let channel = TestChannel::new();
    let shutdown = CancellationToken::new();
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![channel.clone()];
    let running = switchboard::start(&config, adapters, shutdown.clone())
        .await
        .expect("switchboard starts");

    let photo = photo(4000, 3000);
    // One minute of Opus at 24 kbit/s in an OGG container (the fake
    // transcriber does not decode it; the size is what travels).
    let mut voice = b"OggS\0\x02".to_vec();
    voice.resize(180 * 1024, 0x55);

    println!(
        "media bench: {RUNS} runs each; photo {} (4000×3000 JPEG), voice note {} (60 s)",
        size(photo.len()),
        size(voice.len())
    );
    let mut user = 0;
    let mut run = |kind: AttachmentKind, bytes: &Vec<u8>| {
        user += 1;
        (user, kind, bytes.clone())
    };
    let mut rows = Vec::new();
    for (label, kind, bytes) in [
        ("photo", AttachmentKind::Image, &photo),
        ("voice note", AttachmentKind::Voice, &voice),
    ] {
        let mut added = Vec::new();
        let mut peaks = Vec::new();
        for _ in 0..RUNS {
            let (u, kind, bytes) = run(kind, bytes);
            // The same turn as plain text, then with the file.
            let plain = turn(&channel, u, None).await;
            if kind == AttachmentKind::Voice {
                stt.push("what is the weather like");
            }
            let before = rss_kb();
            reset_peak();
            let a = channel.file(kind, None, Download::Bytes(bytes));
            let with_file = turn(&channel, u, Some(a)).await;
            let peak = hwm_kb();
            added.push(with_file.saturating_sub(plain));
            peaks.push(peak.saturating_sub(before));
        }
        added.sort();
        peaks.sort();
        rows.push((label, added[RUNS / 2], peaks[RUNS - 1]));
    }
    println!(
        "{:<12} {:>22} {:>26}",
        "", "added latency (median)", "peak RSS increase (max)"
    );
    for (label, added, peak) in rows {
        println!(
            "{label:<12} {:>19.1} ms {:>23.1} MB",
            ms(added),
            peak as f64 / 1024.0
        );
    }
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), running.wait()).await;
}

/// One DM turn from `user` (with `attachment`), timed until its answer.
async fn turn(
    channel: &Arc<TestChannel>,
    user: i64,
    attachment: Option<switchboard_platform::Attachment>,
) -> Duration {
    let answered_before = channel
        .log()
        .texts_in(user)
        .iter()
        .filter(|t| *t == "done")
        .count();
    let start = Instant::now();
    match attachment {
        Some(a) => channel.dm_with(user, "what is this?", vec![a]).await,
        None => channel.dm(user, "what is this?").await,
    };
    channel
        .wait_for("the answer", |l| {
            l.texts_in(user).iter().filter(|t| *t == "done").count() > answered_before
        })
        .await;
    start.elapsed()
}

/// A photo-like JPEG: smooth gradients with sensor-like noise, quality 95.
fn photo(w: u32, h: u32) -> Vec<u8> {
    let mut seed = 0x2545_f491_u32;
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let n = (seed % 48) as u8;
        image::Rgb([
            ((x * 255 / w) as u8).wrapping_add(n),
            ((y * 255 / h) as u8).wrapping_add(n / 2),
            (((x + y) * 127 / (w + h)) as u8).wrapping_add(n),
        ])
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut Cursor::new(&mut out), 95)
        .encode_image(&img)
        .unwrap();
    out
}

fn size(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / (1 << 20) as f64)
}

fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn rss_kb() -> u64 {
    status_kb("VmRSS:")
}

fn hwm_kb() -> u64 {
    status_kb("VmHWM:")
}

/// Resets VmHWM to the current RSS (Linux ≥ 4.0).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
