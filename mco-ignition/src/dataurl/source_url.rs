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
