//! Validation of a Resource `source` in spec 3.x, as Ignition does it: Go `url.Parse`, the
//! scheme allow-list of the spec version, S3 `versionId`, S3 ARNs and data URL decoding.

use super::{check, DataUrlError};

/// Why a source URL is refused; the texts are Ignition's (or the data URL library's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Go's `url.Parse` fails.
    #[error("unable to parse url")]
    Unparsable,
    /// The scheme is not allowed in this spec version.
    #[error("invalid url scheme")]
    Scheme,
    /// An s3 or arn URL with an empty `versionId` query parameter.
    #[error("invalid S3 object VersionId")]
    S3VersionId,
    /// An arn URL that is not an S3 object or access point ARN.
    #[error("invalid S3 ARN format")]
    S3Arn,
    /// A data URL that does not decode.
    #[error(transparent)]
    DataUrl(#[from] DataUrlError),
}

fn valid_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            match (b.get(i + 1), b.get(i + 2)) {
                (Some(h1), Some(h2)) if h1.is_ascii_hexdigit() && h2.is_ascii_hexdigit() => i += 3,
                _ => return false,
            }
        } else {
            i += 1;
        }
    }
    true
}

/// Host characters Go refuses (ASCII that must be escaped in a host), and `%XX` rules: only
/// escapes of bytes >= 0x80, or `%25`.
fn valid_host_text(host: &str) -> bool {
    let b = host.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'%' {
            match (b.get(i + 1), b.get(i + 2)) {
                (Some(h1), Some(h2)) if h1.is_ascii_hexdigit() && h2.is_ascii_hexdigit() => {
                    let high = (*h1 as char).to_digit(16).unwrap_or(0);
                    if high < 8 && &host[i..i + 3] != "%25" {
                        return false;
                    }
                    i += 3;
                    continue;
                }
                _ => return false,
            }
        }
        let ok =
            !c.is_ascii() || c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&c);
        if !ok {
            return false;
        }
        i += 1;
    }
    true
}

/// `""`, or `:` followed by digits.
fn valid_optional_port(p: &str) -> bool {
    p.is_empty()
        || p.strip_prefix(':')
            .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
}

fn valid_host(host: &str) -> bool {
    if host.starts_with('[') {
        let Some(end) = host.rfind(']') else {
            return false;
        };
        if !valid_optional_port(&host[end + 1..]) {
            return false;
        }
    } else if let Some(colon) = host.rfind(':') {
        if !valid_optional_port(&host[colon..]) {
            return false;
        }
    }
    valid_host_text(host)
}

fn valid_authority(auth: &str) -> bool {
    let host = match auth.rfind('@') {
        None => auth,
        Some(at) => {
            let userinfo = &auth[..at];
            let chars_ok = userinfo
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&c));
            if !chars_ok || !valid_escapes(userinfo) {
                return false;
            }
            &auth[at + 1..]
        }
    };
    valid_host(host)
}

/// The parts of a URL that the checks need.
struct GoUrl<'a> {
    scheme: String,
    opaque: &'a str,
    raw_query: &'a str,
}

/// Go's `url.Parse`, reduced to the checks that can fail and the parts used afterwards.
fn go_url_parse(s: &str) -> Option<GoUrl<'_>> {
    if s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return None;
    }
    let (main, fragment) = s.split_once('#').unwrap_or((s, ""));
    if !valid_escapes(fragment) {
        return None;
    }
    // Scheme: a letter, then letters, digits, '+', '-', '.', up to ':'.
    let mut scheme = "";
    let mut rest = main;
    for (i, c) in main.bytes().enumerate() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.') {
            if i == 0 {
                break;
            }
            continue;
        }
        if c == b':' {
            if i == 0 {
                return None; // missing protocol scheme
            }
            scheme = &main[..i];
            rest = &main[i + 1..];
        }
        break;
    }
    let (rest, raw_query) = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        (&rest[..rest.len() - 1], "")
    } else {
        rest.split_once('?').unwrap_or((rest, ""))
    };
    let scheme = scheme.to_ascii_lowercase();
    if !rest.starts_with('/') {
        if !scheme.is_empty() {
            return Some(GoUrl {
                scheme,
                opaque: rest,
                raw_query,
            });
        }
        let first_segment = rest.split('/').next().unwrap_or("");
        if first_segment.contains(':') {
            return None; // first path segment in URL cannot contain colon
        }
    }
    let mut path = rest;
    if (!scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let after = &rest[2..];
        let (auth, p) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        if !valid_authority(auth) {
            return None;
        }
        path = p;
    }
    if !valid_escapes(path) {
        return None;
    }
    Some(GoUrl {
        scheme,
        opaque: "",
        raw_query,
    })
}

/// Go's `url.Query()["versionId"]`: `None` when absent, else the first value.
fn version_id(raw_query: &str) -> Option<String> {
    for pair in raw_query.split('&') {
        if pair.is_empty() || pair.contains(';') {
            continue;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (Some(k), Some(v)) = (query_unescape(k), query_unescape(v)) else {
            continue;
        };
        if k == "versionId" {
            return Some(v);
        }
    }
    None
}

fn query_unescape(s: &str) -> Option<String> {
    if !valid_escapes(s) {
        return None;
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

fn check_version_id(raw_query: &str) -> Result<(), UrlError> {
    match version_id(raw_query) {
        Some(v) if v.is_empty() => Err(UrlError::S3VersionId),
        _ => Ok(()),
    }
}

/// Validates a Resource source for spec 3.`minor`. An empty source is accepted (absent).
pub fn validate_source_url(url: &str, minor: u64) -> Result<(), UrlError> {
    if url.is_empty() {
        return Ok(());
    }
    match plain_base64_data_url(url) {
        Some(result) => result,
        None => validate_general(url, minor),
    }
}

/// Validates a spec 2.2 Resource source as spec 2 does: the same parse and checks as
/// [`validate_source_url`], with spec 2's schemes (`oem`; no `gs` or `arn`). An empty source
/// is accepted (absent).
pub fn validate_source_url_v2(url: &str) -> Result<(), UrlError> {
    if url.is_empty() {
        return Ok(());
    }
    let u = go_url_parse(url).ok_or(UrlError::Unparsable)?;
    match u.scheme.as_str() {
        "http" | "https" | "oem" | "tftp" => Ok(()),
        "s3" => check_version_id(u.raw_query),
        "data" => check(url).map_err(UrlError::from),
        _ => Err(UrlError::Scheme),
    }
}

/// [`validate_source_url`] without the data URL fast path.
fn validate_general(url: &str, minor: u64) -> Result<(), UrlError> {
    let u = go_url_parse(url).ok_or(UrlError::Unparsable)?;
    match u.scheme.as_str() {
        "http" | "https" | "tftp" => Ok(()),
        "gs" if minor >= 2 => Ok(()),
        "s3" => check_version_id(u.raw_query),
        "arn" if minor >= 4 => {
            let full = format!("arn:{}", u.opaque);
            if full.matches(':').count() < 5 {
                return Err(UrlError::S3Arn);
            }
            let sections: Vec<&str> = full.splitn(6, ':').collect();
            let service = sections.get(2).copied().unwrap_or("");
            let resource = sections.get(5).copied().unwrap_or("");
            if service != "s3" {
                return Err(UrlError::S3Arn);
            }
            let slashes = full.split('/').count();
            if (resource.starts_with("accesspoint/") && slashes < 3) || slashes < 2 {
                return Err(UrlError::S3Arn);
            }
            check_version_id(u.raw_query)
        }
        "data" => check(url).map_err(UrlError::from),
        _ => Err(UrlError::Scheme),
    }
}

/// ASCII graphic characters other than `,`, `#`, `%`, `?`, `"` and `\`: a data URL header made
/// of these ends at the first comma and has no fragment, query, escape or quoted value.
const PLAIN_HEADER: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0x21;
    while c <= 0x7E {
        t[c] = !matches!(c as u8, b',' | b'#' | b'%' | b'?' | b'"' | b'\\');
        c += 1;
    }
    t
};

/// The base64 alphabet without padding.
const ALPHABET: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = (c as u8).is_ascii_alphanumeric() || c == b'+' as usize || c == b'/' as usize;
        c += 1;
    }
    t
};

/// Fast path for the common data URL: `data:`, a header of [`PLAIN_HEADER`] characters not
/// starting with `/`, a comma, then complete padded base64. Such a URL parses as Go's `url.Parse`
/// does (an opaque `data` URL), and its data cannot fail the data URL checks whether or not the
/// header says base64, so its result is that of its header alone; that result is returned.
/// `None` when the URL is not of this shape.
fn plain_base64_data_url(url: &str) -> Option<Result<(), UrlError>> {
    let rest = url.strip_prefix("data:")?;
    let comma = rest.bytes().position(|b| !PLAIN_HEADER[usize::from(b)])?;
    // `x,` and `X,`: Go's lexer reads the character after a leading `x` to look for `x-`, and
    // so takes the comma as part of the media type; the rest of the URL decides the error.
    let x_comma = matches!(rest.as_bytes(), [b'x' | b'X', b',', ..]);
    if rest.as_bytes()[comma] != b',' || rest.starts_with('/') || x_comma {
        return None;
    }
    let body = &rest.as_bytes()[comma + 1..];
    if body.len() % 4 != 0 {
        return None;
    }
    let pad = body
        .iter()
        .rev()
        .take(2)
        .take_while(|&&b| b == b'=')
        .count();
    if !all_base64(&body[..body.len() - pad]) {
        return None;
    }
    let header = &url[..url.len() - body.len()];
    if COMMON_HEADERS.contains(&header) {
        return Some(Ok(()));
    }
    Some(check(header).map_err(UrlError::from))
}

/// Whether every byte is in [`ALPHABET`]: eight lookups combined per step, without a branch per
/// byte (the data of a data URL is nearly all of a config's bytes).
fn all_base64(v: &[u8]) -> bool {
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        let ok = c
            .iter()
            .fold(true, |acc, &b| acc & ALPHABET[usize::from(b)]);
        if !ok {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| ALPHABET[usize::from(b)])
}

/// Data URL headers (through the comma) that are known to parse, so need no parsing.
const COMMON_HEADERS: [&str; 6] = [
    "data:,",
    "data:;base64,",
    "data:text/plain;base64,",
    "data:text/plain;charset=utf-8;base64,",
    "data:text/plain;charset=UTF-8;base64,",
    "data:application/octet-stream;base64,",
];

#[cfg(test)]
mod v2_tests {
    use super::*;

    #[test]
    fn spec_2_go_url_failures_and_schemes() {
        for url in ["http://[::1", "http://a b/", "http://x/%zz", "http://x%41/"] {
            assert_eq!(
                validate_source_url_v2(url),
                Err(UrlError::Unparsable),
                "{url}"
            );
        }
        for url in ["ftp://x/a", "gs://b/o", "arn:aws:s3:::b/o"] {
            assert_eq!(validate_source_url_v2(url), Err(UrlError::Scheme), "{url}");
        }
        for url in [
            "",
            "http://x:80/a",
            "oem:///a",
            "tftp://x/a",
            "s3://b/o?versionId=1",
        ] {
            assert_eq!(validate_source_url_v2(url), Ok(()), "{url}");
        }
        assert_eq!(
            validate_source_url_v2("s3://b/o?versionId="),
            Err(UrlError::S3VersionId)
        );
        assert_eq!(validate_source_url_v2("data:,abc%20"), Ok(()));
        assert_eq!(validate_source_url_v2("data:;base64,aGk="), Ok(()));
        assert!(matches!(
            validate_source_url_v2("data:;base64,@@"),
            Err(UrlError::DataUrl(_))
        ));
    }
}

#[cfg(test)]
mod fast_path_tests {
    use super::*;
    use proptest::prelude::*;

    fn agree(url: &str) {
        assert_eq!(
            validate_source_url(url, 4),
            validate_general(url, 4),
            "{url:?}"
        );
    }

    #[test]
    fn fast_path_agrees_on_edge_cases() {
        for url in [
            "data:x,h+9HB6++c/QHAB==",
            "data:X,aGk=",
            "data:x,aGk=",
            "data:,",
            "data:;base64,",
            "data:;base64,QQ==",
            "data:;base64,QUI=",
            "data:;base64,QUJD",
            "data:;base64,Q===",
            "data:;base64,QQ=",
            "data:text/plain;base64,QUJD",
            "data:text/plain;charset=utf-8;base64,QUJD",
            "data:foo/bar;base64,QUJD",
            "data:x-foo/bar;base64,QUJD",
            "data:text/plain;base65,QUJD",
            "data:text/plain;a=b,QUJD",
            "data:/plain;base64,QUJD",
            "data:text/;base64,QUJD",
            "data:text;base64,QUJD",
            "data:;base64;base64,QUJD",
            "data:text/plain;=x;base64,QUJD",
            "data:text/plain;a=;base64,QUJD",
            "data:text/plain;a=b=c;base64,QUJD",
            "data:text/plain;;base64,QUJD",
            "data:text/plain,QUJD",
            "data:,QUJD+/==",
            "DATA:;base64,QUJD",
        ] {
            agree(url);
        }
    }

    #[test]
    fn common_headers_parse() {
        for h in COMMON_HEADERS {
            assert_eq!(check(h), Ok(()), "{h}");
        }
    }

    #[test]
    fn fast_path_taken_for_padded_base64() {
        for url in [
            "data:;base64,H4sIAAAAAAAA/wEAAP//AAAAAAAAAAA=",
            "data:text/plain;charset=utf-8;base64,QUJD",
            "data:,QQ==",
        ] {
            assert_eq!(plain_base64_data_url(url), Some(Ok(())), "{url}");
        }
    }

    proptest! {
        #[test]
        fn fast_path_agrees(
            header in "[a-zA-Z0-9/;=+._~!$&'()*<>@:\\[\\]{}|^`-]{0,24}",
            body in "[A-Za-z0-9+/]{0,16}={0,3}",
        ) {
            agree(&format!("data:{header},{body}"));
            agree(&format!("data:{header};base64,{body}"));
        }
    }
}
