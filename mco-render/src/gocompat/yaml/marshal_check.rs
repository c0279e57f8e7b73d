//! Inputs that upstream cannot name.
//!
//! Upstream converts the spec's JSON to YAML by parsing the JSON with its
//! YAML library, whose reader rejects some characters that JSON encoding
//! leaves unescaped: DEL, the C1 controls other than NEL, and U+FFFE/U+FFFF.
//! A spec holding one of them in any string (key or value) fails to render
//! upstream with the error below instead of getting a name.

use serde_json::Value;

/// Why upstream cannot compute a rendered name for a spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// A string holds a character upstream's YAML reader refuses.
    #[error("error converting JSON to YAML: yaml: control characters are not allowed")]
    ControlCharacter,
}

/// Checks that upstream can marshal `spec` to YAML.
pub fn check_upstream_marshal(spec: &Value) -> Result<(), NameError> {
    match spec {
        Value::String(s) => check_str(s),
        Value::Array(items) => items.iter().try_for_each(check_upstream_marshal),
        Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            check_str(k)?;
            check_upstream_marshal(v)
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

/// Checks one string (key or value) of a spec.
pub(crate) fn check_str(s: &str) -> Result<(), NameError> {
    let b = s.as_bytes();
    // Almost every string holds none of the three lead bytes: find that out at memchr speed.
    if memchr::memchr3(0x7F, 0xC2, 0xEF, b).is_none() {
        return Ok(());
    }
    let bad = b.iter().enumerate().any(|(i, &c)| match c {
        0x7F => true,
        // U+0080..U+009F are C2 80..C2 9F; U+0085 (NEL) is allowed.
        0xC2 => b
            .get(i + 1)
            .is_some_and(|&n| (0x80..=0x9F).contains(&n) && n != 0x85),
        // U+FFFE and U+FFFF are EF BF BE and EF BF BF.
        0xEF => b.get(i + 1) == Some(&0xBF) && matches!(b.get(i + 2), Some(0xBE | 0xBF)),
        _ => false,
    });
    if bad {
        Err(NameError::ControlCharacter)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refused_characters() {
        for s in ["a\u{7f}", "\u{80}", "x\u{9f}", "\u{fffe}", "\u{ffff}"] {
            assert_eq!(
                check_upstream_marshal(&json!({ "k": s })),
                Err(NameError::ControlCharacter),
                "{s:?}"
            );
            assert_eq!(
                check_upstream_marshal(&json!({ s: 1 })),
                Err(NameError::ControlCharacter),
                "{s:?}"
            );
        }
    }

    #[test]
    fn accepted_characters() {
        for s in [
            "\t\n\r\u{1}",
            "\u{85}",
            "\u{a0}",
            "\u{feff}",
            "\u{fffd}",
            "\u{1F600}",
            "plain",
        ] {
            assert_eq!(
                check_upstream_marshal(&json!([{ "k": s }])),
                Ok(()),
                "{s:?}"
            );
        }
    }
}
