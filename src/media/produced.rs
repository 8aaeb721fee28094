//! Images a tool produced (an MCP server's image result), taken in like the
//! images users send: bounded in size, typed by their bytes, checked and
//! decoded under the same pixel limit, and filed in the media store by
//! content hash. An image that already fits is kept byte for byte; a larger
//! one is scaled and re-encoded like an inbound photo.

use super::files;
use super::image::{self, ImageError};
use super::sniff::{self, Content};
use crate::domain::SessionId;
use crate::llm::Image;
use crate::store::{MediaFile, MediaOrigin, Store};
use crate::text::human_size;
use std::path::Path;

/// The most bytes a tool's image may have: what the platforms let a user
/// send (Telegram's 20 MB).
pub const MAX_PRODUCED_BYTES: usize = 20 << 20;

/// Why a tool's image is not shown to the model, worded for the model.
#[derive(Debug, thiserror::Error)]
pub enum ProducedImageError {
    #[error("it is {}; images up to {} are shown", human_size(*size as u64), human_size(MAX_PRODUCED_BYTES as u64))]
    TooLarge { size: usize },
    #[error("its contents are {0}, not a PNG, JPEG, GIF or WebP image")]
    NotAnImage(String),
    #[error("{0}")]
    Image(#[from] ImageError),
    #[error("the gateway could not store it")]
    Storage(#[from] std::io::Error),
}

/// Checks `bytes`, files them under `dir` (`DATA_DIR/media`) and records
/// the file in `store` for `session` (so the retention sweep collects it);
/// the image as the model will see it.
pub async fn file_produced_image(
    dir: &Path,
    store: &Store,
    session: &SessionId,
    bytes: Vec<u8>,
) -> Result<Image, ProducedImageError> {
    if bytes.len() > MAX_PRODUCED_BYTES {
        return Err(ProducedImageError::TooLarge { size: bytes.len() });
    }
    let head = &bytes[..bytes.len().min(8 * 1024)];
    let mime = match sniff::classify(head) {
        Content::Image(mime) => mime,
        other => return Err(ProducedImageError::NotAnImage(sniff::describe(other))),
    };
    // `prepare` reads a file: the checks and the decode are the inbound ones.
    let tmp = files::temp_path(dir).await?;
    tokio::fs::write(&tmp, &bytes).await?;
    let owned = tmp.clone();
    let prepared = tokio::task::spawn_blocking(move || image::prepare(&owned)).await;
    if let Err(e) = tokio::fs::remove_file(&tmp).await {
        tracing::debug!(error = %e, "could not remove a temporary image");
    }
    let prepared = prepared
        .map_err(|e| ImageError::Unreadable(e.to_string()))?
        .map_err(ProducedImageError::Image)?;
    let fits = prepared.source == (prepared.width, prepared.height);
    let (kept, mime) = if fits {
        (bytes, mime)
    } else {
        (prepared.bytes, prepared.mime)
    };
    let hash = files::put(dir, &kept).await?;
    let record = MediaFile {
        hash: &hash,
        mime,
        size: kept.len() as u64,
        origin: MediaOrigin::Produced,
        session: Some(session),
        sender: None,
    };
    // Unrecorded, the file is still collected by the sweep's scan for
    // leftovers once it is past the retention.
    if let Err(e) = store.media().touch(&record).await {
        tracing::warn!(error = %e, "could not record a tool's image");
    }
    Ok(Image {
        mime: mime.to_owned(),
        hash,
        width: prepared.width,
        height: prepared.height,
        data: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::image::{ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
    use std::io::Cursor;

    fn encoded(image: ::image::DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut bytes = Vec::new();
        image
            .write_to(&mut Cursor::new(&mut bytes), format)
            .unwrap();
        bytes
    }

    #[tokio::test]
    async fn a_small_image_is_filed_byte_for_byte_under_its_real_type() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _db) = crate::store::test_store().await;
        let png = encoded(
            RgbaImage::from_pixel(20, 10, Rgba([1, 2, 3, 128])).into(),
            ImageFormat::Png,
        );
        let image = file_produced_image(dir.path(), &store, &"s1".parse().unwrap(), png.clone())
            .await
            .unwrap();
        assert_eq!(
            (image.mime.as_str(), image.width, image.height),
            ("image/png", 20, 10)
        );
        let stored = std::fs::read(files::path_of(dir.path(), &image.hash)).unwrap();
        assert_eq!(stored, png);
        assert!(
            store.media().recorded(&image.hash).await.unwrap(),
            "recorded, so the sweep collects it"
        );
        // Nothing is left behind in `tmp/`.
        assert_eq!(
            std::fs::read_dir(dir.path().join("tmp")).unwrap().count(),
            0
        );
    }

    #[tokio::test]
    async fn a_large_image_is_scaled_like_an_inbound_photo() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _db) = crate::store::test_store().await;
        let big = encoded(
            RgbImage::from_pixel(3000, 100, Rgb([9, 9, 9])).into(),
            ImageFormat::Png,
        );
        let image = file_produced_image(dir.path(), &store, &"s1".parse().unwrap(), big)
            .await
            .unwrap();
        assert_eq!((image.mime.as_str(), image.width), ("image/jpeg", 1568));
    }

    #[tokio::test]
    async fn what_is_not_a_usable_image_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _db) = crate::store::test_store().await;
        let text = file_produced_image(
            dir.path(),
            &store,
            &"s1".parse().unwrap(),
            b"hello!".to_vec(),
        )
        .await;
        assert!(
            matches!(text, Err(ProducedImageError::NotAnImage(_))),
            "{text:?}"
        );
        let broken = file_produced_image(
            dir.path(),
            &store,
            &"s1".parse().unwrap(),
            b"\x89PNG\r\n\x1a\nnot really".to_vec(),
        )
        .await;
        assert!(
            matches!(
                broken,
                Err(ProducedImageError::Image(ImageError::Unreadable(_)))
            ),
            "{broken:?}"
        );
        let huge = file_produced_image(
            dir.path(),
            &store,
            &"s1".parse().unwrap(),
            vec![0; MAX_PRODUCED_BYTES + 1],
        )
        .await;
        let err = huge.unwrap_err();
        assert!(matches!(err, ProducedImageError::TooLarge { .. }));
        assert!(err.to_string().contains("images up to 20"), "{err}");
    }
}
