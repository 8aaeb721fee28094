//! The document reader against hostile PDFs, through the real `switchboard`
//! binary it starts: a PDF nested 100,000 deep (which aborts any process
//! whose `lopdf` parses it), one that inflates to gigabytes, one that needs
//! more memory than the reader has, one that needs more time — each is
//! refused with its reason, and this process, the reader's caller, goes on
//! reading the next document.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;
use switchboard::media::{DocumentLimits, DocumentReader, ReadError, ReaderConfig};

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

fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

/// One page of Helvetica whose content stream is `content`, then `extra` objects.
fn one_page(content: Vec<u8>, extra: &[Vec<u8>]) -> Vec<u8> {
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

/// A one-page PDF saying `text`.
pub(crate) fn text_pdf(text: &str) -> Vec<u8> {
    one_page(
        stream(
            "",
            format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET").as_bytes(),
        ),
        &[],
    )
}

/// The first document: about 200 KB, an array nested 100,000 deep.
pub(crate) fn nested_pdf() -> Vec<u8> {
    let nested = [b"[".repeat(100_000), b"]".repeat(100_000)].concat();
    one_page(stream("", b"BT ET"), &[nested])
}

/// zlib data inflating to `mib` MiB of zeros, about a thousand times
/// smaller: one compressed mebibyte repeated (after the first, each decodes
/// from a window of zeros alike).
fn zeros_zlib(mib: usize) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    let zeros = vec![0u8; 1 << 20];
    let mut c = Compress::new(Compression::best(), false);
    let mut block = || {
        let mut out = Vec::with_capacity(64 << 10);
        c.compress_vec(&zeros, &mut out, FlushCompress::Sync)
            .unwrap();
        out
    };
    let first = block();
    let steady = block();
    let mut out = vec![0x78, 0x01];
    out.extend_from_slice(&first);
    for _ in 1..mib {
        out.extend_from_slice(&steady);
    }
    // An empty final block, then the Adler-32 of the zeros.
    out.extend_from_slice(&[0x03, 0x00]);
    let adler = ((((mib << 20) % 65_521) as u32) << 16) | 1;
    out.extend_from_slice(&adler.to_be_bytes());
    out
}

/// A page whose content stream inflates to `mib` MiB.
fn bomb_pdf(mib: usize) -> Vec<u8> {
    one_page(stream("/Filter /FlateDecode", &zeros_zlib(mib)), &[])
}

fn config(memory_mb: u64, secs: u64) -> ReaderConfig {
    ReaderConfig {
        program: Some(PathBuf::from(env!("CARGO_BIN_EXE_switchboard"))),
        memory: memory_mb << 20,
        timeout: Duration::from_secs(secs),
    }
}

struct Docs(tempfile::TempDir);

impl Docs {
    fn new() -> Docs {
        Docs(tempfile::tempdir().unwrap())
    }

    fn put(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

#[tokio::test]
async fn a_pdf_nested_100000_deep_is_refused_and_the_caller_reads_on() {
    let docs = Docs::new();
    let reader = DocumentReader::new(&config(512, 20));
    let nested = nested_pdf();
    assert!(nested.len() > 200_000, "{}", nested.len());
    let err = reader
        .pdf_text(&docs.put("nested.pdf", &nested))
        .await
        .unwrap_err();
    assert_eq!(err, ReadError::TooDeep(256));
    assert_eq!(
        err.to_string(),
        "its structure nests more than 256 levels deep"
    );
    let text = reader
        .pdf_text(&docs.put("fine.pdf", &text_pdf("Revenue rose 12%")))
        .await
        .unwrap();
    assert!(
        text.text.contains("--- page 1 ---\nRevenue rose 12%"),
        "{}",
        text.text
    );
}

#[tokio::test]
async fn a_pdf_inflating_to_a_gigabyte_is_refused_at_the_budget() {
    let docs = Docs::new();
    let bomb = bomb_pdf(1024);
    assert!(bomb.len() < 4 << 20, "{}", bomb.len());
    let limits = DocumentLimits {
        max_inflated: 8 << 20,
        ..DocumentLimits::new(0)
    };
    let reader = DocumentReader::with_limits(&config(512, 20), limits);
    let err = reader
        .pdf_text(&docs.put("bomb.pdf", &bomb))
        .await
        .unwrap_err();
    assert_eq!(err, ReadError::TooLarge(8 << 20));
    assert_eq!(err.to_string(), "its contents expand to more than 8 MB");
}

#[tokio::test]
async fn a_reader_out_of_memory_or_time_dies_alone() {
    let docs = Docs::new();
    // Behind ASCII85 the first pass does not see the bomb; with a budget
    // larger than the memory, the reader's address-space limit stops it.
    let ascii85: Vec<u8> = zeros_zlib(1024)
        .chunks(4)
        .flat_map(|c| {
            let mut word = [0u8; 4];
            word[..c.len()].copy_from_slice(c);
            let mut w = u32::from_be_bytes(word);
            let mut digits = [0u8; 5];
            for d in digits.iter_mut().rev() {
                *d = (w % 85) as u8 + b'!';
                w /= 85;
            }
            digits[..c.len() + 1].to_vec()
        })
        .chain(*b"~>")
        .collect();
    let hidden = one_page(
        stream("/Filter [/ASCII85Decode /FlateDecode]", &ascii85),
        &[],
    );
    let limits = DocumentLimits {
        max_inflated: 4 << 30,
        ..DocumentLimits::new(0)
    };
    let reader = DocumentReader::with_limits(&config(256, 60), limits);
    let err = reader
        .pdf_text(&docs.put("hidden.pdf", &hidden))
        .await
        .unwrap_err();
    assert_eq!(err, ReadError::OutOfMemory(256 << 20));
    // Four gigabytes to inflate take more than a second anywhere.
    let hasty = DocumentReader::with_limits(&config(512, 1), limits);
    let err = hasty
        .pdf_text(&docs.put("slow.pdf", &bomb_pdf(4096)))
        .await
        .unwrap_err();
    assert_eq!(err, ReadError::TimedOut(Duration::from_secs(1)));
    let text = reader
        .pdf_text(&docs.put("fine.pdf", &text_pdf("still here")))
        .await
        .unwrap();
    assert!(text.text.contains("still here"), "{}", text.text);
}

#[tokio::test]
async fn without_a_reader_program_documents_are_refused_plainly() {
    let docs = Docs::new();
    let mut c = config(512, 20);
    c.program = None;
    let err = DocumentReader::new(&c)
        .pdf_text(&docs.put("fine.pdf", &text_pdf("hi")))
        .await
        .unwrap_err();
    assert_eq!(err, ReadError::Unavailable);
}
