//! Outbound voice notes: an Ogg Opus stream read once (pages, checksums,
//! `OpusHead`) for what platforms ask with it — its duration and a waveform.

use crate::ids::{ChatAddress, MessageId};

/// Opus granule positions count samples at 48 kHz, whatever the input rate.
const OPUS_RATE: f64 = 48_000.0;
/// The most waveform points Discord keeps (one byte each).
pub const MAX_WAVEFORM_POINTS: usize = 256;
/// Clients sample a voice note at most once per 100 ms.
const WAVEFORM_STEP_SECS: f64 = 0.1;

/// Why bytes are not a playable Ogg Opus voice note.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VoiceError {
    #[error("not an Ogg stream")]
    NotOgg,
    #[error("a damaged Ogg page at byte {0}")]
    BadPage(usize),
    #[error("an Ogg stream that is not Opus")]
    NotOpus,
    #[error("an Opus stream without audio")]
    Empty,
}

/// A voice note to send: an Ogg Opus file with what Discord asks of one
/// (duration, waveform), replying to a message where the platform can.
#[derive(Clone, PartialEq)]
pub struct OutgoingVoice {
    pub to: ChatAddress,
    pub reply_to: Option<MessageId>,
    /// The Ogg Opus file.
    pub bytes: Vec<u8>,
    /// Seconds of audio (from the last granule position, less the pre-skip).
    pub duration_secs: f64,
    /// Up to [`MAX_WAVEFORM_POINTS`] loudness points, 0–255.
    pub waveform: Vec<u8>,
}

impl OutgoingVoice {
    /// Reads `bytes` as an Ogg Opus stream: refuses anything else.
    pub fn ogg_opus(to: ChatAddress, bytes: Vec<u8>) -> Result<OutgoingVoice, VoiceError> {
        let info = OggOpus::read(&bytes)?;
        Ok(OutgoingVoice {
            to,
            reply_to: None,
            duration_secs: info.duration_secs,
            waveform: info.waveform(),
            bytes,
        })
    }

    pub fn replying_to(mut self, id: Option<MessageId>) -> OutgoingVoice {
        self.reply_to = id;
        self
    }

    /// Whole seconds, at least 1 (Telegram's `duration`).
    pub fn whole_secs(&self) -> u32 {
        // Bounded by the file size: a few hours at most.
        (self.duration_secs.ceil() as u32).max(1)
    }
}

/// The bytes are left out: a voice note is up to megabytes.
impl std::fmt::Debug for OutgoingVoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutgoingVoice")
            .field("to", &self.to)
            .field("duration_secs", &self.duration_secs)
            .field("len", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

/// What an Ogg Opus stream says of itself.
#[derive(Debug, Clone, PartialEq)]
pub struct OggOpus {
    pub duration_secs: f64,
    /// The size in bytes of each audio packet, in order (louder speech
    /// takes more bits in Opus's variable bit rate).
    pub packet_sizes: Vec<usize>,
}

impl OggOpus {
    /// Parses the pages of `bytes` (each checksum checked), the `OpusHead`
    /// of its first packet and the granule position of its last page.
    pub fn read(bytes: &[u8]) -> Result<OggOpus, VoiceError> {
        if !bytes.starts_with(b"OggS") {
            return Err(VoiceError::NotOgg);
        }
        let mut packets: Vec<Vec<u8>> = Vec::new();
        let mut open = false;
        let mut last_granule: Option<u64> = None;
        let mut at = 0;
        while at < bytes.len() {
            let page = Page::read(bytes, at)?;
            if !page.continued {
                open = false;
            }
            let mut body = page.body;
            for &lace in page.lacing {
                let (segment, rest) = body.split_at(usize::from(lace));
                body = rest;
                match packets.last_mut() {
                    Some(p) if open => p.extend_from_slice(segment),
                    _ => packets.push(segment.to_vec()),
                }
                open = lace == 255;
            }
            // -1: no packet ends on this page.
            if page.granule != u64::MAX {
                last_granule = Some(page.granule);
            }
            at = page.end;
        }
        let head = packets.first().ok_or(VoiceError::NotOpus)?;
        if head.len() < 19 || !head.starts_with(b"OpusHead") {
            return Err(VoiceError::NotOpus);
        }
        let pre_skip = u64::from(u16::from_le_bytes([head[10], head[11]]));
        if !packets.get(1).is_some_and(|t| t.starts_with(b"OpusTags")) {
            return Err(VoiceError::NotOpus);
        }
        let packet_sizes: Vec<usize> = packets.iter().skip(2).map(Vec::len).collect();
        let samples = last_granule.unwrap_or(0).saturating_sub(pre_skip);
        if packet_sizes.is_empty() || samples == 0 {
            return Err(VoiceError::Empty);
        }
        Ok(OggOpus {
            duration_secs: samples as f64 / OPUS_RATE,
            packet_sizes,
        })
    }

    /// One loudness point per 100 ms (at most [`MAX_WAVEFORM_POINTS`]): the
    /// mean packet size of each stretch, scaled between the smallest and the
    /// largest. All packets alike: silence-sized ones (≤ 8 bytes) read as 0,
    /// others as a flat middle line.
    pub fn waveform(&self) -> Vec<u8> {
        let points = ((self.duration_secs / WAVEFORM_STEP_SECS).ceil() as usize)
            .clamp(1, MAX_WAVEFORM_POINTS)
            .min(self.packet_sizes.len());
        let n = self.packet_sizes.len();
        let means: Vec<f64> = (0..points)
            .map(|i| {
                let (from, to) = (
                    i * n / points,
                    ((i + 1) * n / points).max(i * n / points + 1),
                );
                let slice = &self.packet_sizes[from..to.min(n)];
                slice.iter().sum::<usize>() as f64 / slice.len().max(1) as f64
            })
            .collect();
        let lo = means.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = means.iter().copied().fold(0.0, f64::max);
        if hi - lo < 1.0 {
            let flat = if hi <= 8.0 { 0 } else { 128 };
            return vec![flat; points];
        }
        means
            .iter()
            .map(|m| (((m - lo) / (hi - lo)) * 255.0).round() as u8)
            .collect()
    }
}

/// One Ogg page: its header fields, segment table and body.
struct Page<'a> {
    continued: bool,
    granule: u64,
    lacing: &'a [u8],
    body: &'a [u8],
    end: usize,
}

impl<'a> Page<'a> {
    fn read(bytes: &'a [u8], at: usize) -> Result<Page<'a>, VoiceError> {
        let bad = || VoiceError::BadPage(at);
        let header = bytes.get(at..at + 27).ok_or_else(bad)?;
        if &header[..4] != b"OggS" || header[4] != 0 {
            return Err(bad());
        }
        let segments = usize::from(header[26]);
        let lacing = bytes.get(at + 27..at + 27 + segments).ok_or_else(bad)?;
        let body_len: usize = lacing.iter().map(|&l| usize::from(l)).sum();
        let start = at + 27 + segments;
        let end = start + body_len;
        let body = bytes.get(start..end).ok_or_else(bad)?;
        let stored = u32::from_le_bytes([header[22], header[23], header[24], header[25]]);
        let mut page = bytes[at..end].to_vec();
        page[22..26].fill(0);
        if ogg_crc(&page) != stored {
            return Err(bad());
        }
        let mut granule = [0u8; 8];
        granule.copy_from_slice(&header[6..14]);
        Ok(Page {
            continued: header[5] & 1 == 1,
            granule: u64::from_le_bytes(granule),
            lacing,
            body,
            end,
        })
    }
}

/// Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, initial value 0.
pub fn ogg_crc(data: &[u8]) -> u32 {
    let mut crc: u32 = 0;
    for &byte in data {
        crc ^= u32::from(byte) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04C1_1DB7
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ogg page of `packets` (each under 255 bytes) ending at `granule`.
    fn page(serial_seq: u32, flags: u8, granule: u64, packets: &[&[u8]]) -> Vec<u8> {
        let mut p = b"OggS".to_vec();
        p.push(0);
        p.push(flags);
        p.extend_from_slice(&granule.to_le_bytes());
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(&serial_seq.to_le_bytes());
        p.extend_from_slice(&[0; 4]);
        p.push(packets.len() as u8);
        p.extend(packets.iter().map(|d| d.len() as u8));
        for d in packets {
            p.extend_from_slice(d);
        }
        let crc = ogg_crc(&p);
        p[22..26].copy_from_slice(&crc.to_le_bytes());
        p
    }

    fn head() -> Vec<u8> {
        let mut h = b"OpusHead".to_vec();
        h.extend_from_slice(&[1, 1, 0x38, 0x01, 0x80, 0xbb, 0, 0, 0, 0, 0]);
        h
    }

    fn stream(sizes: &[usize]) -> Vec<u8> {
        let audio: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0xf8; n]).collect();
        let refs: Vec<&[u8]> = audio.iter().map(Vec::as_slice).collect();
        let granule = 312 + 960 * sizes.len() as u64;
        let mut s = page(0, 2, 0, &[&head()]);
        s.extend(page(1, 0, 0, &[b"OpusTags\0\0\0\0\0\0\0\0"]));
        s.extend(page(2, 4, granule, &refs));
        s
    }

    #[test]
    fn the_duration_is_the_last_granule_less_the_pre_skip() {
        let info = OggOpus::read(&stream(&[3; 50])).unwrap();
        assert!((info.duration_secs - 1.0).abs() < 1e-9);
        assert_eq!(info.packet_sizes.len(), 50);
        assert_eq!(info.waveform(), vec![0; 10], "silence reads as silence");
    }

    #[test]
    fn the_waveform_follows_packet_sizes_within_discords_limits() {
        let sizes: Vec<usize> = (0..100).map(|i| if i < 50 { 10 } else { 110 }).collect();
        let wave = OggOpus::read(&stream(&sizes)).unwrap().waveform();
        assert_eq!(wave.len(), 20);
        assert!(wave[..10].iter().all(|&v| v == 0));
        assert!(wave[10..].iter().all(|&v| v == 255));
        let long = OggOpus {
            duration_secs: 600.0,
            packet_sizes: (0..30_000).map(|i| i % 200).collect(),
        };
        assert_eq!(long.waveform().len(), MAX_WAVEFORM_POINTS);
    }

    #[test]
    fn garbage_and_damage_are_refused() {
        assert_eq!(OggOpus::read(b"ID3\x04 mp3"), Err(VoiceError::NotOgg));
        let mut damaged = stream(&[3; 5]);
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert!(matches!(
            OggOpus::read(&damaged),
            Err(VoiceError::BadPage(_))
        ));
        let truncated = stream(&[3; 5]);
        assert!(OggOpus::read(&truncated[..truncated.len() - 2]).is_err());
        let vorbis = page(0, 2, 0, &[b"\x01vorbis and more bytes"]);
        assert_eq!(OggOpus::read(&vorbis), Err(VoiceError::NotOpus));
        let no_audio = [page(0, 2, 0, &[&head()]), page(1, 4, 0, &[b"OpusTags"])].concat();
        assert_eq!(OggOpus::read(&no_audio), Err(VoiceError::Empty));
    }
}
