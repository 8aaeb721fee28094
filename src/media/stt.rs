//! Speech to text through an OpenAI-compatible `/audio/transcriptions`
//! endpoint (OpenAI, a local whisper.cpp or faster-whisper server, …).

use super::config::SttConfig;
use std::path::Path;

/// Why a transcription failed; the text is safe to show (no key, no URL
/// credentials).
#[derive(Debug, thiserror::Error)]
pub enum SttError {
    #[error("the transcription service could not be reached ({0})")]
    Unreachable(String),
    #[error("the transcription service refused the audio (HTTP {status}: {detail})")]
    Refused { status: u16, detail: String },
    #[error("the transcription service sent an answer I could not read")]
    Malformed,
    #[error("the transcription took too long")]
    Timeout,
    #[error("the audio file could not be read ({0})")]
    File(String),
}

/// Transcribes the audio file at `path` (sent as `name` with `mime`),
/// streamed from disk. The transcript is trimmed; an empty one is valid
/// (silence).
pub async fn transcribe(
    client: &reqwest::Client,
    stt: &SttConfig,
    path: &Path,
    name: &str,
    mime: &str,
) -> Result<String, SttError> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| SttError::File(e.to_string()))?;
    let len = file
        .metadata()
        .await
        .map_err(|e| SttError::File(e.to_string()))?
        .len();
    let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::new(file));
    let part = reqwest::multipart::Part::stream_with_length(body, len)
        .file_name(name.to_owned())
        .mime_str(mime)
        .map_err(|e| SttError::File(e.to_string()))?;
    let form = reqwest::multipart::Form::new()
        .part("file", part)
        .text("model", stt.model.clone())
        .text("response_format", "json");
    let mut request = client
        .post(format!("{}/audio/transcriptions", stt.base_url))
        .timeout(stt.timeout)
        .multipart(form);
    if let Some(key) = &stt.api_key {
        request = request.bearer_auth(key.expose());
    }
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() {
            SttError::Timeout
        } else {
            SttError::Unreachable(crate::secrets::scrub_string(e.without_url().to_string()))
        }
    })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| {
        if e.is_timeout() {
            SttError::Timeout
        } else {
            SttError::Unreachable(e.without_url().to_string())
        }
    })?;
    if !status.is_success() {
        let detail: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        return Err(SttError::Refused {
            status: status.as_u16(),
            detail: crate::secrets::scrub_string(detail),
        });
    }
    #[derive(serde::Deserialize)]
    struct Transcript {
        text: String,
    }
    let transcript: Transcript = serde_json::from_slice(&body).map_err(|_| SttError::Malformed)?;
    Ok(transcript.text.trim().to_owned())
}
