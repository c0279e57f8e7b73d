//! The deflate bit stream: values packed least significant bit first, Huffman codes already
//! bit-reversed by their builder, and byte alignment where stored blocks need it.

/// Bits accumulated into bytes as RFC 1951 section 3.1.1 orders them.
#[derive(Debug, Default)]
pub(super) struct BitWriter {
    out: Vec<u8>,
    pending: u64,
    pending_bits: u32,
}

impl BitWriter {
    pub(super) fn with_capacity(bytes: usize) -> Self {
        BitWriter {
            out: Vec::with_capacity(bytes),
            ..BitWriter::default()
        }
    }

    /// Appends the low `width` bits of `value` (at most 16 of them).
    pub(super) fn put(&mut self, value: u32, width: u32) {
        debug_assert!(width <= 16 && u64::from(value) < 1 << width);
        self.pending |= u64::from(value) << self.pending_bits;
        self.pending_bits += width;
        while self.pending_bits >= 8 {
            self.out.push(self.pending as u8);
            self.pending >>= 8;
            self.pending_bits -= 8;
        }
    }

    /// Pads with zero bits to the next byte boundary.
    pub(super) fn align(&mut self) {
        if self.pending_bits > 0 {
            self.out.push(self.pending as u8);
            self.pending = 0;
            self.pending_bits = 0;
        }
    }

    /// Appends whole bytes; the stream must be byte aligned (as after a stored header).
    pub(super) fn put_bytes(&mut self, bytes: &[u8]) {
        self.align();
        self.out.extend_from_slice(bytes);
    }

    pub(super) fn finish(mut self) -> Vec<u8> {
        self.align();
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_least_significant_bit_first() {
        let mut w = BitWriter::default();
        w.put(1, 1);
        w.put(0b10, 2);
        w.put(0x1f, 5);
        w.put(0xabc, 12);
        assert_eq!(w.finish(), [0b1111_1101, 0xbc, 0x0a]);
    }
}
