//! Go's `compress/flate` writer at `flate.BestCompression` (level 9), byte for byte: the
//! stream Go writes for one `Write` of the input followed by `Close`. This is the encoder the
//! standard library took over from klauspost/compress (the Go 1.27 that built the Butane
//! corpus has it), not the older one with 4096-long chains and a final stored block.
//!
//! - `matcher`: hash chains and lazy matching, and where each batch of tokens ends;
//! - `tokens`: a batch, its histograms and Go's entropy estimate of it;
//! - `block`: each batch stored, fixed or dynamic (possibly continuing the previous
//!   dynamic block's table), as Go estimates smallest;
//! - `huffman`: Go's length-limited code construction (not zlib's);
//! - `bits`: the LSB-first bit stream.

mod bits;
mod block;
mod huffman;
mod matcher;
mod tokens;

/// The raw deflate stream of Go's `flate.NewWriter(w, flate.BestCompression)` after
/// `Write(data)` and `Close()`.
pub fn deflate_best(data: &[u8]) -> Vec<u8> {
    let mut out = block::BlockWriter::new(data.len() / 2 + 16);
    matcher::tokenize(data, &mut out);
    out.finish()
}
