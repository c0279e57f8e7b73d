//! Certificates as Go's `crypto/x509` and `encoding/pem` read them, for what upstream's
//! template controller records of a ControllerConfig's CA bundles: each certificate's subject
//! and issuer as `pkix.Name.String()` prints them, and its validity.
//!
//! - **PEM** ([`pem_blocks`]): blocks are found as `pem.Decode` finds them, one after the other:
//!   text before a block is skipped, a `-----BEGIN X-----` line starts one and the matching
//!   `-----END X-----` line ends it; a block whose body is not base64 is passed over and the
//!   search goes on after its BEGIN line. Header lines (`Key: value`) are not read: CA
//!   bundles have none.
//! - **Names** ([`name_string`]): attribute values in the six string types Go reads
//!   (PrintableString, UTF8String, IA5String, T61String read as Latin-1, BMPString,
//!   NumericString) and Go's order: other attributes first as they come, then country,
//!   province, locality, street, postal code, organization, organizational unit (each set in
//!   one RDN), the last common name and the last serial number; printed last to first, RDNs
//!   joined by `,`, values of one RDN by `+`, the well-known types by their short names, others
//!   by their dotted OID (`=#` and the hex of the value's DER when it is no string), `,+"\<>;`
//!   escaped, and a space at either end or a `#` at the start.

use x509_parser::prelude::{FromDer, X509Certificate};

/// One certificate as upstream records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateFacts {
    /// `pkix.Name.String()` of the subject.
    pub subject: String,
    /// `pkix.Name.String()` of the issuer.
    pub issuer: String,
    /// Not valid before, Unix seconds.
    pub not_before: i64,
    /// Not valid after, Unix seconds.
    pub not_after: i64,
}

/// The DER bodies of the PEM blocks in `text`, in order.
pub fn pem_blocks(text: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let Some(start) = find_begin(rest) else {
            return out;
        };
        let after_begin = &rest[start..];
        let Some(line_end) = after_begin.iter().position(|b| *b == b'\n') else {
            return out;
        };
        let begin_line = trim_cr(&after_begin[..line_end]);
        // `-----BEGIN TYPE-----`.
        let Some(kind) = begin_line
            .strip_prefix(b"-----BEGIN ")
            .and_then(|k| k.strip_suffix(b"-----"))
        else {
            rest = &after_begin[11..];
            continue;
        };
        let body_start = &after_begin[line_end + 1..];
        let mut end_marker = b"\n-----END ".to_vec();
        end_marker.extend_from_slice(kind);
        end_marker.extend_from_slice(b"-----");
        let search = [b"\n".as_slice(), body_start].concat();
        let Some(end) = find(&search, &end_marker) else {
            rest = &after_begin[11..];
            continue;
        };
        let body: Vec<u8> = search[..end]
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        match crate::gocompat::base64::std_decode(&String::from_utf8_lossy(&body)) {
            Some(der) if !body.contains(&b':') => {
                out.push(der);
                let consumed = end + end_marker.len() - 1;
                rest = &body_start[consumed.min(body_start.len())..];
            }
            _ => rest = &after_begin[11..],
        }
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Where the next `-----BEGIN ` starts at the start of a line.
fn find_begin(text: &[u8]) -> Option<usize> {
    let marker = b"-----BEGIN ";
    let mut from = 0;
    while let Some(i) = find(&text[from..], marker) {
        let at = from + i;
        if at == 0 || text[at - 1] == b'\n' {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Reads one DER certificate; `None` when Go's `x509.ParseCertificate` would refuse it (as
/// far as the parser here can tell) or a name holds a string Go does not read.
pub fn certificate(der: &[u8]) -> Option<CertificateFacts> {
    let (rest, cert) = X509Certificate::from_der(der).ok()?;
    if !rest.is_empty() {
        return None;
    }
    let tbs = &cert.tbs_certificate;
    Some(CertificateFacts {
        subject: name_string(&rdns_of(&tbs.subject)?),
        issuer: name_string(&rdns_of(&tbs.issuer)?),
        not_before: tbs.validity.not_before.timestamp(),
        not_after: tbs.validity.not_after.timestamp(),
    })
}

/// An attribute's value as Go holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeValue {
    /// One of the string types Go reads into a `string`.
    Str(String),
    /// Anything else: the value's DER (tag, length and content).
    Der(Vec<u8>),
}

/// One attribute: its type (dotted OID) and value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// The type, as `2.5.4.3`.
    pub oid: String,
    /// The value.
    pub value: AttributeValue,
}

fn rdns_of(name: &x509_parser::x509::X509Name) -> Option<Vec<Vec<Attribute>>> {
    let mut out = Vec::new();
    for rdn in name.iter() {
        let mut set = Vec::new();
        for atv in rdn.iter() {
            let any = atv.attr_value();
            let tag = any.header.tag().0;
            let value = match asn1_string(tag, any.data) {
                Some(Ok(s)) => AttributeValue::Str(s),
                Some(Err(())) => return None,
                None => AttributeValue::Der(der_element(&any.header, any.data)),
            };
            set.push(Attribute {
                oid: atv.attr_type().to_id_string(),
                value,
            });
        }
        out.push(set);
    }
    Some(out)
}

/// The DER of an element from its header and content.
fn der_element(header: &x509_parser::der_parser::asn1_rs::Header, data: &[u8]) -> Vec<u8> {
    let class = header.class() as u8;
    let constructed = u8::from(header.is_constructed());
    let tag = header.tag().0;
    let mut out = Vec::new();
    if tag < 31 {
        out.push((class << 6) | (constructed << 5) | tag as u8);
    } else {
        out.push((class << 6) | (constructed << 5) | 0x1f);
        let mut groups = Vec::new();
        let mut t = tag;
        loop {
            groups.push((t & 0x7f) as u8);
            t >>= 7;
            if t == 0 {
                break;
            }
        }
        for (i, g) in groups.iter().rev().enumerate() {
            out.push(if i + 1 < groups.len() { g | 0x80 } else { *g });
        }
    }
    let len = data.len();
    if len < 128 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(data);
    out
}

/// Go's `parseASN1String`: `None` for a tag that is no string type Go reads, `Err` for a
/// string type whose content Go refuses (the certificate does not parse).
pub fn asn1_string(tag: u32, value: &[u8]) -> Option<Result<String, ()>> {
    const UTF8: u32 = 12;
    const NUMERIC: u32 = 18;
    const PRINTABLE: u32 = 19;
    const T61: u32 = 20;
    const IA5: u32 = 22;
    const BMP: u32 = 30;
    Some(match tag {
        T61 => Ok(value.iter().map(|b| char::from(*b)).collect()),
        PRINTABLE => {
            if value.iter().all(|b| is_printable(*b)) {
                Ok(String::from_utf8_lossy(value).into_owned())
            } else {
                Err(())
            }
        }
        UTF8 => std::str::from_utf8(value)
            .map(str::to_string)
            .map_err(|_| ()),
        BMP => bmp_string(value),
        IA5 => match std::str::from_utf8(value) {
            Ok(s) if s.is_ascii() => Ok(s.to_string()),
            // Go converts the bytes to a string and checks its runes: bytes that are no UTF-8
            // are U+FFFD, above ASCII, refused too.
            _ => Err(()),
        },
        NUMERIC => {
            if value.iter().all(|b| b.is_ascii_digit() || *b == b' ') {
                Ok(String::from_utf8_lossy(value).into_owned())
            } else {
                Err(())
            }
        }
        _ => return None,
    })
}

fn is_printable(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || (b'\''..=b')').contains(&b)
        || (b'+'..=b'/').contains(&b)
        || matches!(b, b' ' | b':' | b'=' | b'?' | b'*' | b'&')
}

fn bmp_string(value: &[u8]) -> Result<String, ()> {
    if !value.len().is_multiple_of(2) {
        return Err(());
    }
    let value = match value {
        [head @ .., 0, 0] => head,
        v => v,
    };
    let mut units = Vec::with_capacity(value.len() / 2);
    for pair in value.chunks(2) {
        let point = u16::from(pair[0]) << 8 | u16::from(pair[1]);
        if point == 0xfffe || point == 0xffff || (0xfdd0..=0xfdef).contains(&point) {
            return Err(());
        }
        if (0xd800..=0xdfff).contains(&point) {
            return Err(());
        }
        units.push(point);
    }
    Ok(String::from_utf16_lossy(&units))
}

/// The short names Go prints for these types.
fn short_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.6" => "C",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.3" => "CN",
        "2.5.4.5" => "SERIALNUMBER",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "STREET",
        "2.5.4.17" => "POSTALCODE",
        _ => return None,
    })
}

/// `pkix.Name.String()` of a name read from a certificate (`FillFromRDNSequence`, then
/// `String`).
pub fn name_string(rdns: &[Vec<Attribute>]) -> String {
    // The named fields, filled as Go fills them (only string values).
    let mut fields: [Vec<String>; 7] = Default::default();
    let order = [
        "2.5.4.6", "2.5.4.8", "2.5.4.7", "2.5.4.9", "2.5.4.17", "2.5.4.10", "2.5.4.11",
    ];
    let (mut cn, mut serial) = (String::new(), String::new());
    let mut seq: Vec<Vec<Attribute>> = Vec::new();
    for atv in rdns.iter().flatten() {
        if short_name(&atv.oid).is_some() {
            if let AttributeValue::Str(v) = &atv.value {
                match atv.oid.as_str() {
                    "2.5.4.3" => cn = v.clone(),
                    "2.5.4.5" => serial = v.clone(),
                    oid => {
                        if let Some(i) = order.iter().position(|o| *o == oid) {
                            fields[i].push(v.clone());
                        }
                    }
                }
            }
            // A well-known type is printed from the fields alone.
            continue;
        }
        seq.push(vec![atv.clone()]);
    }
    for (oid, values) in order.iter().zip(fields) {
        if !values.is_empty() {
            seq.push(
                values
                    .into_iter()
                    .map(|v| Attribute {
                        oid: (*oid).to_string(),
                        value: AttributeValue::Str(v),
                    })
                    .collect(),
            );
        }
    }
    for (oid, v) in [("2.5.4.3", cn), ("2.5.4.5", serial)] {
        if !v.is_empty() {
            seq.push(vec![Attribute {
                oid: oid.to_string(),
                value: AttributeValue::Str(v),
            }]);
        }
    }
    rdn_sequence_string(&seq)
}

/// `RDNSequence.String()`.
fn rdn_sequence_string(seq: &[Vec<Attribute>]) -> String {
    let mut out = String::new();
    for (i, rdn) in seq.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, atv) in rdn.iter().enumerate() {
            if j > 0 {
                out.push('+');
            }
            let name = short_name(&atv.oid);
            let value = match (&atv.value, name) {
                (AttributeValue::Der(der), None) => {
                    out.push_str(&atv.oid);
                    out.push_str("=#");
                    out.push_str(&hex::encode(der));
                    continue;
                }
                (AttributeValue::Str(s), _) => s.clone(),
                // A well-known type never holds a non-string here.
                (AttributeValue::Der(der), Some(_)) => hex::encode(der),
            };
            out.push_str(name.unwrap_or(&atv.oid));
            out.push('=');
            let last = value.len().saturating_sub(1);
            for (k, c) in value.char_indices() {
                let escape = match c {
                    ',' | '+' | '"' | '\\' | '<' | '>' | ';' => true,
                    ' ' => k == 0 || k == last,
                    '#' => k == 0,
                    _ => false,
                };
                if escape {
                    out.push('\\');
                }
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(oid: &str, v: &str) -> Attribute {
        Attribute {
            oid: oid.into(),
            value: AttributeValue::Str(v.into()),
        }
    }

    #[test]
    fn names_print_last_to_first_with_go_s_short_names() {
        let rdns = vec![
            vec![s("2.5.4.6", "US")],
            vec![s("2.5.4.10", "Acme, Inc.")],
            vec![s("2.5.4.11", "ops"), s("2.5.4.11", "dev")],
            vec![s("2.5.4.3", " root #1 ")],
            vec![s("1.2.840.113549.1.9.1", "ca@example.com")],
        ];
        assert_eq!(
            name_string(&rdns),
            "CN=\\ root #1\\ ,OU=ops+OU=dev,O=Acme\\, Inc.,C=US,1.2.840.113549.1.9.1=ca@example.com"
        );
        // The last CN wins; a leading # is escaped; a non-string value of another type is hex.
        let rdns = vec![
            vec![s("2.5.4.3", "first")],
            vec![s("2.5.4.3", "#second")],
            vec![Attribute {
                oid: "1.2.3.4".into(),
                value: AttributeValue::Der(vec![2, 1, 5]),
            }],
        ];
        assert_eq!(name_string(&rdns), "CN=\\#second,1.2.3.4=#020105");
    }

    #[test]
    fn string_types_as_go_reads_them() {
        assert_eq!(asn1_string(20, &[0x41, 0xe9]), Some(Ok("Aé".into())));
        assert_eq!(asn1_string(19, b"a_b"), Some(Err(())));
        assert_eq!(
            asn1_string(19, b"*.example.com & co"),
            Some(Ok("*.example.com & co".into()))
        );
        assert_eq!(
            asn1_string(30, &[0, 0x41, 0, 0x42, 0, 0]),
            Some(Ok("AB".into()))
        );
        assert_eq!(asn1_string(30, &[0xd8, 0x00]), Some(Err(())));
        assert_eq!(asn1_string(22, "é".as_bytes()), Some(Err(())));
        assert_eq!(asn1_string(18, b"12 3"), Some(Ok("12 3".into())));
        assert_eq!(asn1_string(2, &[1]), None);
    }

    #[test]
    fn pem_blocks_are_found_as_go_finds_them() {
        let text = b"junk\n-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\nmore\n-----BEGIN X-----\n!!!\n-----END X-----\n-----BEGIN CERTIFICATE-----\r\nBAUG\r\n-----END CERTIFICATE-----\r\n";
        assert_eq!(pem_blocks(text), vec![vec![1, 2, 3], vec![4, 5, 6]]);
        assert!(pem_blocks(b"no pem here").is_empty());
        assert!(pem_blocks(b"-----BEGIN A-----\nAQID\n-----END B-----\n").is_empty());
    }
}
