use super::*;
use proptest::prelude::*;

fn perr(s: &str) -> String {
    parse(s).unwrap_err().to_string()
}

#[test]
fn parses_plain_and_base64() {
    let d = parse("data:,hello%20world+%2B").unwrap();
    assert_eq!(d.data, b"hello world++");
    assert_eq!(d.media_type, "text/plain");
    assert_eq!(
        d.params.get("charset").map(String::as_str),
        Some("US-ASCII")
    );
    assert!(!d.base64);
    let d = parse("data:text/plain;charset=utf-8;base64,aGVsbG8=").unwrap();
    assert_eq!(d.data, b"hello");
    assert!(d.base64);
    assert_eq!(d.params.get("charset").map(String::as_str), Some("utf-8"));
    let d = parse("data:;base64,").unwrap();
    assert_eq!(d.data, b"");
    let d = parse("data:application/octet-stream,").unwrap();
    assert!(d.params.is_empty());
    assert_eq!(d.media_type, "application/octet-stream");
    let d = parse(r#"data:text/plain;name="a\"b%41",x"#).unwrap();
    assert_eq!(d.params.get("name").map(String::as_str), Some("a\"b%41"));
    let d = parse("data:text/plain;name=a%41,x").unwrap();
    assert_eq!(d.params.get("name").map(String::as_str), Some("aA"));
    let d = parse("data:x-foo/bar,x").unwrap();
    assert_eq!(d.media_type, "x-foo/bar");
    let d = parse("data:textual/x,x").unwrap(); // only a prefix of the type is checked
    assert_eq!(d.media_type, "textual/x");
}

#[test]
fn library_error_messages() {
    assert_eq!(
        perr("data:,%zz%"),
        "rfc2396: invalid char 0x25 in unescape sequence"
    );
    assert_eq!(
        perr("data:,%4"),
        "rfc2396: unexpected end of unescape sequence"
    );
    assert_eq!(perr("Data:,x"), "missing data prefix");
    assert_eq!(perr("data:"), "missing comma before data");
    assert_eq!(perr("data:text"), "missing media type slash");
    assert_eq!(perr("data:foo/bar,x"), "invalid media type");
    assert_eq!(perr("data:text/"), "incomplete media type");
    assert_eq!(
        perr("data:text/pl/ain,"),
        "invalid character for media subtype"
    );
    assert_eq!(perr("data: ,x"), "invalid character after data prefix");
    assert_eq!(perr("data:;charset,x"), "expected base64, got charset");
    assert_eq!(perr("data:;=x,"), "unterminated parameter sequence");
    assert_eq!(perr("data:;a=\"x,"), "unclosed quoted string");
    assert_eq!(perr("data:;a=b"), "missing comma before data");
    assert_eq!(perr("data:,a b"), "invalid data character");
    assert_eq!(perr("data:,é"), "invalid data character");
    assert_eq!(perr("data:;base64,a-b="), "invalid data character");
    assert_eq!(
        perr("data:;base64,aGVsbG8"),
        "illegal base64 data at input byte 4"
    );
    assert_eq!(perr("data:;a=\"\\q\",x"), "invalid syntax");
}

#[test]
fn percent_encoding_keeps_unreserved() {
    assert_eq!(
        encode_percent(b"a b/\n-_.!~*'()"),
        "data:,a%20b%2F%0A-_.!~*'()"
    );
    assert_eq!(encode_base64(b"hello"), "data:;base64,aGVsbG8=");
}

#[test]
fn shortest_encoding() {
    assert_eq!(encode_shortest(b"abc"), ("data:,abc".to_string(), None));
    let binary: Vec<u8> = (0u8..=255).collect();
    let (s, c) = encode_shortest(&binary);
    assert!(s.starts_with("data:;base64,") && c.is_none(), "{s}");
    let repetitive = vec![b'\n'; 10_000];
    let (s, c) = encode_shortest(&repetitive);
    assert_eq!(c, Some("gzip"));
    assert_eq!(decode_contents(&s, c).unwrap(), repetitive);
}

#[test]
fn contents_and_compression() {
    assert_eq!(decode_contents("data:,hi", None).unwrap(), b"hi");
    assert_eq!(decode_contents("data:,hi", Some("")).unwrap(), b"hi");
    assert!(matches!(
        decode_contents("data:,hi", Some("bzip2")),
        Err(ContentsError::Compression)
    ));
    assert!(matches!(
        decode_contents("data:,hi", Some("gzip")),
        Err(ContentsError::Gzip(_))
    ));
    assert!(matches!(
        decode_contents("data:,%zz", None),
        Err(ContentsError::DataUrl(_))
    ));
}

#[test]
fn hashes() {
    let sha512 = "sha512-9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca72323c3d99ba5c11d7c7acc6e14b8c5da0c4663475c2e5c3adef46f73bcdec043";
    assert_eq!(check_hash(sha512, b"hello"), Ok(()));
    let sha256 = "sha256-2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
    assert_eq!(check_hash(sha256, b"hello"), Ok(()));
    assert!(matches!(
        check_hash(sha256, b"other"),
        Err(HashError::Mismatch { .. })
    ));
    assert_eq!(
        check_hash("sha512", b"").unwrap_err().to_string(),
        "malformed hash specifier"
    );
    assert_eq!(
        check_hash("md5-abc", b"").unwrap_err().to_string(),
        "unrecognized hash function"
    );
    assert_eq!(
        check_hash("sha256-abc", b"").unwrap_err().to_string(),
        "incorrect size for hash sum"
    );
}

#[test]
fn source_urls() {
    let ok = |u: &str, m: u64| validate_source_url(u, m);
    assert_eq!(ok("", 0), Ok(()));
    assert_eq!(ok("https://example.com/a?b=c#d", 0), Ok(()));
    assert_eq!(ok("tftp://host/x", 0), Ok(()));
    assert_eq!(ok("http://[::1]:8080/x", 0), Ok(()));
    assert_eq!(ok("HTTP://example.com", 0), Ok(()));
    assert_eq!(
        ok("http://[::1", 5).unwrap_err().to_string(),
        "unable to parse url"
    );
    assert_eq!(ok("http://host:port/", 5), Err(UrlError::Unparsable));
    assert_eq!(ok("http://a b/", 5), Err(UrlError::Unparsable));
    assert_eq!(ok("http://h/%zz", 5), Err(UrlError::Unparsable));
    assert_eq!(ok("http://h/\n", 5), Err(UrlError::Unparsable));
    assert_eq!(ok(":foo", 5), Err(UrlError::Unparsable));
    assert_eq!(
        ok("a:b/c", 5).unwrap_err().to_string(),
        "invalid url scheme"
    );
    assert_eq!(ok("/relative", 5), Err(UrlError::Scheme));
    assert_eq!(ok("ftp://h/x", 5), Err(UrlError::Scheme));
    assert_eq!(ok("gs://bucket/x", 1), Err(UrlError::Scheme));
    assert_eq!(ok("gs://bucket/x", 2), Ok(()));
    assert_eq!(
        ok("s3://b/k?versionId=", 0).unwrap_err().to_string(),
        "invalid S3 object VersionId"
    );
    assert_eq!(ok("s3://b/k?versionId=1", 0), Ok(()));
    let arn = "arn:aws:s3:us-east-1:123456789012:accesspoint/test/object/key";
    assert_eq!(ok(arn, 3), Err(UrlError::Scheme));
    assert_eq!(ok(arn, 4), Ok(()));
    assert_eq!(ok("arn:aws:s3:::bucket/key", 4), Ok(()));
    assert_eq!(
        ok("arn:aws:s3:::bucket", 4).unwrap_err().to_string(),
        "invalid S3 ARN format"
    );
    assert_eq!(ok("arn:aws:iam:::bucket/key", 4), Err(UrlError::S3Arn));
    assert_eq!(
        ok("arn:aws:s3:us-east-1:1:accesspoint/x", 4),
        Err(UrlError::S3Arn)
    );
    assert_eq!(
        ok("data:,%zz%", 5).unwrap_err().to_string(),
        "rfc2396: invalid char 0x25 in unescape sequence"
    );
    assert_eq!(ok("data:,hello", 0), Ok(()));
}

proptest! {
    #[test]
    fn encodings_round_trip(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        prop_assert_eq!(parse(&encode_percent(&bytes)).unwrap().data, bytes.clone());
        prop_assert_eq!(parse(&encode_base64(&bytes)).unwrap().data, bytes.clone());
        let (s, c) = encode_shortest(&bytes);
        prop_assert_eq!(decode_contents(&s, c).unwrap(), bytes);
    }

    #[test]
    fn base64_newlines_are_ignored(bytes in prop::collection::vec(any::<u8>(), 0..100), at in 0usize..200) {
        let enc = encode_base64(&bytes);
        let body = &enc["data:;base64,".len()..];
        let at = at.min(body.len());
        let with_nl = format!("data:;base64,{}\n{}", &body[..at], &body[at..]);
        prop_assert_eq!(parse(&with_nl).unwrap().data, bytes);
    }
}
