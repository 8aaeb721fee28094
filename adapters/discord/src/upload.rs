//! Files: `POST /channels/{id}/messages` as multipart (`files[0]` and
//! `payload_json`), built by serenity and paced on the channel's lane.

use crate::errors::RestError;
use crate::rest::{decode, nz, Created, Lane, Rest, HTTP_TIMEOUT};
use serde_json::json;
use serenity::builder::CreateAttachment;
use serenity::http::{LightMethod, Multipart, MultipartUpload, Request, Route};
use serenity::model::id::ChannelId;
use switchboard_platform::{OutgoingFile, Retry};

/// Discord's limit on message content, in characters.
const MAX_CONTENT_CHARS: usize = 2000;

impl Rest {
    /// Posts `file` as the one attachment of a new message whose content is the
    /// caption; returns the message id. `limit`: the channel's upload limit.
    pub async fn create_file_message(
        &self,
        channel: u64,
        file: &OutgoingFile,
        limit: usize,
    ) -> Result<u64, RestError> {
        if file.bytes.len() > limit {
            return Err(RestError::Invalid(format!(
                "a file of {} bytes is over this channel's upload limit of {limit} bytes",
                file.bytes.len()
            )));
        }
        let caption = file.caption.as_deref().map(clip).unwrap_or_default();
        let payload = json!({
            "content": caption,
            "attachments": [{ "id": 0, "filename": file.name }],
            // A caption is text from the agent: never a ping.
            "allowed_mentions": { "parse": [] },
        })
        .to_string();
        self.post_one_attachment(channel, file.bytes.clone(), file.name.clone(), payload)
            .await
    }

    /// Posts a new message with one attachment (`bytes` named `name`) and
    /// its `payload_json`, paced on the channel's lane; returns its id.
    pub(crate) async fn post_one_attachment(
        &self,
        channel: u64,
        bytes: Vec<u8>,
        name: String,
        payload_json: String,
    ) -> Result<u64, RestError> {
        let channel_id = ChannelId::from(nz(channel)?);
        let multipart = Multipart {
            upload: MultipartUpload::Attachments(vec![CreateAttachment::bytes(bytes, name)]),
            fields: Vec::new(),
            payload_json: Some(payload_json),
        };
        let created: Created = self
            .pacer
            .run(
                &Lane::Channel(channel),
                || {
                    let request =
                        Request::new(Route::ChannelMessages { channel_id }, LightMethod::Post)
                            .multipart(Some(multipart.clone()));
                    self.exchange(request, HTTP_TIMEOUT)
                },
                |e: &RestError| match e {
                    RestError::RateLimited { delay, global } => Retry::After {
                        delay: *delay,
                        global: *global,
                    },
                    _ => Retry::No,
                },
            )
            .await
            .and_then(decode)?;
        Ok(created.id.get())
    }
}

/// A caption within Discord's content limit, `…` at the end when cut.
fn clip(caption: &str) -> String {
    if caption.chars().count() <= MAX_CONTENT_CHARS {
        return caption.to_owned();
    }
    let mut clipped: String = caption.chars().take(MAX_CONTENT_CHARS - 1).collect();
    clipped.push('…');
    clipped
}
