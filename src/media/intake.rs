//! One message's attachments taken in: each downloaded within the limits,
//! filed, checked by its bytes and made into something the model can use.
//! Every refusal is a sentence for the user; the message's other
//! attachments and its text still go on.

use super::files::{self, Stored};
use super::sniff::{self, Content};
use super::{document, image, notes, stt, Media};
use crate::domain::SessionId;
use crate::llm::Image;
use crate::store::{MediaFile, MediaOrigin};
use crate::text::human_size;
use crate::workspace::{quota, BeneathError, Workspace};
use std::path::Path;
use switchboard_platform::{
    Attachment, AttachmentKind, InboundMessage, PlatformAdapter, PlatformError,
};

/// What a message's attachments gave.
#[derive(Debug, Default)]
pub struct Intake {
    /// What the model reads about them (after the message's text).
    pub notes: Vec<String>,
    pub images: Vec<Image>,
    /// Transcripts of voice notes and audio: what the user said.
    pub transcripts: Vec<String>,
    /// Said to the user before the answer: refusals, what was heard.
    pub notices: Vec<String>,
}

impl Intake {
    /// Nothing for the model (every attachment refused).
    pub fn is_empty(&self) -> bool {
        self.notes.is_empty() && self.images.is_empty() && self.transcripts.is_empty()
    }
}

/// Where a message's files are copied for tools: the sender's own workspace
/// folder (the whole workspace for the operator), in the chat's inbox
/// folder there.
struct Dest {
    view: Result<Workspace, String>,
    /// `telegram-123`, `discord-9-thread-4`.
    chat: String,
}

/// What one attachment gave.
enum Piece {
    Note(String),
    /// An image kept for tools only: the model cannot see it.
    Unseen(String),
    Image(Image, String),
    Transcript(String),
}

impl Media {
    /// Takes in `m`'s attachments, one after the other, for `session`.
    pub async fn take_in(
        &self,
        adapter: &dyn PlatformAdapter,
        m: &InboundMessage,
        session: &SessionId,
    ) -> Intake {
        let mut intake = Intake::default();
        let mut unseen = false;
        let dest = Dest {
            view: self
                .workspace
                .view_of(Some((m.chat.platform, m.user.id)))
                .map_err(|e| {
                    tracing::warn!(error = %e, "a user's workspace folder is unusable");
                    format!("your workspace folder cannot be used ({e})")
                }),
            chat: chat_folder(m),
        };
        for a in &m.attachments {
            match self.one(adapter, m, a, &dest, session).await {
                Ok(Piece::Note(note)) => intake.notes.push(note),
                Ok(Piece::Unseen(note)) => {
                    intake.notes.push(note);
                    unseen = true;
                }
                Ok(Piece::Image(image, note)) => {
                    intake.images.push(image);
                    intake.notes.push(note);
                }
                Ok(Piece::Transcript(text)) => {
                    intake.notices.push(notes::heard(&text));
                    intake.transcripts.push(text);
                }
                Err(refusal) => {
                    tracing::info!(kind = a.kind.label(), %refusal, "attachment refused");
                    intake.notices.push(refusal);
                }
            }
        }
        if unseen {
            intake.notices.push(
                "🖼️ This model can't see images; I saved the file for tools and passed on your text."
                    .to_owned(),
            );
        }
        intake
    }

    async fn one(
        &self,
        adapter: &dyn PlatformAdapter,
        m: &InboundMessage,
        a: &Attachment,
        dest: &Dest,
        session: &SessionId,
    ) -> Result<Piece, String> {
        let called = notes::called(a);
        let is_audio = matches!(a.kind, AttachmentKind::Voice | AttachmentKind::Audio);
        self.check_audio(a, is_audio, &called)?;
        let stored = self.download(adapter, m, a, &called).await?;
        let path = files::path_of(&self.config.dir, &stored.hash);
        let content = sniff::classify(&stored.head);
        let claims_image = a.kind == AttachmentKind::Image
            || a.mime.as_deref().is_some_and(|t| t.starts_with("image/"));
        if claims_image && !matches!(content, Content::Image(_)) {
            return Err(format!(
                "🖼️ {called} is not an image: its contents are {}. I did not open it.",
                sniff::describe(content)
            ));
        }
        let name = files::clean_name(
            a.name.as_deref(),
            &notes::default_name(a.kind, mime_of(content)),
        );
        let record = MediaFile {
            hash: &stored.hash,
            mime: mime_of(content).unwrap_or("application/octet-stream"),
            size: stored.size,
            origin: MediaOrigin::Inbound,
            session: Some(session),
            sender: Some((m.chat.platform, m.user.id)),
        };
        self.record(&record).await;
        match content {
            Content::Image(_) => self.image(&path, &name, dest, &called, &record).await,
            Content::Audio(mime) if is_audio || a.kind == AttachmentKind::Document => {
                match &self.config.stt {
                    Some(stt_config) => stt::transcribe(&self.http, stt_config, &path, &name, mime)
                        .await
                        .map(Piece::Transcript)
                        .map_err(|e| format!("🎤 I could not transcribe {called}: {e}.")),
                    None => {
                        let rel = self
                            .to_workspace(&path, dest, &name, &called, stored.size)
                            .await?;
                        Ok(Piece::Note(notes::saved(a, &name, &rel, stored.size, mime)))
                    }
                }
            }
            Content::Pdf | Content::Text => {
                let rel = self
                    .to_workspace(&path, dest, &name, &called, stored.size)
                    .await?;
                self.document(&path, content, &name, &rel, &stored, session, &called)
                    .await
            }
            other => {
                let rel = self
                    .to_workspace(&path, dest, &name, &called, stored.size)
                    .await?;
                let what = match other {
                    Content::Video(m) | Content::Audio(m) => m,
                    Content::Binary(Some(m)) => m,
                    _ => "binary",
                };
                Ok(Piece::Note(notes::saved(a, &name, &rel, stored.size, what)))
            }
        }
    }

    /// Refuses a voice note without speech-to-text, and audio longer than
    /// it transcribes.
    fn check_audio(&self, a: &Attachment, is_audio: bool, called: &str) -> Result<(), String> {
        if a.kind == AttachmentKind::Voice && self.config.stt.is_none() {
            return Err(notes::NO_STT.to_owned());
        }
        if is_audio && self.config.stt.is_some() {
            if let Some(d) = a.duration_secs.filter(|d| *d > self.config.max_audio_secs) {
                return Err(format!(
                    "🎤 {called} is {} long; I transcribe up to {} — please send a shorter one.",
                    minutes(d),
                    minutes(self.config.max_audio_secs)
                ));
            }
        }
        Ok(())
    }

    /// Downloads `a` within the platform's limit and the user's quota.
    async fn download(
        &self,
        adapter: &dyn PlatformAdapter,
        m: &InboundMessage,
        a: &Attachment,
        called: &str,
    ) -> Result<Stored, String> {
        let platform_max = adapter.download_limit(m.chat);
        if platform_max == 0 {
            return Err(format!(
                "📎 I can't open files sent here, so {called} was not read."
            ));
        }
        if let Some(size) = a.size.filter(|s| *s > platform_max) {
            return Err(too_large(called, size, platform_max));
        }
        let day_ago = crate::store::now() - 86_400_000;
        let used = self
            .store
            .media()
            .bytes_since(m.chat.platform, m.user.id, day_ago)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "could not read the media quota");
                "📎 I can't take files right now (storage unavailable). Please try again."
                    .to_owned()
            })?;
        let left = self.config.quota_bytes_per_day.saturating_sub(used);
        if a.size.unwrap_or(1) > left {
            return Err(format!(
                "📎 {called} would go over your daily file allowance ({} a day; {} left). Please try again tomorrow.",
                human_size(self.config.quota_bytes_per_day),
                human_size(left)
            ));
        }
        let max = platform_max.min(left);
        let fail = |e: std::io::Error| {
            tracing::warn!(error = %e, "media directory unusable");
            "📎 I could not store the file (the server's disk refused it).".to_owned()
        };
        let tmp = files::temp_path(&self.config.dir).await.map_err(fail)?;
        let got = match tokio::fs::File::create(&tmp).await {
            Ok(mut file) => tokio::time::timeout(
                self.config.download_timeout,
                adapter.download(a, &mut file, max),
            )
            .await
            .unwrap_or(Err(PlatformError::Stalled)),
            Err(e) => Err(PlatformError::Storage(e)),
        };
        let written = match got {
            Ok(n) => n,
            Err(e) => {
                let _ = tokio::fs::remove_file(&tmp).await;
                return Err(download_failed(called, e, platform_max));
            }
        };
        let stored = files::file_away(&self.config.dir, &tmp)
            .await
            .map_err(fail)?;
        if let Err(e) = self
            .store
            .media()
            .count_download(m.chat.platform, m.user.id, written)
            .await
        {
            tracing::warn!(error = %e, "could not count a download against the quota");
        }
        Ok(stored)
    }

    /// Records a file filed for the model, so the retention sweep collects
    /// it. A failure is logged, not refused: the sweep's scan for unrecorded
    /// files collects the file once it is past the retention.
    async fn record(&self, file: &MediaFile<'_>) {
        if let Err(e) = self.store.media().touch(file).await {
            tracing::warn!(error = %e, "could not record a media file");
        }
    }

    /// Prepares the image at `path` (the download `original`) for the model:
    /// its scaled copy is filed and recorded as made from the original.
    async fn image(
        &self,
        path: &Path,
        name: &str,
        dest: &Dest,
        called: &str,
        original: &MediaFile<'_>,
    ) -> Result<Piece, String> {
        let owned = path.to_path_buf();
        let prepared = tokio::task::spawn_blocking(move || image::prepare(&owned))
            .await
            .map_err(|_| format!("🖼️ I could not read {called}."))?
            .map_err(|e| format!("🖼️ I could not use {called}: {e}."))?;
        let rel = self
            .to_workspace(path, dest, name, called, original.size)
            .await?;
        if !self.sees_images() {
            return Ok(Piece::Unseen(notes::unseen_image(name, &rel)));
        }
        let hash = files::put(&self.config.dir, &prepared.bytes)
            .await
            .map_err(|_| {
                "📎 I could not store the file (the server's disk refused it).".to_owned()
            })?;
        self.record(&MediaFile {
            hash: &hash,
            mime: prepared.mime,
            size: prepared.bytes.len() as u64,
            origin: MediaOrigin::Scaled {
                from: original.hash,
            },
            ..*original
        })
        .await;
        let size = (prepared.width, prepared.height);
        let note = notes::image(name, &rel, size, prepared.source);
        Ok(Piece::Image(
            Image {
                mime: prepared.mime.to_owned(),
                hash,
                width: prepared.width,
                height: prepared.height,
                data: None,
            },
            note,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    async fn document(
        &self,
        path: &Path,
        content: Content,
        name: &str,
        rel: &str,
        stored: &Stored,
        session: &SessionId,
        called: &str,
    ) -> Result<Piece, String> {
        let text = if content == Content::Pdf {
            self.reader
                .pdf_text(path)
                .await
                .map_err(|e| format!("📄 I saved {called} but could not read its text ({e})."))?
        } else {
            document::read_text(path)
                .await
                .map_err(|_| format!("📄 I could not read {called}."))?
        };
        match document::show(&text.text, self.config.inline_chars) {
            document::Shown::Inline(t) => Ok(Piece::Note(notes::document_inline(
                name,
                rel,
                stored.size,
                &t,
                text.cut,
            ))),
            document::Shown::Preview { preview, total } => {
                let id = format!("file-{}", stored.hash.get(..16).unwrap_or_default());
                let at = crate::dirs::stored_result_path(&self.data_dir, session, &id);
                let saved = async {
                    if let Some(dir) = at.parent() {
                        tokio::fs::create_dir_all(dir).await?;
                    }
                    tokio::fs::write(&at, text.text.as_bytes()).await
                };
                saved
                    .await
                    .map_err(|_| format!("📄 I could not store the text of {called}."))?;
                Ok(Piece::Note(notes::document_preview(
                    name, rel, &preview, total, &id,
                )))
            }
        }
    }

    /// Copies the file at `stored` (`size` bytes) into `dest` as `name`;
    /// the path the model and its tools use, or the refusal for the user.
    async fn to_workspace(
        &self,
        stored: &Path,
        dest: &Dest,
        name: &str,
        called: &str,
        size: u64,
    ) -> Result<String, String> {
        let view = dest
            .view
            .as_ref()
            .map_err(|why| format!("📎 I could not save {called}: {why}."))?;
        if let Some(limit) = view.quota() {
            let used = quota::usage_of(view.root()).await;
            if let Err(total) = quota::check(used, size, 0, limit) {
                return Err(format!(
                    "📎 I did not save {called}: your workspace folder would grow to {}. \
                     Delete files you no longer need (ask me to) and send it again.",
                    quota::over_text(total, limit)
                ));
            }
        }
        files::copy_to_workspace(stored, view, &dest.chat, name)
            .await
            .map_err(|e| match e {
                BeneathError::Link(at) => format!(
                    "📎 I did not save {called}: `{}` in your workspace folder is a symbolic \
                     link, and I do not follow links there. Remove it (ask me to) and send the \
                     file again.",
                    crate::visible::visible_name(&at.display().to_string()).text
                ),
                other => {
                    tracing::warn!(error = %other, "could not copy a file into the workspace");
                    "📎 I could not put the file in the workspace (the server's disk refused it)."
                        .to_owned()
                }
            })
    }
}

/// The workspace folder of a chat: `telegram-123`, `discord-9-thread-4`.
fn chat_folder(m: &InboundMessage) -> String {
    let mut folder = format!("{}-{}", m.chat.platform.as_str(), m.chat.chat.0);
    if let Some(thread) = m.chat.thread {
        folder.push_str(&format!("-thread-{}", thread.0));
    }
    // Negative ids (Telegram groups) read `n100…`, not `--100…`.
    folder.replace("--", "-n")
}

fn mime_of(content: Content) -> Option<&'static str> {
    match content {
        Content::Image(m) | Content::Audio(m) | Content::Video(m) => Some(m),
        Content::Pdf => Some("application/pdf"),
        Content::Text => Some("text/plain"),
        Content::Binary(m) => m,
    }
}

/// What the user is told when a download failed.
fn download_failed(called: &str, e: PlatformError, platform_max: u64) -> String {
    match e {
        PlatformError::TooLarge { size, max } if max < platform_max => format!(
            "📎 {called} would go over your daily file allowance ({} left today).",
            human_size(max.min(size))
        ),
        PlatformError::TooLarge { size, .. } => too_large(called, size, platform_max),
        PlatformError::Stalled => format!(
            "📎 The download of {called} stalled, so I gave up on it. Please send it again."
        ),
        other => {
            tracing::warn!(error = %other, "attachment download failed");
            format!("📎 I could not download {called}. Please send it again.")
        }
    }
}

fn too_large(called: &str, size: u64, max: u64) -> String {
    format!(
        "📎 {called} is {}; files up to {} can be received here. Please send a smaller one (or a link).",
        human_size(size),
        human_size(max)
    )
}

fn minutes(secs: u32) -> String {
    if secs < 120 {
        format!("{secs} s")
    } else {
        format!("{} min", secs / 60)
    }
}
