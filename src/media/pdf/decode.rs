//! A PDF stream's filters undone within a byte budget: the filters `lopdf`
//! decodes (FlateDecode, LZWDecode, ASCII85Decode, then the PNG predictors),
//! each stopped as soon as its output passes what the document has left. A
//! 3 MB page that inflates to a gigabyte costs the budget, not the gigabyte.

use flate2::read::ZlibDecoder;
use lopdf::{Dictionary, Object};
use std::io::Read;

/// Bytes the decoded streams of one document may add up to.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: u64,
    spent: u64,
}

/// Why a stream was not decoded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// Its output would pass the budget: the document is refused.
    OverBudget,
    /// The process's memory ran out while decoding it.
    OutOfMemory,
    /// A filter `lopdf` does not decode either, or data it would reject:
    /// the stream is left as it is (and `lopdf` gives up on it the same way).
    Unsupported,
}

impl Budget {
    pub(crate) fn new(limit: u64) -> Budget {
        Budget { limit, spent: 0 }
    }

    /// What may still be produced.
    pub(crate) fn left(&self) -> u64 {
        self.limit.saturating_sub(self.spent)
    }

    /// Counts `n` bytes produced; false when that passes the limit.
    pub(crate) fn spend(&mut self, n: u64) -> bool {
        self.spent = self.spent.saturating_add(n);
        self.spent <= self.limit
    }
}

/// The content of a stream with `filters` (in decoding order) and
/// `params` undone, as `lopdf`'s `decompressed_content` would give it;
/// its length is charged to `budget`.
pub(crate) fn decode(
    filters: &[&[u8]],
    params: Option<&Dictionary>,
    input: &[u8],
    budget: &mut Budget,
) -> Result<Vec<u8>, DecodeError> {
    let mut data: Option<Vec<u8>> = None;
    for filter in filters {
        let input = data.as_deref().unwrap_or(input);
        let max = budget.left();
        let out = match *filter {
            b"FlateDecode" => predicted(inflate(input, max)?, params)?,
            b"LZWDecode" => predicted(lzw(input, early_change(params), max)?, params)?,
            b"ASCII85Decode" => ascii85(input, max)?,
            _ => return Err(DecodeError::Unsupported),
        };
        if !budget.spend(out.len() as u64) {
            return Err(DecodeError::OverBudget);
        }
        data = Some(out);
    }
    Ok(data.unwrap_or_else(|| input.to_vec()))
}

/// Reads `reader` to its end or its first error (what `lopdf` keeps of a
/// damaged stream), failing once more than `max` bytes came out.
fn bounded(reader: impl Read, max: u64) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::new();
    // One byte past the budget tells "over" from "exactly at it".
    match reader.take(max.saturating_add(1)).read_to_end(&mut out) {
        Err(e) if e.kind() == std::io::ErrorKind::OutOfMemory => {
            return Err(DecodeError::OutOfMemory)
        }
        _ => {}
    }
    if out.len() as u64 > max {
        return Err(DecodeError::OverBudget);
    }
    Ok(out)
}

/// zlib-wrapped deflate, as `lopdf` reads FlateDecode.
pub(crate) fn inflate(input: &[u8], max: u64) -> Result<Vec<u8>, DecodeError> {
    if input.is_empty() {
        return Ok(Vec::new());
    }
    bounded(ZlibDecoder::new(input), max)
}

/// How many bytes `input` inflates to, counted without keeping them; `None`
/// past `max`. Not zlib data (another filter, an image) counts as nothing.
pub(crate) fn inflated_size(input: &[u8], max: u64) -> Option<u64> {
    let cap = max.saturating_add(1);
    let mut decoder = ZlibDecoder::new(input).take(cap);
    // What came out before an error counts too: a parser keeps it.
    let _ = std::io::copy(&mut decoder, &mut std::io::sink());
    let n = cap - decoder.limit();
    (n <= max).then_some(n)
}

fn early_change(params: Option<&Dictionary>) -> bool {
    params
        .and_then(|p| p.get(b"EarlyChange").ok())
        .and_then(|v| v.as_i64().ok())
        .map(|v| v != 0)
        .unwrap_or(true)
}

/// LZW with 8-bit symbols, most significant bit first (PDF's LZWDecode).
fn lzw(input: &[u8], early_change: bool, max: u64) -> Result<Vec<u8>, DecodeError> {
    use weezl::{decode::Decoder, BitOrder, LzwStatus};
    let mut decoder = if early_change {
        Decoder::with_tiff_size_switch(BitOrder::Msb, 8)
    } else {
        Decoder::new(BitOrder::Msb, 8)
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut rest = input;
    loop {
        let step = decoder.decode_bytes(rest, &mut buf);
        rest = rest.get(step.consumed_in..).unwrap_or_default();
        out.extend_from_slice(buf.get(..step.consumed_out).unwrap_or_default());
        if out.len() as u64 > max {
            return Err(DecodeError::OverBudget);
        }
        match step.status {
            Ok(LzwStatus::Ok) => {}
            // The end marker, no more input, or damage: what came out is kept.
            Ok(LzwStatus::Done | LzwStatus::NoProgress) | Err(_) => return Ok(out),
        }
    }
}

/// ASCII base-85 (`z` stands for four zero bytes, `~>` ends the data).
fn ascii85(input: &[u8], max: u64) -> Result<Vec<u8>, DecodeError> {
    let end = input
        .windows(2)
        .position(|w| w == b"~>")
        .unwrap_or(input.len());
    let mut out = Vec::new();
    let mut group = [0u8; 5];
    let mut n = 0;
    for &c in input.get(..end).unwrap_or_default() {
        match c {
            b'z' if n == 0 => out.extend_from_slice(&[0; 4]),
            b'!'..=b'u' => {
                group[n] = c - b'!';
                n += 1;
                if n == 5 {
                    out.extend_from_slice(&base85_word(&group)?.to_be_bytes());
                    n = 0;
                }
            }
            c if c.is_ascii_whitespace() => {}
            _ => return Err(DecodeError::Unsupported),
        }
        if out.len() as u64 > max {
            return Err(DecodeError::OverBudget);
        }
    }
    if n > 1 {
        // A final partial group is padded with `u` and cut back.
        for slot in group.iter_mut().skip(n) {
            *slot = b'u' - b'!';
        }
        let word = base85_word(&group)?.to_be_bytes();
        out.extend_from_slice(word.get(..n - 1).unwrap_or_default());
    }
    Ok(out)
}

fn base85_word(group: &[u8; 5]) -> Result<u32, DecodeError> {
    group
        .iter()
        .try_fold(0u32, |acc, &d| {
            acc.checked_mul(85)?.checked_add(u32::from(d))
        })
        .ok_or(DecodeError::Unsupported)
}

/// `data` with the PNG predictors (10–15) undone, as `lopdf` does; other
/// predictors leave it as it is. The output is never larger than the input.
fn predicted(data: Vec<u8>, params: Option<&Dictionary>) -> Result<Vec<u8>, DecodeError> {
    let Some(params) = params else {
        return Ok(data);
    };
    let int =
        |key: &[u8], default: i64| params.get(key).and_then(Object::as_i64).unwrap_or(default);
    if !(10..=15).contains(&int(b"Predictor", 1)) {
        return Ok(data);
    }
    let size = |v: i64| usize::try_from(v.max(1)).unwrap_or(usize::MAX);
    let columns = size(int(b"Columns", 1));
    let colors = size(int(b"Colors", 1));
    let bits = size(int(b"BitsPerComponent", 8)).max(8);
    let per_pixel = colors.checked_mul(bits).map(|b| b / 8);
    // A row longer than the data is damage (and would be allocated first).
    match per_pixel.and_then(|p| p.checked_mul(columns)) {
        Some(row) if row <= data.len() => {}
        _ => return Err(DecodeError::Unsupported),
    }
    let per_pixel = per_pixel.unwrap_or(1);
    lopdf::filters::png::decode_frame(&data, per_pixel, columns)
        .map_err(|_| DecodeError::Unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::ZlibEncoder;
    use std::io::Write;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn flate_is_decoded_within_the_budget_and_refused_past_it() {
        let text = b"BT /F1 12 Tf (hello) Tj ET".repeat(100);
        let packed = zlib(&text);
        let mut budget = Budget::new(4_000);
        assert_eq!(
            decode(&[b"FlateDecode"], None, &packed, &mut budget).unwrap(),
            text
        );
        let mut small = Budget::new(1_000);
        assert_eq!(
            decode(&[b"FlateDecode"], None, &packed, &mut small),
            Err(DecodeError::OverBudget)
        );
        // The budget is the document's: a second stream spends what is left.
        assert_eq!(
            decode(&[b"FlateDecode"], None, &packed, &mut budget),
            Err(DecodeError::OverBudget)
        );
    }

    #[test]
    fn chains_lzw_and_ascii85_decode_as_lopdf_does() {
        let text = b"one two three one two three one two three".to_vec();
        let mut budget = Budget::new(1 << 20);
        // "hello" in base 85, with whitespace and the end marker.
        assert_eq!(
            decode(&[b"ASCII85Decode"], None, b"BOu!r\nDZ~>", &mut budget).unwrap(),
            b"hello"
        );
        let mut lzw_data = Vec::new();
        weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
            .into_stream(&mut lzw_data)
            .encode_all(&text[..])
            .status
            .unwrap();
        assert_eq!(
            decode(&[b"LZWDecode"], None, &lzw_data, &mut budget).unwrap(),
            text
        );
        let stream = lopdf::Stream::new(
            lopdf::dictionary! { "Filter" => "LZWDecode" },
            lzw_data.clone(),
        );
        assert_eq!(stream.decompressed_content().unwrap(), text, "as lopdf");
        assert_eq!(
            decode(&[b"DCTDecode"], None, b"\xff\xd8", &mut budget),
            Err(DecodeError::Unsupported)
        );
        let over = vec![b'z'; 1000];
        assert_eq!(
            decode(&[b"ASCII85Decode"], None, &over, &mut Budget::new(100)),
            Err(DecodeError::OverBudget)
        );
    }

    #[test]
    fn a_count_of_inflated_bytes_keeps_nothing() {
        let packed = zlib(&vec![0u8; 1 << 20]);
        assert_eq!(inflated_size(&packed, 2 << 20), Some(1 << 20));
        assert_eq!(inflated_size(&packed, 1000), None);
        assert_eq!(inflated_size(b"not zlib at all", 1000), Some(0));
    }
}
