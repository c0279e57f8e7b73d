//! Standard padded base64 decoding with Go's `encoding/base64` rules and error offsets:
//! `\n` and `\r` are skipped anywhere, padding must be complete, nothing but newlines may follow
//! it, and unused trailing bits are ignored (not strict).

fn value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

fn corrupt(at: usize) -> String {
    format!("illegal base64 data at input byte {at}")
}

fn skip_newlines(src: &[u8], mut i: usize) -> usize {
    while i < src.len() && (src[i] == b'\n' || src[i] == b'\r') {
        i += 1;
    }
    i
}

/// Decodes `src`; the error text is Go's `illegal base64 data at input byte N`.
pub(super) fn decode(src: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    while si < src.len() {
        // One quantum: up to four sextets.
        let mut quad = [0u8; 4];
        let mut len = 4;
        let mut j = 0;
        let mut done = false;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                // Padding is required, so a short final quantum is an error.
                return Err(corrupt(si - j));
            }
            let c = src[si];
            si += 1;
            if let Some(v) = value(c) {
                quad[j] = v;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' || j < 2 {
                return Err(corrupt(si - 1));
            }
            if j == 2 {
                // A second '=' must follow (newlines allowed in between).
                si = skip_newlines(src, si);
                if si == src.len() {
                    return Err(corrupt(src.len()));
                }
                if src[si] != b'=' {
                    return Err(corrupt(si - 1));
                }
                si += 1;
            }
            si = skip_newlines(src, si);
            if si < src.len() {
                return Err(corrupt(si));
            }
            len = j;
            done = true;
            break;
        }
        let v = (u32::from(quad[0]) << 18)
            | (u32::from(quad[1]) << 12)
            | (u32::from(quad[2]) << 6)
            | u32::from(quad[3]);
        let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
        out.extend_from_slice(&bytes[..len - 1]);
        if done {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_reports_like_go() {
        assert_eq!(decode(b"aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode(b"aGVs\nbG8=\n").unwrap(), b"hello");
        assert_eq!(decode(b"").unwrap(), b"");
        assert_eq!(decode(b"QR==").unwrap(), b"A"); // unused bits ignored
        assert_eq!(
            decode(b"aGVsbG8").unwrap_err(),
            "illegal base64 data at input byte 4"
        );
        assert_eq!(
            decode(b"a").unwrap_err(),
            "illegal base64 data at input byte 0"
        );
        assert_eq!(
            decode(b"aGVsbG8=x").unwrap_err(),
            "illegal base64 data at input byte 8"
        );
        assert_eq!(
            decode(b"QQ=").unwrap_err(),
            "illegal base64 data at input byte 3"
        );
        assert_eq!(
            decode(b"QQ=x").unwrap_err(),
            "illegal base64 data at input byte 2"
        );
        assert_eq!(
            decode(b"Q===").unwrap_err(),
            "illegal base64 data at input byte 1"
        );
        assert_eq!(
            decode(b"QQ==QQ==").unwrap_err(),
            "illegal base64 data at input byte 4"
        );
        assert_eq!(
            decode(b"ab-d").unwrap_err(),
            "illegal base64 data at input byte 2"
        );
    }
}
