//! Standard padded base64 decoding with Go's `encoding/base64` rules and error offsets:
//! `\n` and `\r` are skipped anywhere, padding must be complete, nothing but newlines may follow
//! it, and unused trailing bits are ignored (not strict).

/// Marks a byte that is not in the standard alphabet.
const INVALID: u8 = 0xff;

/// Sextet value of every byte, [`INVALID`] outside the alphabet.
const VALUES: [u8; 256] = {
    let mut t = [INVALID; 256];
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = i as u8;
        t[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    t[b'+' as usize] = 62;
    t[b'/' as usize] = 63;
    t
};

fn value(c: u8) -> Option<u8> {
    let v = VALUES[c as usize];
    (v != INVALID).then_some(v)
}

/// The three bytes four sextets make.
fn join(sextets: [u8; 4]) -> [u8; 3] {
    let n = (u32::from(sextets[0]) << 18)
        | (u32::from(sextets[1]) << 12)
        | (u32::from(sextets[2]) << 6)
        | u32::from(sextets[3]);
    [(n >> 16) as u8, (n >> 8) as u8, n as u8]
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
    decode_with(src, |bytes| out.extend_from_slice(bytes))?;
    Ok(out)
}

/// Checks `src` as [`decode`] does, without keeping the bytes.
pub(super) fn check(src: &[u8]) -> Result<(), String> {
    decode_with(src, |_| {})
}

/// Decodes `src`, handing each decoded group of bytes to `emit`.
fn decode_with(src: &[u8], mut emit: impl FnMut(&[u8])) -> Result<(), String> {
    let mut si = 0;
    while si < src.len() {
        // Fast path: four alphabet bytes in a row make a full quantum, nothing else to check.
        if let Some(q) = src.get(si..si + 4) {
            let v = [
                VALUES[q[0] as usize],
                VALUES[q[1] as usize],
                VALUES[q[2] as usize],
                VALUES[q[3] as usize],
            ];
            if v.iter().all(|x| *x != INVALID) {
                emit(&join(v));
                si += 4;
                continue;
            }
        }
        // One quantum: up to four sextets.
        let mut quad = [0u8; 4];
        let mut len = 4;
        let mut j = 0;
        let mut done = false;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(());
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
        emit(&join(quad)[..len - 1]);
        if done {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_like_go() {
        assert_eq!(decode(b"aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode(b"aGVs\nbG8=\n").unwrap(), b"hello");
        assert_eq!(decode(b"").unwrap(), b"");
        assert_eq!(decode(b"QR==").unwrap(), b"A"); // unused bits ignored
    }

    #[test]
    fn reports_the_offset_go_reports() {
        for (input, at) in [
            (&b"aGVsbG8"[..], 4),
            (b"a", 0),
            (b"aGVsbG8=x", 8),
            (b"QQ=", 3),
            (b"QQ=x", 2),
            (b"Q===", 1),
            (b"QQ==QQ==", 4),
            (b"ab-d", 2),
        ] {
            assert_eq!(
                decode(input),
                Err(format!("illegal base64 data at input byte {at}")),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }
}
