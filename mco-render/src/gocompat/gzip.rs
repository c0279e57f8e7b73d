//! Go's `compress/gzip` writer at `gzip.BestCompression`, as Butane uses it for file
//! contents: no name, no comment, modification time 0, the header's extra flags 2 and OS 255,
//! the deflate stream as Go's `compress/flate` writes it at level 9 (whose bytes differ from
//! zlib's), then CRC-32 and size.
//!
//! The deflate stream is [`super::flate`]'s.

/// The gzip member Go's `gzip.NewWriterLevel(w, gzip.BestCompression)` writes for `data`.
pub fn gzip_best(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255];
    out.extend_from_slice(&deflate_best(data));
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

pub use super::flate::deflate_best;

/// CRC-32 (IEEE), as gzip's trailer holds it.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod edge_cases;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_valid_gzip_member() {
        for data in [&b""[..], b"hello\n", &[7u8; 70_000]] {
            let z = gzip_best(data);
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&z[..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data);
        }
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn as_butane_wrote_it() {
        // /etc/chrony.conf of Butane conformance case b0079 and the gzip data URL Butane
        // (Go 1.27) made of it.
        let chrony = "server 10.0.0.1 iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\n\
                      rtcsync\nkeyfile /etc/chrony.keys\nlogdir /var/log/chrony\n";
        let go =
            "H4sIAAAAAAAC/yzM0Q3DIAyE4XdP4QkgqBMlxEktaKjOLhLbV23QPf76zgRdwGkJvyXW7QNz2qGHH1qFY18R\
                  q24xP9GuEf+FXmsRc3lzCgs/CJ5tXJmKjBuJ5wlCkWFU27kr5lk7Z6PvAPjx3vt+AAAA";
        assert_eq!(
            gzip_best(chrony.as_bytes()),
            super::super::base64::std_decode(go).unwrap()
        );
    }
}
