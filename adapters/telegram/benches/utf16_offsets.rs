//! UTF-16 entity offsets → byte ranges on a hostile message: 1 MB of text
//! carrying 10,000 entities spread over it. Compares one scan per entity (how
//! the adapter converted them before issue 23) with [`Utf16Index`], built once.
//!
//! `cargo bench -p switchboard-telegram --bench utf16_offsets`, or without
//! building the adapter: `rustc -O --edition 2021
//! adapters/telegram/benches/utf16_offsets.rs -o /tmp/utf16_offsets`.
//! Env: BENCH_TEXT_BYTES (default 1,000,000), BENCH_ENTITIES (10,000).

// Its unit tests compile here too (clippy --all-targets) but never run.
#[allow(dead_code)]
#[path = "../src/utf16.rs"]
mod utf16;

use std::time::Instant;
use utf16::{utf16_range, Utf16Index};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let bytes = env_usize("BENCH_TEXT_BYTES", 1_000_000);
    let count = env_usize("BENCH_ENTITIES", 10_000).max(1);
    // Mostly ASCII with an emoji (a surrogate pair) every few words.
    let unit = "lorem ipsum 😀 @some_bot dolor ";
    let text = unit.repeat(bytes / unit.len() + 1);
    let units = text.encode_utf16().count();
    let step = unit.encode_utf16().count();
    let spans: Vec<(usize, usize)> = (0..count)
        .map(|i| ((i * (units / count)) / step * step + 15, 9))
        .collect();

    let started = Instant::now();
    let per_entity: Vec<_> = spans
        .iter()
        .map(|&(offset, length)| utf16_range(&text, offset, length))
        .collect();
    let scan_each = started.elapsed();

    let started = Instant::now();
    let index = Utf16Index::new(&text);
    let indexed: Vec<_> = spans
        .iter()
        .map(|&(offset, length)| index.range(offset, length))
        .collect();
    let once = started.elapsed();

    let found = indexed.iter().filter(|r| r.is_some()).count();
    assert_eq!(per_entity, indexed, "both conversions agree");
    println!(
        "{} bytes, {} UTF-16 units, {count} entities ({found} on boundaries)",
        text.len(),
        units
    );
    println!("one scan per entity: {scan_each:?}");
    println!("index built once:    {once:?}");
}
