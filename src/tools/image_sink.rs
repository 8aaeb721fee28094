//! Where a tool hands over images it produced, to go to the model with its
//! result (an MCP server's image content): filed in the media store, then
//! attached to the call's tool message by the round.

use crate::domain::SessionId;
use crate::llm::Image;
use crate::media::Images;
use crate::media::{file_produced_image, ProducedImageError};
use std::sync::{Arc, Mutex};

/// Why an image was not attached.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The turn's model does not see images (or images were switched off
    /// after the endpoint refused them).
    #[error("this model does not see images")]
    NotSeen,
    #[error(transparent)]
    Refused(#[from] ProducedImageError),
}

/// A call's image hand-over. Cheap to clone; the default takes nothing
/// (background tasks, tests, models without vision).
#[derive(Debug, Clone, Default)]
pub struct ImageSink(Option<Arc<Shared>>);

#[derive(Debug)]
struct Shared {
    images: Images,
    /// The session whose turn the images are filed for (recorded with them).
    session: SessionId,
    attached: Mutex<Vec<Image>>,
}

impl ImageSink {
    /// A sink filing into `images`' media directory, recorded for
    /// `session`, while its vision switch is on.
    pub fn new(images: Images, session: SessionId) -> Self {
        Self(Some(Arc::new(Shared {
            images,
            session,
            attached: Mutex::new(Vec::new()),
        })))
    }

    /// Whether an image handed over now reaches the model.
    pub fn accepts(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.images.enabled())
    }

    /// Checks and files `bytes` (decoded) and attaches the image to the
    /// call's result; the image as the model will see it.
    pub async fn attach(&self, bytes: Vec<u8>) -> Result<Image, AttachError> {
        let Some(shared) = self.0.as_ref().filter(|_| self.accepts()) else {
            return Err(AttachError::NotSeen);
        };
        let image = file_produced_image(
            &shared.images.dir,
            &shared.images.store,
            &shared.session,
            bytes,
        )
        .await?;
        shared
            .attached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(image.clone());
        Ok(image)
    }

    /// The images attached so far, taken.
    pub fn take(&self) -> Vec<Image> {
        match &self.0 {
            Some(shared) => {
                std::mem::take(&mut *shared.attached.lock().unwrap_or_else(|p| p.into_inner()))
            }
            None => Vec::new(),
        }
    }
}
