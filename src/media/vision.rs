//! Images for a model call: the recent turns' images (sent by the user or
//! produced by a tool) loaded from the media store (as base64, for this call
//! only), older ones — and all of them when the model cannot see — left as a
//! one-line placeholder.

use crate::llm::{Message, Role};
use crate::store::Store;
use base64::Engine;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Where a turn's images come from.
#[derive(Debug, Clone)]
pub struct Images {
    /// The media directory (`DATA_DIR/media`).
    pub dir: PathBuf,
    /// Where images filed for a turn (a tool's) are recorded, so the media
    /// sweep collects them.
    pub store: Store,
    /// How many of the latest user turns keep their images.
    pub keep_turns: usize,
    /// Whether the model sees images at all; switched off for the run when
    /// the endpoint refuses them.
    pub enabled: Arc<AtomicBool>,
}

impl Images {
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// The endpoint refused image parts: text only from now on.
    pub fn disable(&self) {
        self.enabled.store(false, Ordering::Relaxed);
    }

    /// Loads the images of the last `keep_turns` user turns into
    /// `messages` — the user messages' and their tool results' — and clears
    /// the rest. Returns how many were loaded. A file that is gone
    /// (collected) stays a placeholder.
    pub async fn load(&self, messages: &mut [Message]) -> usize {
        let enabled = self.enabled();
        let mut turns = 0;
        let mut loaded = 0;
        for m in messages.iter_mut().rev() {
            // A tool result's images belong to the turn of the user message
            // before it, and age out with that turn.
            let turn = match m.role {
                Role::User => {
                    turns += 1;
                    turns
                }
                Role::Tool => turns + 1,
                Role::System | Role::Assistant => continue,
            };
            let keep = enabled && turn <= self.keep_turns;
            for image in &mut m.images {
                if !keep {
                    image.data = None;
                    continue;
                }
                if image.data.is_some() {
                    loaded += 1;
                    continue;
                }
                let path = crate::media::files::path_of(&self.dir, &image.hash);
                match tokio::fs::read(&path).await {
                    Ok(bytes) => {
                        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
                        image.data = Some(Arc::from(b64));
                        loaded += 1;
                    }
                    Err(e) => tracing::debug!(error = %e, "an image of the history is gone"),
                }
            }
        }
        loaded
    }
}

/// The messages with every image unloaded (after the endpoint refused them).
pub(crate) fn without_images(messages: &mut [Message]) {
    for image in messages.iter_mut().flat_map(|m| m.images.iter_mut()) {
        image.data = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Image;

    fn with_image(text: &str, hash: &str) -> Message {
        let mut m = Message::user(text);
        m.images.push(Image {
            mime: "image/png".into(),
            hash: hash.into(),
            width: 2,
            height: 1,
            data: None,
        });
        m
    }

    /// Images keeping `keep_turns` turns, over a media dir holding one file
    /// (its hash); the temp dir and database live as long as the guards.
    async fn images_keeping(keep_turns: usize) -> (Images, String, tempfile::TempDir, impl Sized) {
        let dir = tempfile::tempdir().unwrap();
        let hash = crate::media::files::put(dir.path(), b"png bytes")
            .await
            .unwrap();
        let (store, db) = crate::store::test_store().await;
        let images = Images {
            dir: dir.path().to_path_buf(),
            store,
            keep_turns,
            enabled: Arc::new(AtomicBool::new(true)),
        };
        (images, hash, dir, db)
    }

    #[tokio::test]
    async fn only_recent_turns_carry_their_images() {
        let (images, hash, _dir, _db) = images_keeping(1).await;
        let mut messages = vec![
            with_image("old", &hash),
            Message::assistant("seen"),
            with_image("new", &hash),
        ];
        assert_eq!(images.load(&mut messages).await, 1);
        assert!(messages[0].images[0].data.is_none());
        assert_eq!(messages[2].images[0].data.as_deref(), Some("cG5nIGJ5dGVz"));
        assert_eq!(
            messages[0].text_with_placeholders(),
            "old\n[image 2x1 sent earlier; no longer shown]"
        );
        images.disable();
        assert_eq!(images.load(&mut messages).await, 0);
        assert!(messages[2].images[0].data.is_none());
    }

    #[tokio::test]
    async fn a_tool_results_images_age_out_with_its_turn() {
        let (images, hash, _dir, _db) = images_keeping(2).await;
        let tool = |id: &str| {
            let mut m = Message::tool_result(id, "[image result 1: image/png, 9 bytes — attached]");
            m.images = with_image("", &hash).images;
            m
        };
        let mut messages = vec![
            Message::user("first"),
            tool("call_1"),
            Message::user("second"),
            tool("call_2"),
            Message::user("third"),
            tool("call_3"),
        ];
        assert_eq!(images.load(&mut messages).await, 2);
        assert!(messages[1].images[0].data.is_none(), "three turns ago");
        assert!(messages[3].images[0].data.is_some());
        assert!(messages[5].images[0].data.is_some());
        assert!(messages[1]
            .text_with_placeholders()
            .ends_with("[image 2x1 sent earlier; no longer shown]"));
    }
}
