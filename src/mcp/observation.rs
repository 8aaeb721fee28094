//! An MCP tool result turned into the observation the model sees: text
//! content joined, images attached for a model that sees them (a note in the
//! text either way), audio noted, embedded resources as text, structured
//! content as JSON; `isError` as a tool error.

use crate::tools::{AttachError, ImageSink, ToolError};
use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, ImageContent, ResourceContents};
use serde_json::Value;

/// The image types a model is sent (what every vendor accepts).
const SHOWN_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The result as text, its images handed to `images` (each noted in the
/// text: `[image result 1: image/png, 6 bytes — attached]`, or why it is
/// not shown). An error result attaches nothing.
pub async fn observation(result: CallToolResult, images: &ImageSink) -> Result<String, ToolError> {
    let failed = result.is_error == Some(true);
    let mut parts: Vec<String> = Vec::new();
    let mut shown = 0;
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => {
                shown += 1;
                let sink = if failed {
                    &ImageSink::default()
                } else {
                    images
                };
                image_note(shown, i, sink).await
            }
            ContentBlock::Audio(a) => {
                format!("[audio result, {} bytes]", decoded_len(&a.data))
            }
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {uri}]\n{text}")
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => format!(
                    "[resource {uri}: {}, {} bytes]",
                    mime_type.as_deref().unwrap_or("binary"),
                    decoded_len(blob)
                ),
                _ => "[a resource of a kind this gateway does not show]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => format!("[resource link {}]", link.uri),
            _ => "[content of a kind this gateway does not show]".to_owned(),
        });
    }
    if let Some(structured) = &result.structured_content {
        if !repeated_as_text(&result.content, structured) {
            parts.push(structured.to_string());
        }
    }
    let text = parts.join("\n");
    if failed {
        let text = if text.is_empty() {
            "the tool reported an error".to_owned()
        } else {
            text
        };
        return Err(ToolError::failed(text));
    }
    Ok(text)
}

/// The note for image `n` of a result, after handing it to `sink` when the
/// model sees images.
async fn image_note(n: usize, image: &ImageContent, sink: &ImageSink) -> String {
    let mime = image.mime_type.as_str();
    let head = format!(
        "[image result {n}: {mime}, {} bytes",
        decoded_len(&image.data)
    );
    if !sink.accepts() {
        return format!("{head}]");
    }
    if !SHOWN_TYPES.contains(&mime) {
        return format!("{head} — not shown: only PNG, JPEG, GIF and WebP images are]");
    }
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(image.data.trim()) else {
        return format!("{head} — not shown: its data is not valid base64]");
    };
    match sink.attach(bytes).await {
        Ok(_) => format!("{head} — attached]"),
        Err(AttachError::NotSeen) => format!("{head}]"),
        Err(AttachError::Refused(why)) => {
            tracing::info!(error = %why, "an MCP image result was not shown");
            format!("{head} — not shown: {why}]")
        }
    }
}

/// Whether the structured content is already in the text: servers usually
/// send the same JSON as text too (or wrap a plain result as
/// `{"result": ...}`).
fn repeated_as_text(content: &[ContentBlock], structured: &Value) -> bool {
    let wrapped = structured
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("result"));
    content.iter().any(|b| match b {
        ContentBlock::Text(t) => {
            let parsed = serde_json::from_str::<Value>(&t.text).ok();
            parsed.as_ref() == Some(structured)
                || wrapped.is_some_and(|w| {
                    w.as_str() == Some(t.text.as_str()) || parsed.as_ref() == Some(w)
                })
        }
        _ => false,
    })
}

/// Bytes a base64 string decodes to.
fn decoded_len(data: &str) -> usize {
    let data = data.trim_end_matches('=');
    data.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Images;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    fn png_base64() -> String {
        let mut bytes = Vec::new();
        image::DynamicImage::from(image::RgbImage::new(3, 2))
            .write_to(
                &mut std::io::Cursor::new(&mut bytes),
                image::ImageFormat::Png,
            )
            .unwrap();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn seeing(dir: &std::path::Path, store: crate::store::Store) -> ImageSink {
        ImageSink::new(
            Images {
                dir: dir.to_path_buf(),
                store,
                keep_turns: 3,
                enabled: Arc::new(AtomicBool::new(true)),
            },
            "s1".parse().unwrap(),
        )
    }

    #[tokio::test]
    async fn results_become_observations() {
        let result = result(serde_json::json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGVsbG8h", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}}
            ],
            "structuredContent": {"sum": 3}
        }));
        let text = observation(result, &ImageSink::default()).await.unwrap();
        assert_eq!(
            text,
            "hello\n[image result 1: image/png, 6 bytes]\n[resource file:///a.txt]\ninside\n{\"sum\":3}"
        );
        let error = result_error();
        assert_eq!(
            observation(error, &ImageSink::default())
                .await
                .unwrap_err()
                .for_model(),
            "error: no such file"
        );
    }

    fn result_error() -> CallToolResult {
        result(serde_json::json!({
            "content": [{"type": "text", "text": "no such file"}], "isError": true
        }))
    }

    #[tokio::test]
    async fn images_are_attached_for_a_model_that_sees_them() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _db) = crate::store::test_store().await;
        let sink = seeing(dir.path(), store);
        let png = png_base64();
        let r = result(serde_json::json!({"content": [
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "image", "data": "aGVsbG8h", "mimeType": "image/png"},
            {"type": "image", "data": png, "mimeType": "image/svg+xml"},
            {"type": "image", "data": "not base64!", "mimeType": "image/png"}
        ]}));
        let text = observation(r, &sink).await.unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].ends_with(" bytes — attached]"), "{text}");
        assert!(
            lines[0].starts_with("[image result 1: image/png, "),
            "{text}"
        );
        assert!(
            lines[1].contains("— not shown: its contents are text"),
            "{text}"
        );
        assert!(lines[2].contains("only PNG, JPEG, GIF and WebP"), "{text}");
        assert!(lines[3].contains("not valid base64"), "{text}");
        let attached = sink.take();
        assert_eq!(attached.len(), 1);
        assert_eq!((attached[0].width, attached[0].height), (3, 2));

        // An error result attaches nothing.
        let failing = result(serde_json::json!({"isError": true, "content": [
            {"type": "image", "data": png, "mimeType": "image/png"}
        ]}));
        assert!(observation(failing, &sink).await.is_err());
        assert!(sink.take().is_empty());
    }
}
