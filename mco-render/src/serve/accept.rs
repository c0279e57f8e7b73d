//! Accept-header spec version negotiation, as the upstream machine-config-server does it.
//!
//! The header is split on `,` into media ranges and each range on `;` into parameters (no quoting
//! rules: a `,` inside a quoted parameter splits too). Ranges without `/` are ignored. Only the
//! first `version=` and `q=` parameters that parse are kept: `version` as a strict three-part
//! semantic version, `q` as a Go 32-bit float (default 1). Ranges are stably sorted by descending
//! `q`; the first one whose subtype is `vnd.coreos.ignition+json` and that has a version decides:
//! a 2.x version from 2.2 on gives 2.2.0; a supported major.minor gives that version; a 3.x
//! version newer than 3.5 gives 3.5.0; anything else is an error. No usable range: 2.2.0.
//!
//! HTTP servers pass the first `Accept` header value (upstream reads `Header.Get`).

use crate::gocompat::{semver as go_semver, sort as go_sort, strconv as go_float};

use crate::release::{AcceptRule, Profile};
use mco_ignition::SpecVersion;

/// The media subtype Ignition requests configs with.
const IGNITION_SUBTYPE: &str = "vnd.coreos.ignition+json";

/// The header asks for an Ignition version the server cannot serve (HTTP 400 upstream).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported Ignition version in Accept header: {header}")]
pub struct AcceptError {
    /// The whole Accept header as received.
    pub header: String,
}

/// One parsed media range.
#[derive(Debug, Clone)]
struct MediaRange {
    subtype: String,
    version: Option<go_semver::Version>,
    q: f32,
}

/// Parses the media ranges that have a `/`, in header order.
fn parse_ranges(header: &str) -> Vec<MediaRange> {
    let mut out = Vec::new();
    for value in header.split(',') {
        let mut parts = value.trim().split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let Some((_, subtype)) = media.split_once('/') else {
            continue;
        };
        let mut version = None;
        let mut q = None;
        for ext in parts {
            let Some((key, val)) = ext.split_once('=') else {
                continue;
            };
            if key == "version" {
                if version.is_none() {
                    version = go_semver::Version::parse(val);
                }
            } else if key == "q" && q.is_none() {
                q = go_float::parse_f32(val);
            }
        }
        out.push(MediaRange {
            subtype: subtype.to_string(),
            version,
            q: q.unwrap_or(1.0),
        });
    }
    out
}

/// Picks the spec version to serve for an `Accept` header (absent is the same as empty), as
/// the newest release does.
pub fn negotiate(accept: Option<&str>) -> Result<SpecVersion, AcceptError> {
    negotiate_as(accept, Profile::default().accept)
}

/// [`negotiate`] by a release's rule.
pub fn negotiate_as(accept: Option<&str>, rule: AcceptRule) -> Result<SpecVersion, AcceptError> {
    let header = accept.unwrap_or("");
    let mut ranges = parse_ranges(header);
    go_sort::stable_sort_by(&mut ranges, |a, b| a.q > b.q);
    let versions = ranges
        .iter()
        .filter_map(|r| r.version.as_ref().filter(|_| r.subtype == IGNITION_SUBTYPE));
    let unsupported = || AcceptError {
        header: header.to_string(),
    };
    match rule {
        AcceptRule::Bands { newest } => {
            let mut refused = false;
            for v in versions {
                match band(v, newest) {
                    Some(found) => return Ok(found),
                    None => refused = true,
                }
            }
            if refused {
                Err(unsupported())
            } else {
                Ok(SpecVersion::V2_2)
            }
        }
        AcceptRule::FirstDecides {
            newer_minor_is_newest,
        } => match versions.into_iter().next() {
            Some(v) => first_decides(v, newer_minor_is_newest).ok_or_else(unsupported),
            None => Ok(SpecVersion::V2_2),
        },
    }
}

/// The band of versions `v` falls in, releases until 4.19: `[newest, 4.0.0)` is the newest,
/// each older 3.x minor from 3.1 its own `[3.y.0, 3.y+1.0)`, `[2.2.0, 3.0.0)` is 2.2; 3.0 and
/// what lies outside are refused. Pre-releases sort below their release (`3.4.0-rc.1` is 3.3).
fn band(v: &go_semver::Version, newest: SpecVersion) -> Option<SpecVersion> {
    let at_least = |minor: u64| v.at_least(3, minor as i64, 0);
    if at_least(newest.minor()) && !v.at_least(4, 0, 0) {
        return Some(newest);
    }
    for older in SpecVersion::ALL.iter().rev() {
        let m = older.minor();
        if older.is_v3() && m >= 1 && m < newest.minor() && at_least(m) && !at_least(m + 1) {
            return Some(*older);
        }
    }
    (v.at_least(2, 2, 0) && !v.at_least(3, 0, 0)).then_some(SpecVersion::V2_2)
}

/// The first Ignition range with a version decides, releases from 4.20: 2.x from 2.2.0 is 2.2,
/// else its major.minor if served (patch and pre-release ignored), else (from 4.21) a 3.x
/// newer than the newest is the newest.
fn first_decides(v: &go_semver::Version, newer_minor_is_newest: bool) -> Option<SpecVersion> {
    // Any 2.x from 2.2.0 on (pre-releases of 2.2.0 excluded) is served as 2.2.
    let (major, minor) = if v.major == 2 && v.at_least(2, 2, 0) {
        (2, 2)
    } else {
        (v.major, v.minor)
    };
    if let Some(found) = u64::try_from(major)
        .ok()
        .zip(u64::try_from(minor).ok())
        .and_then(|(ma, mi)| SpecVersion::from_major_minor(ma, mi))
    {
        return Some(found);
    }
    let latest = SpecVersion::LATEST;
    (newer_minor_is_newest && major == 3 && minor > latest.minor() as i64).then_some(latest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(h: &str) -> SpecVersion {
        negotiate(Some(h)).unwrap()
    }

    #[test]
    fn defaults_to_2_2() {
        assert_eq!(negotiate(None), Ok(SpecVersion::V2_2));
        assert_eq!(ok(""), SpecVersion::V2_2);
        assert_eq!(ok("*/*"), SpecVersion::V2_2);
        assert_eq!(
            ok("application/vnd.coreos.ignition+json"),
            SpecVersion::V2_2
        );
    }

    #[test]
    fn picks_versions() {
        let h = |v: &str| format!("application/vnd.coreos.ignition+json;version={v}, */*;q=0.1");
        assert_eq!(ok(&h("3.0.0")), SpecVersion::V3_0);
        assert_eq!(ok(&h("3.4.2")), SpecVersion::V3_4);
        assert_eq!(ok(&h("3.9.0")), SpecVersion::V3_5);
        assert_eq!(ok(&h("2.4.0")), SpecVersion::V2_2);
        assert_eq!(ok(&h("3.2")), SpecVersion::V2_2);
        assert_eq!(
            negotiate(Some(&h("2.1.0"))).unwrap_err().to_string(),
            format!(
                "unsupported Ignition version in Accept header: {}",
                h("2.1.0")
            )
        );
        assert!(negotiate(Some(&h("4.0.0"))).is_err());
    }

    #[test]
    fn q_orders_ranges_stably() {
        let h = "application/vnd.coreos.ignition+json;version=3.1.0;q=0.5, \
                 application/vnd.coreos.ignition+json;version=3.3.0;q=0.9";
        assert_eq!(ok(h), SpecVersion::V3_3);
        let h = "application/vnd.coreos.ignition+json;version=3.1.0;q=0.5, \
                 application/vnd.coreos.ignition+json;version=3.3.0;q=0.5";
        assert_eq!(ok(h), SpecVersion::V3_1);
        // A bad q keeps the default 1.
        let h = "application/vnd.coreos.ignition+json;version=3.1.0;q=x, \
                 application/vnd.coreos.ignition+json;version=3.3.0;q=0.9";
        assert_eq!(ok(h), SpecVersion::V3_1);
    }
}
