//! Images as the LLM fakes see them: base64 decoded, the real type read from
//! the bytes, and what a test's fake model "sees" (dimensions and a hash).

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The image types every vendor accepts.
pub const ACCEPTED: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// Strict standard base64 (what every vendor requires).
pub fn decode(data: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

/// The image type of `bytes`, from their magic numbers.
pub fn kind(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() > 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// What a fake model "sees" in an image: `WxH sha:abcdef12`.
pub fn describe(bytes: &[u8]) -> String {
    let sha = Sha256::digest(bytes);
    let short: String = sha.iter().take(4).map(|b| format!("{b:02x}")).collect();
    match image::load_from_memory(bytes) {
        Ok(img) => format!("{}x{} sha:{short}", img.width(), img.height()),
        Err(_) => format!("undecodable sha:{short}"),
    }
}

/// Every image in a request of any of the three APIs, decoded, in order.
pub fn in_request(request: &Value) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    walk(request, &mut out);
    out
}

fn walk(v: &Value, out: &mut Vec<Vec<u8>>) {
    match v {
        Value::Object(map) => {
            // OpenAI: {"type":"image_url","image_url":{"url":"data:…;base64,…"}}
            if let Some(url) = map.get("image_url").and_then(|u| u["url"].as_str()) {
                if let Some((_, data)) = url.split_once(";base64,") {
                    out.extend(decode(data));
                }
            }
            // Anthropic: {"type":"image","source":{"type":"base64","data":…}}
            if map.get("type").and_then(Value::as_str) == Some("image") {
                if let Some(data) = map.get("source").and_then(|s| s["data"].as_str()) {
                    out.extend(decode(data));
                }
            }
            // Gemini: {"inlineData":{"mimeType":…,"data":…}}
            if let Some(data) = map.get("inlineData").and_then(|d| d["data"].as_str()) {
                out.extend(decode(data));
            }
            for value in map.values() {
                walk(value, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
        _ => {}
    }
}

/// Whether a request carries any image part.
pub fn any_in(request: &Value) -> bool {
    let text = request.to_string();
    text.contains("\"image_url\"")
        || text.contains("\"inlineData\"")
        || text.contains("\"type\":\"image\"")
}
