//! Up-translation between 3.x versions (3.N -> 3.N+1, chained).
//!
//! The schema only grows between 3.0 and 3.5, so a step is a copy with the new version. The
//! shapes that change are kept as upstream writes them: 3.0's CA `source` and 3.0-3.2's raid
//! `level`, link `target` and custom clevis `config`/`pin` are plain strings there, so they are
//! always present (possibly empty) after the step that makes them optional.

use serde_json::Value;

use super::down::fill_plain_strings;
use super::value::{for_each_in, set_version};
use crate::SpecVersion;

/// Translates a normalised 3.x config from `from` to `to` (both 3.x, `from <= to`).
///
/// Other combinations return the config unchanged, with only the version rewritten when `to`
/// is 3.x.
pub fn up(config: &Value, from: SpecVersion, to: SpecVersion) -> Value {
    let mut cur = config.clone();
    if !from.is_v3() || !to.is_v3() {
        return cur;
    }
    if from == SpecVersion::V3_0 && to > from {
        // 3.0 CA references carry a plain (always written) source.
        for_each_in(
            &mut cur,
            &["ignition", "security", "tls", "certificateAuthorities"],
            |ca| {
                if let Value::Object(m) = ca {
                    m.entry("source")
                        .or_insert_with(|| Value::String(String::new()));
                }
            },
        );
    }
    if from <= SpecVersion::V3_2 && to >= SpecVersion::V3_3 {
        fill_plain_strings(&mut cur);
    }
    if from != to {
        set_version(&mut cur, to.as_str());
    }
    cur
}
