//! Go's `compress/flate` writer at `flate.BestCompression` (level 9), byte for byte: the
//! stream Go writes for one `Write` of the input followed by `Close`.
//!
//! - [`matcher`]: hash chains and lazy matching, and where each block ends;
//! - [`block`]: each block stored, fixed or dynamic, whichever Go estimates smallest;
//! - [`huffman`]: Go's length-limited code construction (not zlib's);
//! - [`bits`]: the LSB-first bit stream.
//!
//! Every block the matcher emits is non-final; `Close` ends the stream with an empty, final
//! stored block.

mod bits;
mod block;
mod huffman;
mod matcher;

use bits::BitWriter;

/// The raw deflate stream of Go's `flate.NewWriter(w, flate.BestCompression)` after
/// `Write(data)` and `Close()`.
pub fn deflate_best(data: &[u8]) -> Vec<u8> {
    let mut w = BitWriter::with_capacity(data.len() / 2 + 16);
    matcher::tokenize(data, |tokens, raw| block::write_block(&mut w, tokens, raw));
    block::write_stored(&mut w, &[], true);
    w.finish()
}

#[cfg(test)]
mod tests;
