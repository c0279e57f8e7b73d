//! Go's `encoding/base64` `StdEncoding`, as `DecodeString` reads and `EncodeToString` writes
//! it: the standard alphabet with `=` padding; decoding skips `\r` and `\n` anywhere and
//! accepts non-zero bits after the last symbol (StdEncoding is not `Strict`). Go's JSON
//! encoding of `[]byte` is this encoding too.

use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;

const STD: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// Decodes `s` as Go's `base64.StdEncoding.DecodeString` does; `None` where Go fails.
pub fn std_decode(s: &str) -> Option<Vec<u8>> {
    let cleaned: String;
    let s = if s.contains(['\r', '\n']) {
        cleaned = s.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
        &cleaned
    } else {
        s
    };
    STD.decode(s).ok()
}

/// Encodes `data` as Go's `base64.StdEncoding.EncodeToString` does.
pub fn std_encode(data: &[u8]) -> String {
    STD.encode(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_as_go_does() {
        assert_eq!(std_decode("aGVsbG8="), Some(b"hello".to_vec()));
        // Newlines are skipped, wherever they are.
        assert_eq!(std_decode("aGVs\r\nbG8="), Some(b"hello".to_vec()));
        // Padding is required; text that is not base64 is refused.
        assert_eq!(std_decode("aGVsbG8"), None);
        assert_eq!(std_decode("-----BEGIN CERTIFICATE-----"), None);
        // Trailing bits are tolerated ("aGVsbG9=" has a non-zero last bit).
        assert_eq!(std_decode("aGVsbG9="), Some(b"hello".to_vec()));
        assert_eq!(std_decode(""), Some(Vec::new()));
        assert_eq!(std_encode(b"hello"), "aGVsbG8=");
    }
}
