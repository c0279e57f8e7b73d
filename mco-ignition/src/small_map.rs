//! Key lookup in the small JSON objects a config is made of.
//!
//! A config's objects hold a handful of keys, and `serde_json`'s map hashes the key with
//! SipHash on every lookup; comparing the few keys directly is several times cheaper. Larger
//! objects still use the map's own lookup.

use serde_json::{Map, Value};

/// Up to this many entries, a lookup scans the entries.
const SCAN_MAX: usize = 16;

/// Whether two keys are equal, comparing the first and last bytes before the rest: keys of a
/// config are short and mostly differ there, so most comparisons end without a `memcmp` call.
#[inline(always)]
pub fn key_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.first() == b.first() && a.last() == b.last() && a == b
}

/// Lookup by exact key, scanning small objects.
pub trait SmallGet {
    /// The value at `key`, if present.
    fn small_get(&self, key: &str) -> Option<&Value>;
}

impl SmallGet for Map<String, Value> {
    #[inline]
    fn small_get(&self, key: &str) -> Option<&Value> {
        if self.len() <= SCAN_MAX {
            self.iter().find(|(k, _)| key_eq(k, key)).map(|(_, v)| v)
        } else {
            self.get(key)
        }
    }
}

/// Mutable lookup by exact key, scanning small objects as [`SmallGet::small_get`] does.
#[inline]
pub fn small_get_mut<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Value> {
    if m.len() <= SCAN_MAX {
        m.iter_mut().find(|(k, _)| key_eq(k, key)).map(|(_, v)| v)
    } else {
        m.get_mut(key)
    }
}

impl SmallGet for Value {
    #[inline]
    fn small_get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.small_get(key),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn agrees_with_map_lookup() {
        let small = json!({"a": 1, "b": 2, "ab": 3});
        let mut big = Map::new();
        for i in 0..40 {
            big.insert(format!("k{i}"), Value::from(i));
        }
        let big = Value::Object(big);
        for v in [&small, &big] {
            for k in ["a", "b", "ab", "c", "", "k0", "k39", "k40"] {
                assert_eq!(v.small_get(k), v.get(k), "{k}");
            }
        }
        assert_eq!(json!([1]).small_get("a"), None);
    }
}
