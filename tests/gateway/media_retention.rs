//! Media retention: every file the gateway writes to `DATA_DIR/media` — a
//! download, the scaled copy of a photo the model gets, an image a tool
//! returned — is recorded and collected by the sweep once unused past
//! `MEDIA_RETENTION_DAYS`, kept before; leftovers no row records go once
//! old; a file already gone from disk does not stop the sweep. On SQLite, and
//! on PostgreSQL when `TEST_DATABASE_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use image::{ImageFormat, Rgb, RgbImage};
use sha2::{Digest, Sha256};
use sqlx::Row;
use support::e2e::Harness;
use support::fake_llm::Reply;
use support::postgres::fresh_postgres;
use support::test_channel::Download;
use switchboard::agent::Images;
use switchboard::media::{files, Media, MediaConfig};
use switchboard::store::{MediaFile, MediaOrigin, Store};
use switchboard::tools::{ImageSink, Workspace};
use switchboard_platform::AttachmentKind;

const DAY_MS: i64 = 86_400_000;
/// The default `MEDIA_RETENTION_DAYS`.
const RETENTION_MS: i64 = 30 * DAY_MS;

fn png(w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::new();
    RgbImage::from_pixel(w, h, Rgb([200, 30, 30]))
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A database URL under `dir` for SQLite, and a fresh PostgreSQL database
/// when `TEST_DATABASE_URL` is set.
async fn database_urls(dir: &Path) -> Vec<String> {
    let mut urls = vec![format!("sqlite://{}", dir.join("media.db").display())];
    if let Ok(admin) = std::env::var("TEST_DATABASE_URL") {
        urls.push(fresh_postgres(&admin).await);
    }
    urls
}

/// What the `media` row of `hash` says: origin, original, session, sender.
async fn row(
    url: &str,
    hash: &str,
) -> Option<(String, Option<String>, Option<String>, Option<i64>)> {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    let row =
        sqlx::query("SELECT origin, derived_from, session_id, user_id FROM media WHERE hash = $1")
            .bind(hash)
            .fetch_optional(&pool)
            .await
            .unwrap();
    pool.close().await;
    row.map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
}

#[tokio::test]
async fn scaled_photos_and_tool_images_are_swept_past_retention_and_kept_before() {
    let dir = tempfile::tempdir().unwrap();
    for url in database_urls(dir.path()).await {
        let h = Harness::with(&[("LLM_VISION", "true"), ("DATABASE_URL", url.as_str())]).await;
        h.llm.push(Reply::text("A red square."));
        let photo = png(3000, 2000);
        let a = h.channel.file(
            AttachmentKind::Image,
            Some("red.png"),
            Download::Bytes(photo.clone()),
        );
        h.channel.dm_with(1, "what is this?", vec![a]).await;
        h.wait_for("the answer", |l| l.has_text("A red square."))
            .await;
        h.idle().await;
        let session = h.session(1, 1).await;
        let history = h
            .running
            .store
            .history()
            .recent(&session, 50)
            .await
            .unwrap();
        let scaled = history
            .iter()
            .flat_map(|m| m.images.iter())
            .map(|i| i.hash.clone())
            .next()
            .expect("the photo's scaled copy is in history");
        let original = sha(&photo);
        assert_ne!(scaled, original, "the model gets a scaled copy");
        assert_eq!(
            row(&url, &scaled).await,
            Some((
                "scaled".to_owned(),
                Some(original.clone()),
                Some(session.as_str().to_owned()),
                Some(1)
            )),
            "{url}"
        );

        // An MCP tool's image, handed over as the MCP client does.
        let media_dir = h.data_dir().join("media");
        let sink = ImageSink::new(
            Images {
                dir: media_dir.clone(),
                store: h.running.store.clone(),
                keep_turns: 3,
                enabled: Arc::new(AtomicBool::new(true)),
            },
            (session.as_str()).parse().unwrap(),
        );
        let produced = sink.attach(png(40, 20)).await.unwrap().hash;
        assert_eq!(
            row(&url, &produced).await.map(|r| (r.0, r.2)),
            Some(("produced".to_owned(), Some(session.as_str().to_owned())))
        );

        let media = Media::new(
            h.config.media.clone(),
            h.running.store.clone(),
            h.data_dir(),
            "fake-model",
            Arc::new(Workspace::new(h.workspace()).unwrap()),
        );
        let on_disk = |hash: &str| files::path_of(&media_dir, hash).exists();
        let all = [&original, &scaled, &produced];
        media
            .sweep_at(now_ms() + RETENTION_MS - DAY_MS)
            .await
            .unwrap();
        assert!(all.iter().all(|h| on_disk(h)), "kept within the retention");

        let removed = media
            .sweep_at(now_ms() + RETENTION_MS + DAY_MS)
            .await
            .unwrap();
        assert!(removed >= 3, "{removed}");
        for hash in all {
            assert!(!on_disk(hash), "{hash} swept ({url})");
            assert!(!h.running.store.media().recorded(hash).await.unwrap());
        }
        h.stop().await;
    }
}

static S1: std::sync::LazyLock<switchboard::domain::SessionId> =
    std::sync::LazyLock::new(|| "s1".parse().unwrap());

/// A download's record.
fn inbound(hash: &str) -> MediaFile<'_> {
    MediaFile {
        hash,
        mime: "image/png",
        size: 18,
        origin: MediaOrigin::Inbound,
        session: Some(&S1),
        sender: None,
    }
}

/// Writes `bytes` under their hash in `dir`, last written `age` ago.
fn leftover(dir: &Path, bytes: &[u8], age: Duration) -> PathBuf {
    let path = files::path_of(dir, &sha(bytes));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, bytes).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
    path
}

#[tokio::test]
async fn leftovers_past_retention_go_fresh_ones_stay_and_a_missing_file_does_not_stop_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    for url in database_urls(dir.path()).await {
        let data = tempfile::tempdir().unwrap();
        let store = Store::open(&url).await.unwrap();
        let config = MediaConfig::new(data.path());
        let media_dir = config.dir.clone();
        let media = Media::new(
            config,
            store.clone(),
            data.path().to_path_buf(),
            "fake-model",
            Arc::new(Workspace::new(data.path().join("ws")).unwrap()),
        );
        let month = Duration::from_secs(31 * 86_400);

        // Written before files were recorded: nothing in the table.
        let old = leftover(&media_dir, b"an old scaled photo", month);
        let fresh = leftover(&media_dir, b"a tool image of today", Duration::ZERO);
        // Not a media file: left alone whatever its age.
        let other = media_dir.join("ab").join("README");
        std::fs::create_dir_all(other.parent().unwrap()).unwrap();
        std::fs::write(&other, "operator's note").unwrap();
        // Recorded and in use, though its file is old.
        let used = leftover(&media_dir, b"a photo sent again", month);
        let used_hash = sha(b"a photo sent again");
        store.media().touch(&inbound(&used_hash)).await.unwrap();

        assert_eq!(media.sweep().await.unwrap(), 1, "{url}");
        assert!(!old.exists(), "an old leftover goes");
        assert!(fresh.exists(), "a fresh leftover stays");
        assert!(other.exists() && used.exists());

        // A recorded file someone already deleted: forgotten, and the sweep
        // goes on to the next.
        let gone = sha(b"deleted by hand");
        store.media().touch(&inbound(&gone)).await.unwrap();
        let removed = media
            .sweep_at(now_ms() + RETENTION_MS + DAY_MS)
            .await
            .unwrap();
        assert_eq!(removed, 2, "the used file and the now old leftover ({url})");
        assert!(!store.media().recorded(&gone).await.unwrap());
        assert!(!used.exists() && !fresh.exists());
        assert!(other.exists());
    }
}
