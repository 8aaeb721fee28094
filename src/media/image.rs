//! Images for the model: dimensions checked from the header before anything
//! is decoded (a small file can claim 20,000 × 20,000 pixels), then decoded
//! under allocation limits, scaled so the long edge is at most 1,568 px (what
//! the vendors scale to anyway) and re-encoded: JPEG, or PNG where there is
//! transparency.

use image::{DynamicImage, ImageFormat, ImageReader};
use std::io::Cursor;
use std::path::Path;

/// The long edge an image is scaled down to.
pub const MAX_EDGE: u32 = 1568;
/// The most pixels a source image may have (about 8,700 × 5,800).
pub const MAX_PIXELS: u64 = 50_000_000;

/// An image ready for the model.
#[derive(Debug)]
pub struct Prepared {
    pub bytes: Vec<u8>,
    pub mime: &'static str,
    pub width: u32,
    pub height: u32,
    /// The size the sender's image had.
    pub source: (u32, u32),
}

/// Why an image was not prepared, worded for the user.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("the image is too large ({w} × {h} pixels; the limit is {limit} megapixels)", limit = MAX_PIXELS / 1_000_000)]
    TooManyPixels { w: u32, h: u32 },
    #[error("the image could not be read ({0})")]
    Unreadable(String),
}

fn unreadable(e: &dyn std::fmt::Display) -> ImageError {
    ImageError::Unreadable(e.to_string())
}

/// Reads, checks, scales and re-encodes the image at `path`. Blocking: run
/// it on a blocking thread. The memory of the decoded frames goes back to
/// the system when it is done (a photo does not leave the gateway tens of
/// megabytes larger).
pub fn prepare(path: &Path) -> Result<Prepared, ImageError> {
    let prepared = decode_scale_encode(path);
    crate::footprint::release_freed_heap();
    prepared
}

fn decode_scale_encode(path: &Path) -> Result<Prepared, ImageError> {
    let open = || -> Result<ImageReader<std::io::BufReader<std::fs::File>>, ImageError> {
        ImageReader::open(path)
            .map_err(|e| unreadable(&e))?
            .with_guessed_format()
            .map_err(|e| unreadable(&e))
    };
    let format = open()?.format();
    // image's JPEG decoder reads the whole file to learn its size; the
    // header alone tells jpeg-decoder.
    let (w, h) = if format == Some(ImageFormat::Jpeg) {
        jpeg_size(path)?
    } else {
        open()?.into_dimensions().map_err(|e| unreadable(&e))?
    };
    if u64::from(w) * u64::from(h) > MAX_PIXELS {
        return Err(ImageError::TooManyPixels { w, h });
    }
    let decoded = if format == Some(ImageFormat::Jpeg) {
        let decoded = decode_jpeg_scaled(path, fitted(w, h))?;
        // The JPEG decoder's worker threads allocate in malloc arenas of
        // their own, which keep what they freed: without this the scaling
        // step that follows (on this thread) cannot reuse it, and a
        // 12-megapixel photo costs its decode plus its scaling (2.2× the
        // file) instead of the larger of the two (1.7×).
        crate::footprint::release_freed_heap();
        decoded
    } else {
        let mut reader = open()?;
        let mut limits = image::Limits::default();
        limits.max_image_width = Some(w);
        limits.max_image_height = Some(h);
        // The decoded frame in RGBA16 at most, and some room for the decoder.
        limits.max_alloc = Some(u64::from(w) * u64::from(h) * 8 + (16 << 20));
        reader.limits(limits);
        reader.decode().map_err(|e| unreadable(&e))?
    };
    let scaled = scale(decoded);
    let (width, height) = (scaled.width(), scaled.height());
    let mut bytes = Vec::new();
    let mime = if scaled.color().has_alpha() {
        scaled
            .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
            .map_err(|e| unreadable(&e))?;
        "image/png"
    } else {
        let rgb = scaled.into_rgb8();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 85)
            .encode_image(&rgb)
            .map_err(|e| unreadable(&e))?;
        "image/jpeg"
    };
    Ok(Prepared {
        bytes,
        mime,
        width,
        height,
        source: (w, h),
    })
}

/// A JPEG's size, from its header.
fn jpeg_size(path: &Path) -> Result<(u32, u32), ImageError> {
    let file = std::fs::File::open(path).map_err(|e| unreadable(&e))?;
    let mut decoder = jpeg_decoder::Decoder::new(std::io::BufReader::new(file));
    decoder.read_info().map_err(|e| unreadable(&e))?;
    let info = decoder.info().ok_or_else(|| unreadable(&"no frame"))?;
    Ok((u32::from(info.width), u32::from(info.height)))
}

/// A JPEG decoded straight at the smallest DCT scale (1/8, 1/4, 1/2 or
/// whole) that still covers [`MAX_EDGE`]: a 12-megapixel photo is decoded at
/// 2000 × 1500, a quarter of the memory and time of a full decode.
fn decode_jpeg_scaled(
    path: &Path,
    (want_w, want_h): (u32, u32),
) -> Result<DynamicImage, ImageError> {
    let file = std::fs::File::open(path).map_err(|e| unreadable(&e))?;
    let mut decoder = jpeg_decoder::Decoder::new(std::io::BufReader::new(file));
    let clamp = |v: u32| u16::try_from(v).unwrap_or(u16::MAX);
    let (w, h) = decoder
        .scale(clamp(want_w), clamp(want_h))
        .map_err(|e| unreadable(&e))?;
    let pixels = decoder.decode().map_err(|e| unreadable(&e))?;
    let format = decoder
        .info()
        .map(|i| i.pixel_format)
        .ok_or_else(|| unreadable(&"no frame"))?;
    let (w, h) = (u32::from(w), u32::from(h));
    let short = || unreadable(&"truncated pixel data");
    Ok(match format {
        jpeg_decoder::PixelFormat::RGB24 => {
            DynamicImage::ImageRgb8(image::RgbImage::from_raw(w, h, pixels).ok_or_else(short)?)
        }
        jpeg_decoder::PixelFormat::L8 => {
            DynamicImage::ImageLuma8(image::GrayImage::from_raw(w, h, pixels).ok_or_else(short)?)
        }
        jpeg_decoder::PixelFormat::CMYK32 => {
            let rgb: Vec<u8> = pixels
                .chunks_exact(4)
                .flat_map(|p| {
                    let k = u16::from(p[3]);
                    [p[0], p[1], p[2]].map(|c| (u16::from(c) * k / 255) as u8)
                })
                .collect();
            DynamicImage::ImageRgb8(image::RgbImage::from_raw(w, h, rgb).ok_or_else(short)?)
        }
        jpeg_decoder::PixelFormat::L16 => {
            let luma: Vec<u8> = pixels.chunks_exact(2).map(|p| p[0]).collect();
            DynamicImage::ImageLuma8(image::GrayImage::from_raw(w, h, luma).ok_or_else(short)?)
        }
    })
}

/// The size a `w` × `h` image is scaled to: its long edge at most
/// [`MAX_EDGE`], its proportions kept.
fn fitted(w: u32, h: u32) -> (u32, u32) {
    let long = w.max(h);
    if long <= MAX_EDGE {
        return (w, h);
    }
    let scale = |v: u32| ((u64::from(v) * u64::from(MAX_EDGE)).div_ceil(u64::from(long))) as u32;
    (scale(w).max(1), scale(h).max(1))
}

/// `image` with its long edge at most [`MAX_EDGE`]. `thumbnail` averages
/// in integers straight into the output (the filtered `resize` allocates a
/// float copy of the whole image first).
fn scale(image: DynamicImage) -> DynamicImage {
    if image.width().max(image.height()) <= MAX_EDGE {
        return image;
    }
    image.thumbnail(MAX_EDGE, MAX_EDGE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage, Rgba, RgbaImage};

    fn write(
        dir: &Path,
        name: &str,
        image: DynamicImage,
        format: ImageFormat,
    ) -> std::path::PathBuf {
        let path = dir.join(name);
        image.save_with_format(&path, format).unwrap();
        path
    }

    #[test]
    fn a_large_photo_is_scaled_to_the_long_edge_and_sent_as_jpeg() {
        let dir = tempfile::tempdir().unwrap();
        let photo = RgbImage::from_pixel(3000, 1000, Rgb([10, 200, 30]));
        let path = write(dir.path(), "p.png", photo.into(), ImageFormat::Png);
        let p = prepare(&path).unwrap();
        assert_eq!((p.width, p.height, p.mime), (1568, 523, "image/jpeg"));
        assert_eq!(p.source, (3000, 1000));
        assert_eq!(&p.bytes[..3], b"\xff\xd8\xff");
    }

    #[test]
    fn a_large_jpeg_is_decoded_scaled_and_keeps_its_proportions() {
        let dir = tempfile::tempdir().unwrap();
        let photo = RgbImage::from_pixel(4000, 3000, Rgb([90, 120, 200]));
        let path = write(dir.path(), "p.jpg", photo.into(), ImageFormat::Jpeg);
        let p = prepare(&path).unwrap();
        assert_eq!((p.width, p.height, p.mime), (1568, 1176, "image/jpeg"));
        assert_eq!(p.source, (4000, 3000));
        let back = image::load_from_memory(&p.bytes).unwrap().to_rgb8();
        let px = back.get_pixel(700, 500);
        assert!(
            px.0.iter()
                .zip([90u8, 120, 200])
                .all(|(a, b)| a.abs_diff(b) < 8),
            "{px:?}"
        );
    }

    #[test]
    fn transparency_keeps_png_and_small_images_keep_their_size() {
        let dir = tempfile::tempdir().unwrap();
        let icon = RgbaImage::from_pixel(64, 32, Rgba([0, 0, 0, 0]));
        let path = write(dir.path(), "i.png", icon.into(), ImageFormat::Png);
        let p = prepare(&path).unwrap();
        assert_eq!((p.width, p.height, p.mime), (64, 32, "image/png"));
    }

    /// A PNG of `w` × `h` 8-bit grey pixels whose data is zlib `idat`.
    fn grey_png(w: u32, h: u32, idat: &[u8]) -> Vec<u8> {
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = w.to_be_bytes().to_vec();
        ihdr.extend_from_slice(&h.to_be_bytes());
        ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
        for (kind, data) in [(&b"IHDR"[..], &ihdr[..]), (b"IDAT", idat), (b"IEND", b"")] {
            png.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let start = png.len();
            png.extend_from_slice(kind);
            png.extend_from_slice(data);
            let c = crc(&png[start..]);
            png.extend_from_slice(&c.to_be_bytes());
        }
        png
    }

    #[test]
    fn a_decompression_bomb_is_refused_by_its_header_before_decoding() {
        let dir = tempfile::tempdir().unwrap();
        // 20,000 × 20,000 zeros: 400 MB of pixels in a 400 KB file.
        let zeros = crate::media::pdf::tests::zeros_zlib(382 << 20);
        let bomb = grey_png(20_000, 20_000, &zeros);
        assert!(bomb.len() < 1 << 20, "{}", bomb.len());
        let path = dir.path().join("bomb.png");
        std::fs::write(&path, bomb).unwrap();
        let err = prepare(&path).unwrap_err();
        assert!(
            matches!(
                err,
                ImageError::TooManyPixels {
                    w: 20_000,
                    h: 20_000
                }
            ),
            "{err}"
        );
        // A small frame followed by a gigabyte of data: the frame is read,
        // the rest never inflated.
        let tail = grey_png(100, 100, &crate::media::pdf::tests::zeros_zlib(1 << 30));
        std::fs::write(&path, tail).unwrap();
        let p = prepare(&path).unwrap();
        assert_eq!((p.width, p.height), (100, 100));
    }

    #[test]
    fn garbage_is_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.png");
        std::fs::write(&path, b"\x89PNG\r\n\x1a\nnot really").unwrap();
        assert!(matches!(prepare(&path), Err(ImageError::Unreadable(_))));
    }

    /// CRC-32 as PNG chunks use it.
    pub(crate) fn crc(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
}
