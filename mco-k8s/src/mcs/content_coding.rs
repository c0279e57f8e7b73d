//! Content codings: whether a request's `Accept-Encoding` lets the server send gzip
//! (RFC 9110 §12.5.3), and the gzip encoder the served state uses.

use std::io::Write as _;

/// The weight (`q`, in thousandths) `Accept-Encoding` gives `gzip` and `identity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weights {
    /// gzip's weight: 0 is "not acceptable".
    pub gzip: u16,
    /// identity's weight: 0 is "not acceptable".
    pub identity: u16,
}

/// Parses a qvalue (`0`, `0.5`, `1.000`, ...) into thousandths; `None` when it is not one.
fn qvalue(v: &str) -> Option<u16> {
    let (int, frac) = match v.split_once('.') {
        Some((i, f)) => (i, f),
        None => (v, ""),
    };
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut thousandths: u16 = 0;
    for (i, b) in frac.bytes().enumerate() {
        thousandths += u16::from(b - b'0') * [100, 10, 1][i];
    }
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// The weights an `Accept-Encoding` value gives gzip and identity. Absent: any coding is
/// acceptable but the server should prefer none, so gzip is not sent. Present: codings are
/// compared case-insensitively, `x-gzip` is `gzip`, `*` stands for every coding not named, a
/// coding not listed (and not covered by `*`) is refused except identity, which is acceptable
/// (with the lowest weight, 0.001) unless `identity;q=0` or `*;q=0` says otherwise. An entry
/// whose weight is not a qvalue is ignored; of a coding listed twice the higher weight counts.
pub fn weights(accept_encoding: Option<&str>) -> Weights {
    let Some(header) = accept_encoding else {
        return Weights {
            gzip: 0,
            identity: 1000,
        };
    };
    let (mut gzip, mut identity, mut star) = (None, None, None);
    for entry in header.split(',') {
        let mut parts = entry.split(';');
        let coding = parts.next().unwrap_or("").trim();
        if coding.is_empty() {
            continue;
        }
        let mut q = Some(1000);
        for param in parts {
            let (name, value) = param.split_once('=').unwrap_or((param, ""));
            if name.trim().eq_ignore_ascii_case("q") {
                q = qvalue(value.trim());
            }
        }
        let Some(q) = q else { continue };
        let slot = if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            &mut gzip
        } else if coding.eq_ignore_ascii_case("identity") {
            &mut identity
        } else if coding == "*" {
            &mut star
        } else {
            continue;
        };
        // The same coding listed twice: the most favourable entry counts.
        *slot = Some(slot.map_or(q, |old: u16| old.max(q)));
    }
    Weights {
        gzip: gzip.or(star).unwrap_or(0),
        // Acceptable, but after every coding the client named.
        identity: identity.or(star).unwrap_or(1),
    }
}

/// Whether to send gzip: the client accepts it (weight above 0) at least as much as no coding
/// (equal weights go to gzip, the smaller body).
pub fn prefers_gzip(accept_encoding: Option<&str>) -> bool {
    let w = weights(accept_encoding);
    w.gzip > 0 && w.gzip >= w.identity
}

/// Compresses `body` as a gzip member at the best compression level (the result is made once
/// per served body, so the time is spent once).
pub fn gzip(body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4 + 64),
        flate2::Compression::best(),
    );
    enc.write_all(body)?;
    enc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qvalues() {
        assert_eq!(qvalue("0"), Some(0));
        assert_eq!(qvalue("0."), Some(0));
        assert_eq!(qvalue("0.5"), Some(500));
        assert_eq!(qvalue("0.05"), Some(50));
        assert_eq!(qvalue("0.001"), Some(1));
        assert_eq!(qvalue("1"), Some(1000));
        assert_eq!(qvalue("1.000"), Some(1000));
        for bad in [
            "1.5", "2", "0.0001", "", ".5", "-0", "0.a", "01", "1.001", " 1",
        ] {
            assert_eq!(qvalue(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn gzip_when_asked() {
        for h in [
            "gzip",
            "GZIP",
            "x-gzip",
            "gzip, deflate, br",
            "deflate, gzip;q=1.0",
            "*",
            "br;q=1, *;q=0.5",
            "gzip;q=0.001",
            "identity;q=0.5, gzip;q=0.5",
            "gzip ; Q=0.8",
            "gzip;q=0, gzip;q=1",
        ] {
            assert!(prefers_gzip(Some(h)), "{h:?}");
        }
    }

    #[test]
    fn identity_otherwise() {
        for h in [
            "",
            " ",
            "identity",
            "deflate, br",
            "gzip;q=0",
            "gzip;q=0.000",
            "gzip; q=0",
            "GZip;Q=0",
            "*;q=0",
            "gzip;q=0.4, identity;q=0.5",
            "*;q=0.5, identity",
            "gzip;q=2",
            "gzip;q=abc",
            "gzipx",
            "gzip-ish",
        ] {
            assert!(!prefers_gzip(Some(h)), "{h:?}");
        }
        assert!(!prefers_gzip(None));
    }

    #[test]
    fn named_codings_win_over_star() {
        assert_eq!(
            weights(Some("*, gzip;q=0")),
            Weights {
                gzip: 0,
                identity: 1000
            }
        );
        assert_eq!(
            weights(Some("gzip;q=0.5")),
            Weights {
                gzip: 500,
                identity: 1
            }
        );
        assert_eq!(
            weights(Some("*;q=0.2, identity;q=0.1")),
            Weights {
                gzip: 200,
                identity: 100
            }
        );
        assert_eq!(
            weights(Some("*;q=0")),
            Weights {
                gzip: 0,
                identity: 0
            }
        );
    }

    #[test]
    fn gzip_round_trips() {
        let body = b"{\"ignition\":{\"version\":\"3.5.0\"}}".repeat(100);
        let z = gzip(&body).expect("gzip into memory");
        assert!(z.len() < body.len());
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&z[..]), &mut out)
            .expect("gunzip");
        assert_eq!(out, body);
    }

    proptest::proptest! {
        /// Whatever the header, gzip is sent only when its weight is above 0 and the header
        /// names gzip (or x-gzip) or `*`.
        #[test]
        fn gzip_only_when_named_and_weighted(h in "[a-zA-Z*;=,. 0-9-]{0,40}") {
            if prefers_gzip(Some(&h)) {
                let lower = h.to_ascii_lowercase();
                proptest::prop_assert!(lower.contains("gzip") || h.contains('*'), "{h:?}");
                proptest::prop_assert!(weights(Some(&h)).gzip > 0);
            }
        }
    }
}
