//! Spec 2 source URL checks: Go `net/url` parsing (the failures it reports) and data URLs.

use base64::Engine;

/// "unable to parse url".
pub const ERR_INVALID_URL: &str = "unable to parse url";
/// "invalid url scheme".
pub const ERR_INVALID_SCHEME: &str = "invalid url scheme";
/// "invalid S3 object VersionId".
pub const ERR_S3_VERSION: &str = "invalid S3 object VersionId";

/// Checks a 2.2 source URL; `Err` holds the report message.
pub fn validate_url(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Ok(());
    }
    let parsed = go_url_parse(s).map_err(|_| ERR_INVALID_URL.to_string())?;
    match parsed.scheme.as_str() {
        "http" | "https" | "oem" | "tftp" => Ok(()),
        "s3" => {
            // A `versionId` query parameter must have a non-empty first value.
            let mut first: Option<String> = None;
            for pair in parsed.query.split(['&', ';']) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                if query_unescape(k).as_deref() == Some("versionId") && first.is_none() {
                    first = Some(query_unescape(v).unwrap_or_default());
                }
            }
            match first {
                Some(v) if v.is_empty() => Err(ERR_S3_VERSION.into()),
                _ => Ok(()),
            }
        }
        "data" => check_data_url(s),
        _ => Err(ERR_INVALID_SCHEME.into()),
    }
}

struct Parsed {
    scheme: String,
    query: String,
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

fn query_unescape(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len() || !is_hex(b[i + 1]) || !is_hex(b[i + 2]) {
                    return None;
                }
                let h = u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).ok()?, 16).ok()?;
                out.push(h);
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
    String::from_utf8(out).ok()
}

/// Percent escapes must be complete; in hosts, ASCII characters outside Go's allowed set fail.
fn check_escapes(s: &str, host: bool) -> Result<(), ()> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() || !is_hex(b[i + 1]) || !is_hex(b[i + 2]) {
                return Err(());
            }
            i += 3;
            continue;
        }
        if host && b[i] < 0x80 && !host_char_ok(b[i]) {
            return Err(());
        }
        i += 1;
    }
    Ok(())
}

fn host_char_ok(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&c)
}

fn valid_optional_port(p: &str) -> bool {
    if p.is_empty() {
        return true;
    }
    match p.strip_prefix(':') {
        Some(d) => d.bytes().all(|c| c.is_ascii_digit()),
        None => false,
    }
}

fn parse_host(host: &str) -> Result<(), ()> {
    if let Some(rest) = host.strip_prefix('[') {
        let i = rest.rfind(']').ok_or(())?;
        if !valid_optional_port(&rest[i + 1..]) {
            return Err(());
        }
        // Zone identifiers and the literal itself are unescaped with host rules.
        check_escapes(&rest[..i], true)?;
        return Ok(());
    }
    if let Some(i) = host.rfind(':') {
        if !valid_optional_port(&host[i..]) {
            return Err(());
        }
    }
    check_escapes(host, true)
}

fn valid_userinfo(s: &str) -> bool {
    s.bytes()
        .all(|c| c.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&c) || c >= 0x80)
}

/// The subset of Go's `url.Parse` that decides success or failure.
fn go_url_parse(raw: &str) -> Result<Parsed, ()> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(());
    }
    let (rest, frag) = match raw.split_once('#') {
        Some((a, f)) => (a, Some(f)),
        None => (raw, None),
    };
    if let Some(f) = frag {
        check_escapes(f, false)?;
    }
    if rest == "*" {
        return Ok(Parsed {
            scheme: String::new(),
            query: String::new(),
        });
    }
    let mut scheme = String::new();
    let mut after = rest;
    for (i, c) in rest.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            '0'..='9' | '+' | '-' | '.' => break,
            ':' => {
                if i == 0 {
                    return Err(());
                }
                scheme = rest[..i].to_ascii_lowercase();
                after = &rest[i + 1..];
                break;
            }
            _ => break,
        }
    }
    let (path_part, query) = match after.split_once('?') {
        Some((p, q)) => (p, q.to_string()),
        None => (after, String::new()),
    };
    if !path_part.starts_with('/') {
        if !scheme.is_empty() {
            // Opaque: nothing further is checked.
            return Ok(Parsed { scheme, query });
        }
        if let Some(colon) = path_part.find(':') {
            if path_part.find('/').is_none_or(|slash| colon < slash) {
                return Err(());
            }
        }
    }
    let mut path = path_part;
    if (!scheme.is_empty() || !path_part.starts_with("///")) && path_part.starts_with("//") {
        let auth_and_path = &path_part[2..];
        let (authority, p) = match auth_and_path.find('/') {
            Some(i) => (&auth_and_path[..i], &auth_and_path[i..]),
            None => (auth_and_path, ""),
        };
        let host = match authority.rfind('@') {
            Some(i) => {
                if !valid_userinfo(&authority[..i]) {
                    return Err(());
                }
                check_escapes(&authority[..i], false)?;
                &authority[i + 1..]
            }
            None => authority,
        };
        parse_host(host)?;
        path = p;
    }
    check_escapes(path, false)?;
    Ok(Parsed { scheme, query })
}

/// Checks a `data:` URL as upstream's data URL decoder does; `Err` holds its message.
pub fn check_data_url(s: &str) -> Result<(), String> {
    let Some(rest) = s.strip_prefix("data:") else {
        return Err("missing data prefix".into());
    };
    let Some(comma) = rest.find(',') else {
        return Err("missing comma before data".into());
    };
    let (meta, data) = (&rest[..comma], &rest[comma + 1..]);
    let base64 = meta
        .rsplit(';')
        .next()
        .is_some_and(|last| last == "base64" && meta.contains(';'))
        || meta == ";base64";
    if base64 {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map(|_| ())
            .map_err(|e| match e {
                base64::DecodeError::InvalidByte(i, _) => {
                    format!("illegal base64 data at input byte {i}")
                }
                base64::DecodeError::InvalidLength(n) => {
                    format!("illegal base64 data at input byte {n}")
                }
                base64::DecodeError::InvalidLastSymbol(i, _) => {
                    format!("illegal base64 data at input byte {i}")
                }
                base64::DecodeError::InvalidPadding => {
                    format!("illegal base64 data at input byte {}", data.len())
                }
            })
    } else {
        let b = data.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] >= 0x80 {
                return Err("rfc2396: non-ASCII char detected".into());
            }
            if b[i] == b'%' {
                for k in 1..=2 {
                    match b.get(i + k) {
                        None => return Err("rfc2396: unexpected end of unescape sequence".into()),
                        Some(c) if !is_hex(*c) => {
                            return Err("rfc2396: invalid char 0x25 in unescape sequence".into())
                        }
                        _ => {}
                    }
                }
                i += 3;
            } else {
                i += 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_url_failures() {
        assert_eq!(validate_url("http://[::1"), Err(ERR_INVALID_URL.into()));
        assert_eq!(validate_url("http://a b/"), Err(ERR_INVALID_URL.into()));
        assert_eq!(validate_url("http://x/%zz"), Err(ERR_INVALID_URL.into()));
        assert_eq!(validate_url("http://x:80/a"), Ok(()));
        assert_eq!(validate_url("ftp://x/a"), Err(ERR_INVALID_SCHEME.into()));
        assert_eq!(validate_url("data:,abc%20"), Ok(()));
        assert!(validate_url("data:;base64,@@").is_err());
        assert_eq!(validate_url("data:;base64,aGk="), Ok(()));
    }
}
