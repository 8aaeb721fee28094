//! Images the calls of a turn produced, kept by call id from the moment a
//! call starts until the round makes that call's tool message.

use super::Images;
use crate::domain::SessionId;
use crate::llm::Image;
use crate::tools::ImageSink;
use std::collections::HashMap;
use std::sync::Mutex;

/// The image sinks of a turn's running calls.
#[derive(Debug, Default)]
pub(crate) struct ProducedImages {
    /// Where images go; `None` when the turn's model does not see images.
    images: Option<Images>,
    /// The turn's session (recorded with the images filed).
    session: SessionId,
    by_call: Mutex<HashMap<String, ImageSink>>,
}

impl ProducedImages {
    /// `images` when the turn's model sees images, else `None`; for the
    /// turn of `session`.
    pub(crate) fn new(images: Option<Images>, session: &SessionId) -> Self {
        Self {
            images,
            session: session.clone(),
            by_call: Mutex::default(),
        }
    }

    /// The sink of the call `call_id` (one that takes nothing when the model
    /// does not see images).
    pub(crate) fn sink_for(&self, call_id: &str) -> ImageSink {
        let Some(images) = &self.images else {
            return ImageSink::default();
        };
        let sink = ImageSink::new(images.clone(), self.session.clone());
        self.calls().insert(call_id.to_owned(), sink.clone());
        sink
    }

    /// The images the call `call_id` handed over, taken once.
    pub(crate) fn take(&self, call_id: &str) -> Vec<Image> {
        self.calls()
            .remove(call_id)
            .map(|sink| sink.take())
            .unwrap_or_default()
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, ImageSink>> {
        self.by_call.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn png() -> Vec<u8> {
        let mut bytes = Vec::new();
        image::DynamicImage::from(image::RgbImage::new(2, 1))
            .write_to(
                &mut std::io::Cursor::new(&mut bytes),
                image::ImageFormat::Png,
            )
            .unwrap();
        bytes
    }

    #[tokio::test]
    async fn each_call_gets_its_own_images_once() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _db) = crate::store::test_store().await;
        let produced = ProducedImages::new(
            Some(Images {
                dir: dir.path().to_path_buf(),
                store,
                keep_turns: 3,
                enabled: Arc::new(AtomicBool::new(true)),
            }),
            &"s1".parse().unwrap(),
        );
        let a = produced.sink_for("call_a");
        let b = produced.sink_for("call_b");
        a.attach(png()).await.unwrap();
        assert!(b.accepts());
        assert_eq!(produced.take("call_a").len(), 1);
        assert!(produced.take("call_a").is_empty(), "taken once");
        assert!(produced.take("call_b").is_empty());

        let blind = ProducedImages::new(None, &"s1".parse().unwrap());
        let sink = blind.sink_for("call_c");
        assert!(!sink.accepts());
        assert!(sink.attach(png()).await.is_err());
        assert!(blind.take("call_c").is_empty());
    }
}
