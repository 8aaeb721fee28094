//! A strict `multipart/form-data` parser for the fake platform servers: the
//! content type must name a boundary, every part must open with it and carry
//! `Content-Disposition: form-data; name="…"`, and the body must end with the
//! closing delimiter — what Telegram and Discord refuse, this refuses too.

/// One part of a form.
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

impl Part {
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.data).ok()
    }
}

/// Parses `body` sent with `content_type`; `Err` says what a real server
/// would refuse.
pub fn parse(content_type: &str, body: &[u8]) -> Result<Vec<Part>, String> {
    let (mime, params) = content_type
        .split_once(';')
        .ok_or("content type is not multipart/form-data with a boundary")?;
    if !mime.trim().eq_ignore_ascii_case("multipart/form-data") {
        return Err(format!("content type {mime} is not multipart/form-data"));
    }
    let boundary = params
        .split(';')
        .filter_map(|p| p.trim().strip_prefix("boundary="))
        .next()
        .map(|b| b.trim_matches('"'))
        .filter(|b| !b.is_empty() && b.len() <= 70)
        .ok_or("multipart content type without a boundary")?;
    let opening = format!("--{boundary}\r\n");
    let delimiter = format!("\r\n--{boundary}");
    let mut rest = body
        .strip_prefix(opening.as_bytes())
        .ok_or("body does not start with the boundary")?;
    let mut parts = Vec::new();
    loop {
        let end = find(rest, delimiter.as_bytes()).ok_or("part without a closing boundary")?;
        parts.push(part(&rest[..end])?);
        let after = &rest[end + delimiter.len()..];
        if let Some(tail) = after.strip_prefix(b"--") {
            if !(tail.is_empty() || tail == b"\r\n") {
                return Err("data after the closing boundary".into());
            }
            return Ok(parts);
        }
        rest = after
            .strip_prefix(b"\r\n")
            .ok_or("boundary not followed by a line break")?;
    }
}

fn part(raw: &[u8]) -> Result<Part, String> {
    let split = find(raw, b"\r\n\r\n").ok_or("part without a blank line after its headers")?;
    let head = std::str::from_utf8(&raw[..split]).map_err(|_| "part headers are not UTF-8")?;
    let data = raw[split + 4..].to_vec();
    let (mut disposition, mut content_type) = (None, None);
    for line in head.split("\r\n") {
        let (key, value) = line.split_once(':').ok_or("malformed part header")?;
        match key.trim().to_ascii_lowercase().as_str() {
            "content-disposition" => disposition = Some(value.trim().to_owned()),
            "content-type" => content_type = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    let disposition = disposition.ok_or("part without Content-Disposition")?;
    let mut fields = disposition.split(';').map(str::trim);
    if fields.next() != Some("form-data") {
        return Err(format!("part disposition {disposition} is not form-data"));
    }
    let (mut name, mut filename) = (None, None);
    for field in fields {
        if let Some(v) = field.strip_prefix("name=") {
            name = Some(v.trim_matches('"').to_owned());
        } else if let Some(v) = field.strip_prefix("filename=") {
            filename = Some(v.trim_matches('"').to_owned());
        }
    }
    Ok(Part {
        name: name
            .filter(|n| !n.is_empty())
            .ok_or("part without a name")?,
        filename,
        content_type,
        data,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    const CT: &str = "multipart/form-data; boundary=XyZ";

    #[test]
    fn a_well_formed_form_parses() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"chat_id\"\r\n\r\n42\r\n--XyZ\r\nContent-Disposition: form-data; name=\"document\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhi\r\nthere\r\n--XyZ--\r\n";
        let parts = super::parse(CT, body).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].text(), Some("42"));
        assert_eq!(parts[1].filename.as_deref(), Some("a.txt"));
        assert_eq!(parts[1].data, b"hi\r\nthere");
    }

    #[test]
    fn malformed_forms_are_refused() {
        let good = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--XyZ--";
        assert!(super::parse(CT, good).is_ok());
        assert!(super::parse("application/json", good).is_err());
        assert!(super::parse("multipart/form-data", good).is_err());
        assert!(super::parse(
            CT,
            b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1"
        )
        .is_err());
        assert!(
            super::parse(CT, b"--XyZ\r\nContent-Type: text/plain\r\n\r\n1\r\n--XyZ--").is_err()
        );
        assert!(super::parse(
            CT,
            b"--XyZ\r\nContent-Disposition: form-data\r\n\r\n1\r\n--XyZ--"
        )
        .is_err());
    }
}
