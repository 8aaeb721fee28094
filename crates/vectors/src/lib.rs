//! One user's vectors in memory, for Switchboard's semantic recall in well
//! under a millisecond per ten thousand memories: each vector normalised and
//! kept twice, as sign bits (a 384-dimension vector in 48 bytes) for a
//! Hamming-distance shortlist over all of them, and as i8 (one byte a
//! dimension) to re-rank the shortlist by cosine similarity. No f32 copy is
//! kept: the database has it.
//!
//! A crate of its own so that this one loop over every vector is compiled
//! for speed (`opt-level = 3`, vectorised bit counts) while the rest of the
//! release binary is compiled for size.

use std::collections::HashMap;

/// Shortlisted by Hamming distance per result wanted, before re-ranking.
const SHORTLIST_PER_RESULT: usize = 8;
/// The shortlist is never shorter than this.
const MIN_SHORTLIST: usize = 128;

/// A user's vectors of one model and dimension.
///
/// Not generic, so that its code is compiled here, at this crate's
/// optimisation level, and not in the crate that uses it.
#[derive(Debug, Default)]
pub struct UserIndex {
    dim: usize,
    /// u64 words of sign bits per vector.
    words: usize,
    ids: Vec<i64>,
    /// When each vector was written (epoch ms), as the database says.
    stamps: Vec<i64>,
    slots: HashMap<i64, usize>,
    bits: Vec<u64>,
    quant: Vec<i8>,
}

/// A query prepared against an index: normalised, its sign bits.
#[derive(Debug, Clone)]
pub struct Query {
    unit: Vec<f32>,
    bits: Vec<u64>,
}

impl Query {
    pub fn new(v: &[f32]) -> Option<Query> {
        let unit = normalised(v)?;
        let bits = sign_bits(&unit);
        Some(Query { unit, bits })
    }

    pub fn dim(&self) -> usize {
        self.unit.len()
    }
}

fn normalised(v: &[f32]) -> Option<Vec<f32>> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    (norm > 0.0 && norm.is_finite()).then(|| v.iter().map(|x| x / norm).collect())
}

fn sign_bits(unit: &[f32]) -> Vec<u64> {
    let mut bits = vec![0u64; unit.len().div_ceil(64)];
    for (i, x) in unit.iter().enumerate() {
        if *x > 0.0 {
            bits[i / 64] |= 1 << (i % 64);
        }
    }
    bits
}

impl UserIndex {
    /// Bytes one vector of `dim` dimensions takes here.
    pub fn bytes_per_vector(dim: usize) -> usize {
        dim + dim.div_ceil(64) * 8 + 16 + 32
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// What the index holds, in bytes (approximately).
    pub fn bytes(&self) -> usize {
        self.len() * Self::bytes_per_vector(self.dim)
    }

    /// Adds or replaces memory `id`'s vector, written at `stamp` (epoch ms);
    /// one of another dimension than the index's (a model changed under it)
    /// or a zero vector is ignored.
    pub fn upsert(&mut self, id: i64, v: &[f32], stamp: i64) -> bool {
        if self.dim == 0 {
            self.dim = v.len();
            self.words = v.len().div_ceil(64);
        }
        if v.len() != self.dim {
            return false;
        }
        let Some(unit) = normalised(v) else {
            return false;
        };
        let bits = sign_bits(&unit);
        let quant = unit.iter().map(|x| (x * 127.0).round() as i8);
        match self.slots.get(&id) {
            Some(&slot) => {
                self.stamps[slot] = stamp;
                self.bits[slot * self.words..(slot + 1) * self.words].copy_from_slice(&bits);
                for (dst, q) in self.quant[slot * self.dim..(slot + 1) * self.dim]
                    .iter_mut()
                    .zip(quant)
                {
                    *dst = q;
                }
            }
            None => {
                self.slots.insert(id, self.ids.len());
                self.ids.push(id);
                self.stamps.push(stamp);
                self.bits.extend_from_slice(&bits);
                self.quant.extend(quant);
            }
        }
        true
    }

    /// When memory `id`'s vector here was written (epoch ms), if it has one.
    pub fn stamp(&self, id: i64) -> Option<i64> {
        self.slots.get(&id).map(|&slot| self.stamps[slot])
    }

    /// Cosine similarity of memory `id` to the query, when it has a vector.
    pub fn similarity(&self, query: &Query, id: i64) -> Option<f32> {
        let slot = *self.slots.get(&id)?;
        (query.dim() == self.dim).then(|| self.cosine(query, slot))
    }

    fn cosine(&self, query: &Query, slot: usize) -> f32 {
        let row = &self.quant[slot * self.dim..(slot + 1) * self.dim];
        let dot: f32 = row
            .iter()
            .zip(&query.unit)
            .map(|(q, x)| f32::from(*q) * x)
            .sum();
        dot / 127.0
    }

    /// The `k` memories most similar to the query with their cosine
    /// similarity, best first: the nearest by Hamming distance of the sign
    /// bits, re-ranked by the i8 vectors. The shortlist is cut at the
    /// distance where a histogram of all distances reaches its length (no
    /// sort or selection over every vector).
    // Never inlined into a caller built for size (fat LTO would optimise it
    // as the caller is).
    #[inline(never)]
    pub fn nearest(&self, query: &Query, k: usize) -> Vec<(i64, f32)> {
        if query.dim() != self.dim || self.is_empty() || k == 0 {
            return Vec::new();
        }
        let mut dist: Vec<u16> = Vec::with_capacity(self.len());
        let mut histogram = vec![0usize; self.words * 64 + 1];
        for row in self.bits.chunks_exact(self.words) {
            let d: u32 = row
                .iter()
                .zip(&query.bits)
                .map(|(a, b)| (a ^ b).count_ones())
                .sum();
            histogram[d as usize] += 1;
            dist.push(d as u16);
        }
        let short = (k * SHORTLIST_PER_RESULT)
            .max(MIN_SHORTLIST)
            .min(dist.len());
        // The shortlist: every vector closer than `edge`, and the first
        // `ties` at `edge`.
        let (mut closer, mut edge) = (0, 0);
        for (d, n) in histogram.iter().enumerate() {
            if closer + n >= short {
                edge = d as u16;
                break;
            }
            closer += n;
        }
        let mut ties = short - closer;
        let mut scored: Vec<(i64, f32)> = Vec::with_capacity(short);
        for (slot, &d) in dist.iter().enumerate() {
            if d == edge && ties > 0 {
                ties -= 1;
            } else if d >= edge {
                continue;
            }
            scored.push((self.ids[slot], self.cosine(query, slot)));
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.truncate(k);
        scored
    }

    /// Keeps the newest `max` vectors (by insertion) when there are more.
    pub fn keep_newest(&mut self, max: usize) {
        let n = self.len();
        if n <= max {
            return;
        }
        let drop = n - max;
        self.ids.drain(..drop);
        self.stamps.drain(..drop);
        self.bits.drain(..drop * self.words);
        self.quant.drain(..drop * self.dim);
        self.slots = self
            .ids
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, i))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn nearest_finds_the_closest_vector_and_scores_cosine() {
        let mut index = UserIndex::default();
        for id in 0..2000 {
            assert!(index.upsert(id, &v(id as u64, 96), 0));
        }
        // A slightly moved copy of vector 1234 finds it first.
        let mut q = v(1234, 96);
        q[0] += 0.05;
        let query = Query::new(&q).unwrap();
        let best = index.nearest(&query, 5);
        assert_eq!(best[0].0, 1234);
        assert!(best[0].1 > 0.98, "{best:?}");
        assert!(best.windows(2).all(|w| w[0].1 >= w[1].1));
        let same = index.similarity(&query, 1234).unwrap();
        assert!((same - best[0].1).abs() < 1e-6);
        // Another dimension is refused, replacing keeps one slot.
        assert!(!index.upsert(5000, &v(1, 32), 0));
        assert!(index.upsert(1234, &v(77, 96), 9));
        assert_eq!((index.stamp(1234), index.stamp(1235)), (Some(9), Some(0)));
        assert_eq!(index.len(), 2000);
        assert_ne!(index.nearest(&query, 1)[0].0, 1234);
        index.keep_newest(100);
        assert_eq!(index.len(), 100);
        assert!(index.similarity(&query, 0).is_none());
        assert!(index.similarity(&query, 1999).is_some());
    }
}
