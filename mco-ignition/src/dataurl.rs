//! Data URLs as Ignition reads them, and the shortest encodings Butane writes.
//!
//! Parsing follows the data URL library Ignition uses: `data:[type/subtype][;attr=value]...
//! [;base64],DATA`, case-sensitive `data:` and `base64`, token characters only in the media type
//! and parameters, quoted parameter values with Go string escapes. Without `base64` the data may
//! hold printable ASCII URL characters (`+` stays `+`) with `%XX` escapes; with it, standard
//! padded base64 where newlines are skipped. Errors carry the library's messages.

mod go_base64;
mod source_url;

use std::collections::BTreeMap;
use std::io::{Read, Write};

pub use source_url::{validate_source_url, validate_source_url_v2, UrlError};

/// A decoded data URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataUrl {
    /// The media type, `text/plain` when none is given.
    pub media_type: String,
    /// Parameters; `charset=US-ASCII` when no media type is given.
    pub params: BTreeMap<String, String>,
    /// Whether the data was base64.
    pub base64: bool,
    /// The decoded bytes.
    pub data: Vec<u8>,
}

/// A data URL that does not decode; the text is the library's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DataUrlError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, DataUrlError> {
    Err(DataUrlError(msg.into()))
}

/// Control, space, non-ASCII and tspecials are not token characters.
fn is_token(c: char) -> bool {
    c.is_ascii() && !c.is_ascii_control() && c != ' ' && !"()<>@,;:\\\"/[]?=".contains(c)
}

fn is_url_char(c: char) -> bool {
    c.is_ascii() && !c.is_ascii_control() && !" <>#\"{}|\\^[]`".contains(c)
}

/// Bytes allowed in base64 data: ASCII letters and digits, `+`, `/`, `=` and newline.
const BASE64_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 128 {
        let c = i as u8;
        t[i] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'\n');
        i += 1;
    }
    t
};

/// A cursor over the input that reads one character at a time.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
    start: usize,
}

impl Cursor<'_> {
    fn next(&mut self) -> Option<char> {
        let c = self.s[self.pos..].chars().next()?;
        self.pos += c.len_utf8();
        Some(c)
    }
    fn back(&mut self, c: char) {
        self.pos -= c.len_utf8();
    }
    /// The text since the last `take`, and moves the start.
    fn take(&mut self) -> &str {
        let t = &self.s[self.start..self.pos];
        self.start = self.pos;
        t
    }
    /// Moves over token characters up to the next `;` or `,`; `at_end` is the error when the
    /// text ends first, `bad` the error for any other character.
    fn skip_token(&mut self, at_end: &str, bad: &str) -> Result<(), DataUrlError> {
        loop {
            match self.next() {
                Some(ch @ (';' | ',')) => {
                    self.back(ch);
                    return Ok(());
                }
                None => return err(at_end),
                Some(ch) if is_token(ch) => {}
                Some(_) => return err(bad),
            }
        }
    }
}

/// Decodes `%XX` escapes; any other ASCII character stands for itself.
pub fn unescape(s: &str) -> Result<Vec<u8>, DataUrlError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !c.is_ascii() {
            return err("rfc2396: non-ASCII char detected");
        }
        if c == b'%' {
            let mut byte = 0u8;
            for k in 1..=2 {
                match b.get(i + k) {
                    None => return err("rfc2396: unexpected end of unescape sequence"),
                    Some(h) => match (*h as char).to_digit(16) {
                        // The library reports the '%' itself, not the offending character.
                        None => return err("rfc2396: invalid char 0x25 in unescape sequence"),
                        Some(d) => byte = byte * 16 + d as u8,
                    },
                }
            }
            out.push(byte);
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    Ok(out)
}

/// Go's `strconv.Unquote` of a double-quoted string body, reduced to "value or error".
fn go_unquote(body: &str) -> Result<String, DataUrlError> {
    let syntax = || DataUrlError("invalid syntax".into());
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    let hex = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| {
        let mut v = 0u32;
        for _ in 0..n {
            v = v * 16
                + chars
                    .next()
                    .and_then(|c| c.to_digit(16))
                    .ok_or_else(syntax)?;
        }
        Ok::<u32, DataUrlError>(v)
    };
    let mut bytes: Vec<u8> = Vec::new();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\n' => return Err(syntax()),
            '\\' => {
                let e = chars.next().ok_or_else(syntax)?;
                let ch = match e {
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'v' => '\u{b}',
                    '\\' => '\\',
                    '"' => '"',
                    'x' => {
                        bytes.push(hex(&mut chars, 2)? as u8);
                        continue;
                    }
                    '0'..='7' => {
                        let mut v = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            v = v * 8
                                + chars
                                    .next()
                                    .and_then(|c| c.to_digit(8))
                                    .ok_or_else(syntax)?;
                        }
                        if v > 255 {
                            return Err(syntax());
                        }
                        bytes.push(v as u8);
                        continue;
                    }
                    'u' => char::from_u32(hex(&mut chars, 4)?).ok_or_else(syntax)?,
                    'U' => char::from_u32(hex(&mut chars, 8)?).ok_or_else(syntax)?,
                    _ => return Err(syntax()),
                };
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    // Go strings hold bytes; invalid UTF-8 from \x escapes is kept as replacement characters.
    out.push_str(&String::from_utf8_lossy(&bytes));
    Ok(out)
}

/// Parses a data URL.
pub fn parse(url: &str) -> Result<DataUrl, DataUrlError> {
    parse_with(url, true)
}

/// Checks a data URL as [`parse`] does (same errors), without keeping base64 data.
pub fn check(url: &str) -> Result<(), DataUrlError> {
    parse_with(url, false).map(|_| ())
}

/// Parses a data URL; `keep` false skips storing decoded base64 data.
fn parse_with(url: &str, keep: bool) -> Result<DataUrl, DataUrlError> {
    let mut du = DataUrl {
        media_type: "text/plain".into(),
        params: BTreeMap::from([("charset".to_string(), "US-ASCII".to_string())]),
        base64: false,
        data: Vec::new(),
    };
    let Some(rest_start) = url.strip_prefix("data:").map(|r| url.len() - r.len()) else {
        return err("missing data prefix");
    };
    let mut c = Cursor {
        s: url,
        pos: rest_start,
        start: rest_start,
    };
    let (mut mtype, mut subtype) = ("text".to_string(), "plain".to_string());
    // Media type.
    let first = c.next();
    match first {
        Some(';') | Some(',') => c.back(first.unwrap_or(',')),
        None => return err("missing comma before data"),
        Some(ch) if is_token(ch) => {
            let x_token = if ch == 'x' || ch == 'X' {
                c.next() == Some('-')
            } else {
                false
            };
            loop {
                match c.next() {
                    Some('/') => {
                        c.back('/');
                        let t = &url[c.start..c.pos];
                        let known = [
                            "text",
                            "image",
                            "audio",
                            "video",
                            "application",
                            "message",
                            "multipart",
                        ]
                        .iter()
                        .any(|p| t.starts_with(p));
                        if !x_token && !known {
                            return err("invalid media type");
                        }
                        break;
                    }
                    None => return err("missing media type slash"),
                    Some(ch) if is_token(ch) => {}
                    Some(_) => return err("invalid character for media type"),
                }
            }
            mtype = c.take().to_string();
            du.params.remove("charset");
            c.next();
            c.take();
            c.skip_token(
                "incomplete media type",
                "invalid character for media subtype",
            )?;
            let t = c.take();
            if !t.is_empty() {
                subtype = t.to_string();
            }
        }
        Some(_) => return err("invalid character after data prefix"),
    }
    // Parameters, then the comma.
    let mut pending_unquote = false;
    loop {
        match c.next() {
            Some(',') => break,
            Some(';') => {}
            None => return err("missing comma before data"),
            Some(_) => return err("expected semicolon or comma"),
        }
        c.take();
        match c.next() {
            None | Some('=') | Some(',') => return err("unterminated parameter sequence"),
            Some(ch) if is_token(ch) => c.back(ch),
            Some(_) => return err("invalid character for parameter attribute"),
        }
        let attr = loop {
            match c.next() {
                Some('=') => {
                    c.back('=');
                    break c.take().to_string();
                }
                Some(',') => {
                    c.back(',');
                    let v = c.take();
                    if v != "base64" {
                        return err(format!("expected base64, got {v}"));
                    }
                    du.base64 = true;
                    break String::new();
                }
                None => return err("unterminated parameter sequence"),
                Some(ch) if is_token(ch) => {}
                Some(_) => return err("invalid character for parameter attribute"),
            }
        };
        if du.base64 {
            c.next();
            break;
        }
        c.next(); // '='
        c.take();
        let raw = match c.next() {
            Some('"') => {
                c.take();
                pending_unquote = true;
                loop {
                    match c.next() {
                        None => return err("unclosed quoted string"),
                        Some('\\') => match c.next() {
                            Some(e) if e.is_ascii() => {}
                            None => return err("unexpected eof"),
                            Some(_) => return err("invalid escaped character"),
                        },
                        Some('"') => {
                            c.back('"');
                            break;
                        }
                        Some(ch) if ch.is_ascii() => {}
                        Some(_) => return err("invalid character for parameter value"),
                    }
                }
                let v = c.take().to_string();
                c.next();
                c.take();
                v
            }
            None => return err("missing comma before data"),
            Some(ch) if is_token(ch) => {
                c.skip_token(
                    "missing comma before data",
                    "invalid character for parameter value",
                )?;
                c.take().to_string()
            }
            Some(_) => return err("invalid character for parameter value"),
        };
        // An empty quoted value sets nothing, and the next value is unquoted instead.
        if !raw.is_empty() {
            let value = if pending_unquote {
                pending_unquote = false;
                go_unquote(&raw)?
            } else {
                String::from_utf8_lossy(&unescape(&raw)?).into_owned()
            };
            du.params.insert(attr, value);
        }
    }
    // Data.
    let data = &url[c.pos..];
    if du.base64 {
        // Every base64 character is ASCII, so bytes can be checked instead of characters.
        if !data.bytes().all(|b| BASE64_BYTES[b as usize]) {
            return err("invalid data character");
        }
        if keep {
            du.data = go_base64::decode(data.as_bytes()).map_err(DataUrlError)?;
        } else {
            go_base64::check(data.as_bytes()).map_err(DataUrlError)?;
        }
    } else {
        if data.chars().any(|ch| !is_url_char(ch)) {
            return err("invalid data character");
        }
        du.data = unescape(data)?;
    }
    du.media_type = format!("{mtype}/{subtype}");
    Ok(du)
}

/// Whether a byte is kept as it is by [`encode_percent`] (letters, digits, `-_.!~*'()`).
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b)
}

/// `data:,` followed by the bytes, `%XX`-escaping all but unreserved characters.
pub fn encode_percent(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(6 + bytes.len() * 3);
    out.push_str("data:,");
    for &b in bytes {
        if is_unreserved(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `data:;base64,` followed by standard padded base64.
pub fn encode_base64(bytes: &[u8]) -> String {
    use base64::Engine;
    format!(
        "data:;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// gzip with the best compression, as Butane does.
fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(bytes)?;
    enc.finish()
}

/// The shortest of the percent, base64 and gzip+base64 encodings, with the compression to
/// declare (`Some("gzip")` for the last). Ties prefer percent, then base64.
pub fn encode_shortest(bytes: &[u8]) -> (String, Option<&'static str>) {
    let mut best = (encode_percent(bytes), None);
    let b64 = encode_base64(bytes);
    if b64.len() < best.0.len() {
        best = (b64, None);
    }
    if let Ok(z) = gzip(bytes) {
        let zb = encode_base64(&z);
        if zb.len() < best.0.len() {
            best = (zb, Some("gzip"));
        }
    }
    best
}

/// Why a resource's contents could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ContentsError {
    /// The source is not a valid data URL.
    #[error(transparent)]
    DataUrl(#[from] DataUrlError),
    /// The compression is neither absent, empty nor `gzip`.
    #[error("invalid compression method")]
    Compression,
    /// The gzip stream is corrupt.
    #[error("gzip: {0}")]
    Gzip(#[from] std::io::Error),
}

/// Decodes a data URL source and gunzips it when `compression` is `gzip`.
pub fn decode_contents(source: &str, compression: Option<&str>) -> Result<Vec<u8>, ContentsError> {
    let data = parse(source)?.data;
    match compression {
        None | Some("") => Ok(data),
        Some("gzip") => {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(data.as_slice()).read_to_end(&mut out)?;
            Ok(out)
        }
        Some(_) => Err(ContentsError::Compression),
    }
}

/// A verification hash that does not hold; the texts are Ignition's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    /// No `-` between function and sum.
    #[error("malformed hash specifier")]
    Malformed,
    /// A function other than `sha512` or `sha256`.
    #[error("unrecognized hash function")]
    Unrecognized,
    /// The sum has the wrong number of hex digits.
    #[error("incorrect size for hash sum")]
    WrongSize,
    /// The bytes hash to another value.
    #[error("hash mismatch: calculated {calculated}, expected {expected}")]
    Mismatch {
        /// The lowercase hex digest of the bytes.
        calculated: String,
        /// The sum given in the spec.
        expected: String,
    },
}

/// Checks `sha512-<hex>` / `sha256-<hex>` against the bytes (the decompressed contents).
pub fn check_hash(spec: &str, bytes: &[u8]) -> Result<(), HashError> {
    use sha2::Digest;
    let (function, sum) = spec.split_once('-').ok_or(HashError::Malformed)?;
    let calculated = match function {
        "sha512" => hex::encode(sha2::Sha512::digest(bytes)),
        "sha256" => hex::encode(sha2::Sha256::digest(bytes)),
        _ => return Err(HashError::Unrecognized),
    };
    if sum.len() != calculated.len() {
        return Err(HashError::WrongSize);
    }
    if !sum.eq_ignore_ascii_case(&calculated) {
        return Err(HashError::Mismatch {
            calculated,
            expected: sum.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
