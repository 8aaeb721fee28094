//! Media settings (`MEDIA_*`, `LLM_VISION`, `STT_*`, `TTS_*`, `SWITCHBOARD_HELPER_BIN`).

use crate::env::{flag, positive, ConfigError};
use std::path::{Path, PathBuf};
use std::time::Duration;
use switchboard_platform::Secret;

/// Whether images reach the model (`LLM_VISION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VisionSetting {
    /// Inferred from the model's name ([`crate::llm::sees_images`]).
    Auto,
    On,
    Off,
}

/// A speech-to-text endpoint speaking OpenAI's `/audio/transcriptions`.
#[derive(Debug, Clone)]
pub struct SttConfig {
    /// e.g. `http://127.0.0.1:8080/v1` for a local whisper.cpp server.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<Secret>,
    /// The longest a transcription may take.
    pub timeout: Duration,
}

/// A text-to-speech endpoint speaking OpenAI's `/audio/speech`.
#[derive(Debug, Clone)]
pub struct TtsConfig {
    /// e.g. `https://api.openai.com/v1` or a local server's `/v1`.
    pub base_url: String,
    pub model: String,
    pub voice: String,
    pub api_key: Option<Secret>,
    /// The longest a synthesis may take.
    pub timeout: Duration,
}

impl TtsConfig {
    /// `TTS_*`: `None` without `TTS_BASE_URL`.
    fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<TtsConfig>, ConfigError> {
        let Some(base_url) = get("TTS_BASE_URL").filter(|u| !u.trim().is_empty()) else {
            return Ok(None);
        };
        let base_url = base_url.trim().trim_end_matches('/').to_owned();
        if url::Url::parse(&base_url).is_err() {
            return Err(ConfigError::Invalid {
                var: "TTS_BASE_URL",
                problem: format!("{base_url:?} is not a URL"),
                fix:
                    "use the speech server's base URL, e.g. TTS_BASE_URL=https://api.openai.com/v1",
            });
        }
        let named = |var: &str, default: &str| {
            get(var)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_owned())
        };
        Ok(Some(TtsConfig {
            base_url,
            model: named("TTS_MODEL", "tts-1"),
            voice: named("TTS_VOICE", "alloy"),
            api_key: get("TTS_API_KEY")
                .filter(|k| !k.trim().is_empty())
                .map(Secret::new),
            timeout: Duration::from_secs(60),
        }))
    }
}

/// The document reader process (see `reader`).
#[derive(Debug, Clone)]
pub struct ReaderConfig {
    /// The `switchboard` binary run as `switchboard extract-document`
    /// (`SWITCHBOARD_HELPER_BIN`); unset, the binary names itself at start
    /// (an embedding program, or a test, sets it).
    pub program: Option<PathBuf>,
    /// Address space of the reader, bytes (`MEDIA_DOCUMENT_MEMORY_MB`, default 512).
    pub memory: u64,
    /// CPU and wall time one document may take (`MEDIA_DOCUMENT_SECS`, default 20).
    pub timeout: Duration,
}

/// Everything media handling needs.
#[derive(Debug, Clone)]
pub struct MediaConfig {
    /// `DATA_DIR/media`: downloaded files by content hash.
    pub dir: PathBuf,
    /// Days an unused file is kept (`MEDIA_RETENTION_DAYS`, default 30).
    pub retention_days: u32,
    /// Bytes one user may send in 24 hours (`MEDIA_QUOTA_MB_PER_DAY`, default 100).
    pub quota_bytes_per_day: u64,
    pub vision: VisionSetting,
    /// User turns an image stays visible to the model (`MEDIA_IMAGE_TURNS`, default 3).
    pub image_turns: usize,
    pub stt: Option<SttConfig>,
    /// Voice replies (`TTS_*`); `None`: answers are text only.
    pub tts: Option<TtsConfig>,
    /// The longest voice note or audio file transcribed (`MEDIA_MAX_AUDIO_SECS`, default 600).
    pub max_audio_secs: u32,
    /// Characters of a document inlined for the model before it is stored
    /// with a preview instead (`MEDIA_INLINE_CHARS`, default 20,000).
    pub inline_chars: usize,
    /// How long one download may take in all.
    pub download_timeout: Duration,
    pub reader: ReaderConfig,
}

pub const DEFAULT_RETENTION_DAYS: u32 = 30;
pub const DEFAULT_QUOTA_MB_PER_DAY: u64 = 100;
pub const DEFAULT_IMAGE_TURNS: usize = 3;
pub const DEFAULT_MAX_AUDIO_SECS: u32 = 600;
pub const DEFAULT_INLINE_CHARS: usize = 20_000;
pub const DEFAULT_DOCUMENT_MEMORY_MB: u64 = 512;
pub const DEFAULT_DOCUMENT_SECS: u64 = 20;
/// Below this the reader cannot even start (its binary is mapped in it).
const MIN_DOCUMENT_MEMORY_MB: u64 = 128;

impl MediaConfig {
    /// Defaults for `data_dir`: no transcription, vision inferred. (Copies
    /// for tools land in each sender's workspace folder: see `Media::new`.)
    pub fn new(data_dir: &Path) -> MediaConfig {
        MediaConfig {
            dir: data_dir.join("media"),
            retention_days: DEFAULT_RETENTION_DAYS,
            quota_bytes_per_day: DEFAULT_QUOTA_MB_PER_DAY << 20,
            vision: VisionSetting::Auto,
            image_turns: DEFAULT_IMAGE_TURNS,
            stt: None,
            tts: None,
            max_audio_secs: DEFAULT_MAX_AUDIO_SECS,
            inline_chars: DEFAULT_INLINE_CHARS,
            download_timeout: Duration::from_secs(300),
            reader: ReaderConfig {
                program: None,
                memory: DEFAULT_DOCUMENT_MEMORY_MB << 20,
                timeout: Duration::from_secs(DEFAULT_DOCUMENT_SECS),
            },
        }
    }

    pub fn from_lookup(
        get: &dyn Fn(&str) -> Option<String>,
        data_dir: &Path,
    ) -> Result<MediaConfig, ConfigError> {
        let d = MediaConfig::new(data_dir);
        let vision = match get("LLM_VISION").map(|v| v.trim().to_ascii_lowercase()) {
            None => VisionSetting::Auto,
            Some(v) if v.is_empty() || v == "auto" => VisionSetting::Auto,
            Some(_) => match flag(get, "LLM_VISION")? {
                Some(true) => VisionSetting::On,
                _ => VisionSetting::Off,
            },
        };
        let stt = match get("STT_BASE_URL") {
            None => None,
            Some(base_url) => {
                let base_url = base_url.trim().trim_end_matches('/').to_owned();
                if url::Url::parse(&base_url).is_err() {
                    return Err(ConfigError::Invalid {
                        var: "STT_BASE_URL",
                        problem: format!("{base_url:?} is not a URL"),
                        fix: "use the transcription server's base URL, e.g. STT_BASE_URL=http://127.0.0.1:8080/v1",
                    });
                }
                Some(SttConfig {
                    base_url,
                    model: get("STT_MODEL").unwrap_or_else(|| "whisper-1".into()),
                    api_key: get("STT_API_KEY").map(Secret::new),
                    timeout: Duration::from_secs(120),
                })
            }
        };
        let clamp = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let reader = ReaderConfig::from_lookup(get, d.reader)?;
        Ok(MediaConfig {
            retention_days: positive(get, "MEDIA_RETENTION_DAYS")?
                .map(clamp)
                .unwrap_or(d.retention_days),
            quota_bytes_per_day: positive(get, "MEDIA_QUOTA_MB_PER_DAY")?
                .map(|mb| mb.saturating_mul(1 << 20))
                .unwrap_or(d.quota_bytes_per_day),
            vision,
            image_turns: positive(get, "MEDIA_IMAGE_TURNS")?
                .map(|v| usize::try_from(v).unwrap_or(usize::MAX))
                .unwrap_or(d.image_turns),
            stt,
            tts: TtsConfig::from_lookup(get)?,
            max_audio_secs: positive(get, "MEDIA_MAX_AUDIO_SECS")?
                .map(clamp)
                .unwrap_or(d.max_audio_secs),
            inline_chars: positive(get, "MEDIA_INLINE_CHARS")?
                .map(|v| usize::try_from(v).unwrap_or(usize::MAX))
                .unwrap_or(d.inline_chars),
            reader,
            ..d
        })
    }

    /// Whether images go to `model`.
    pub fn vision_for(&self, model: &str) -> bool {
        match self.vision {
            VisionSetting::Auto => crate::llm::sees_images(model),
            VisionSetting::On => true,
            VisionSetting::Off => false,
        }
    }
}

impl ReaderConfig {
    fn from_lookup(
        get: &dyn Fn(&str) -> Option<String>,
        d: ReaderConfig,
    ) -> Result<ReaderConfig, ConfigError> {
        let memory = match positive(get, "MEDIA_DOCUMENT_MEMORY_MB")? {
            Some(mb) if mb < MIN_DOCUMENT_MEMORY_MB => {
                return Err(ConfigError::Invalid {
                    var: "MEDIA_DOCUMENT_MEMORY_MB",
                    problem: format!("{mb} MB is too little for the document reader to start"),
                    fix: "use 128 or more (the default is 512)",
                })
            }
            Some(mb) => mb.saturating_mul(1 << 20),
            None => d.memory,
        };
        Ok(ReaderConfig {
            program: get("SWITCHBOARD_HELPER_BIN")
                .filter(|p| !p.trim().is_empty())
                .map(PathBuf::from),
            memory,
            timeout: positive(get, "MEDIA_DOCUMENT_SECS")?
                .map(Duration::from_secs)
                .unwrap_or(d.timeout),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(pairs: &[(&str, &str)]) -> Result<MediaConfig, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        MediaConfig::from_lookup(&|k| map.get(k).cloned(), Path::new("/d"))
    }

    #[test]
    fn defaults_and_overrides() {
        let d = read(&[]).unwrap();
        assert_eq!(d.dir, Path::new("/d/media"));
        assert_eq!(d.quota_bytes_per_day, 100 << 20);
        assert_eq!((d.retention_days, d.image_turns), (30, 3));
        assert!(d.stt.is_none());
        assert!(d.vision_for("gpt-4o") && !d.vision_for("llama3.1:8b"));
        let c = read(&[
            ("LLM_VISION", "false"),
            ("MEDIA_QUOTA_MB_PER_DAY", "5"),
            ("STT_BASE_URL", "http://127.0.0.1:9/v1/"),
        ])
        .unwrap();
        assert!(!c.vision_for("gpt-4o"));
        assert_eq!(c.quota_bytes_per_day, 5 << 20);
        let stt = c.stt.unwrap();
        assert_eq!(
            (stt.base_url.as_str(), stt.model.as_str()),
            ("http://127.0.0.1:9/v1", "whisper-1")
        );
        assert!(read(&[("LLM_VISION", "telescope")]).is_err());
        assert!(read(&[("STT_BASE_URL", "not a url")]).is_err());
        assert!(d.tts.is_none());
        let tts = read(&[
            ("TTS_BASE_URL", "http://127.0.0.1:9/v1/"),
            ("TTS_API_KEY", "sk-tts-secret"),
        ])
        .unwrap()
        .tts
        .unwrap();
        assert_eq!(
            (
                tts.base_url.as_str(),
                tts.model.as_str(),
                tts.voice.as_str()
            ),
            ("http://127.0.0.1:9/v1", "tts-1", "alloy")
        );
        assert!(!format!("{:?}", tts.api_key).contains("sk-tts-secret"));
        assert!(read(&[("TTS_BASE_URL", "speech")]).is_err());
        assert!(read(&[("MEDIA_RETENTION_DAYS", "0")]).is_err());
        assert_eq!(d.reader.memory, 512 << 20);
        assert_eq!(d.reader.timeout, Duration::from_secs(20));
        assert!(d.reader.program.is_none());
        let r = read(&[
            ("MEDIA_DOCUMENT_MEMORY_MB", "1024"),
            ("MEDIA_DOCUMENT_SECS", "5"),
            ("SWITCHBOARD_HELPER_BIN", "/opt/switchboard"),
        ])
        .unwrap()
        .reader;
        assert_eq!(
            (r.memory, r.timeout, r.program.unwrap()),
            (
                1 << 30,
                Duration::from_secs(5),
                PathBuf::from("/opt/switchboard")
            )
        );
        assert!(read(&[("MEDIA_DOCUMENT_MEMORY_MB", "64")]).is_err());
    }
}
