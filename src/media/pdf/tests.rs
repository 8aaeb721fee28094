//! The reader's checks on hostile PDFs, run in this process: each refusal
//! happens before `lopdf` would recurse or allocate (a test that reached
//! `lopdf` with 100,000 nested arrays would abort the test binary).

use super::*;

/// A PDF of `objects` (bodies of objects 1, 2, …) with a valid cross-reference table.
pub(crate) fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A stream object's body.
pub(crate) fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

/// One page whose content stream is object 4 (`content`), in Helvetica,
/// then `extra` objects from 6 on.
pub(crate) fn one_page(content: Vec<u8>, extra: &[Vec<u8>]) -> Vec<u8> {
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
           /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_vec(),
        content,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    objects.extend_from_slice(extra);
    pdf(&objects)
}

pub(crate) fn text_content(text: &str) -> Vec<u8> {
    stream(
        "",
        format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET").as_bytes(),
    )
}

/// zlib data that inflates to `total` zero bytes (a multiple of 1 MiB),
/// about 1,000 times smaller: one compressed mebibyte repeated (after the
/// first, each decodes from a window of zeros alike).
pub(crate) fn zeros_zlib(total: usize) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    const CHUNK: usize = 1 << 20;
    let zeros = vec![0u8; CHUNK];
    let mut c = Compress::new(Compression::best(), false);
    let mut block = || {
        let mut out = Vec::with_capacity(64 << 10);
        let before = c.total_in();
        c.compress_vec(&zeros, &mut out, FlushCompress::Sync)
            .unwrap();
        assert_eq!(c.total_in() - before, CHUNK as u64);
        out
    };
    let first = block();
    let steady = block();
    let mut out = vec![0x78, 0x01];
    out.extend_from_slice(&first);
    for _ in 1..total / CHUNK {
        out.extend_from_slice(&steady);
    }
    // An empty final block, then the Adler-32 of `total` zeros.
    out.extend_from_slice(&[0x03, 0x00]);
    let adler = (((total % 65_521) as u32) << 16) | 1;
    out.extend_from_slice(&adler.to_be_bytes());
    out
}

fn write(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.pdf");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

/// Reads `bytes` as the reader process does: on a thread with its stack.
fn read(bytes: &[u8], limits: &Limits) -> Result<Text, Refusal> {
    let (_dir, path) = write(bytes);
    let limits = *limits;
    std::thread::Builder::new()
        .stack_size(crate::media::reader::STACK)
        .spawn(move || extract(&path, &limits))
        .unwrap()
        .join()
        .unwrap()
}

fn limits() -> Limits {
    Limits::new(16 << 20)
}

#[test]
fn a_pdfs_pages_are_marked_whether_its_content_is_packed_or_not() {
    let plain = one_page(text_content("Revenue rose 12%"), &[]);
    let t = read(&plain, &limits()).unwrap();
    assert!(
        t.text.contains("--- page 1 ---\nRevenue rose 12%"),
        "{}",
        t.text
    );
    let packed = {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, b"BT /F1 12 Tf 72 720 Td (Costs fell) Tj ET").unwrap();
        stream("/Filter /FlateDecode", &e.finish().unwrap())
    };
    let t = read(&one_page(packed, &[]), &limits()).unwrap();
    assert!(t.text.contains("--- page 1 ---\nCosts fell"), "{}", t.text);
    assert_eq!(
        read(b"%PDF-1.4 broken", &limits()).unwrap_err(),
        Refusal::Unreadable
    );
}

#[test]
fn nesting_100000_deep_is_refused_before_parsing() {
    let nested = [b"[".repeat(100_000), b"]".repeat(100_000)].concat();
    let bytes = one_page(text_content("hi"), &[nested]);
    assert!(bytes.len() > 200_000);
    assert_eq!(read(&bytes, &limits()).unwrap_err(), Refusal::TooDeep);
    let dict = [b"<< /A ".repeat(50_000), b">>".repeat(50_000)].concat();
    let bytes = one_page(text_content("hi"), &[dict]);
    assert_eq!(read(&bytes, &limits()).unwrap_err(), Refusal::TooDeep);
    // At the limit it is read.
    let fine = [b"[".repeat(200), b"]".repeat(200)].concat();
    assert!(read(&one_page(text_content("hi"), &[fine]), &limits()).is_ok());
}

#[test]
fn nesting_hidden_in_a_packed_content_stream_is_refused_before_parsing() {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &b"[".repeat(100_000)).unwrap();
    let content = stream("/Filter /FlateDecode", &e.finish().unwrap());
    assert_eq!(
        read(&one_page(content, &[]), &limits()).unwrap_err(),
        Refusal::TooDeep
    );
}

#[test]
fn a_stream_inflating_past_the_budget_is_refused() {
    // 64 MiB of zeros in about 64 KB; the budget is 16 MiB.
    let bomb = zeros_zlib(64 << 20);
    assert!(bomb.len() < 200_000, "{}", bomb.len());
    let content = stream("/Filter /FlateDecode", &bomb);
    assert_eq!(
        read(&one_page(content, &[]), &limits()).unwrap_err(),
        Refusal::TooLarge
    );
    // Behind another filter the first pass cannot see it; the loader can.
    let hex: String = zeros_zlib(64 << 20)
        .chunks(4)
        .map(|c| {
            let mut word = [0u8; 4];
            word[..c.len()].copy_from_slice(c);
            base85(u32::from_be_bytes(word), c.len())
        })
        .collect::<String>()
        + "~>";
    let content = stream("/Filter [/ASCII85Decode /FlateDecode]", hex.as_bytes());
    assert_eq!(
        read(&one_page(content, &[]), &limits()).unwrap_err(),
        Refusal::TooLarge
    );
    // An image's pixels are not decoded, so they cost nothing.
    let image = stream(
        "/Type /XObject /Subtype /Image /Width 8192 /Height 8192 /ColorSpace /DeviceGray \
         /BitsPerComponent 8 /Filter /FlateDecode",
        &zeros_zlib(64 << 20),
    );
    assert!(read(&one_page(text_content("hi"), &[image]), &limits()).is_ok());
}

fn base85(word: u32, len: usize) -> String {
    let mut digits = [0u8; 5];
    let mut w = word;
    for d in digits.iter_mut().rev() {
        *d = (w % 85) as u8 + b'!';
        w /= 85;
    }
    String::from_utf8_lossy(&digits[..len + 1]).into_owned()
}

#[test]
fn object_streams_count_their_objects_and_encryption_is_refused() {
    let packed = stream("/Type /ObjStm /N 2000000 /First 4", b"6 0 1");
    let bytes = one_page(text_content("hi"), &[packed]);
    assert_eq!(
        read(&bytes, &limits()).unwrap_err(),
        Refusal::TooManyObjects
    );
    let mut encrypted = one_page(text_content("hi"), &[]);
    let at = encrypted.windows(7).rposition(|w| w == b"/Root 1").unwrap();
    encrypted.splice(at..at, b"/Encrypt 9 0 R ".iter().copied());
    assert_eq!(read(&encrypted, &limits()).unwrap_err(), Refusal::Encrypted);
}

#[test]
fn refusals_travel_by_code() {
    for r in [
        Refusal::Encrypted,
        Refusal::TooDeep,
        Refusal::TooManyObjects,
        Refusal::TooLarge,
        Refusal::OutOfMemory,
        Refusal::Unreadable,
    ] {
        assert_eq!(Refusal::from_code(r.code()), Some(r));
    }
    assert_eq!(Refusal::from_code("anything else"), None);
}
