//! Versions as the `coreos/go-semver` package parses them: `MAJOR.MINOR.PATCH[-PRE][+META]`.
//!
//! `+` is split off first, then `-`; the rest must have exactly three dot-separated base-10
//! integers (leading zeros allowed, 64-bit range). Pre-release and metadata, when not empty, are
//! dot-separated identifiers of `[0-9A-Za-z-]`.

/// A parsed version; metadata is validated and dropped (it never affects comparisons).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    pub major: i64,
    pub minor: i64,
    pub patch: i64,
    /// Empty when there is no pre-release.
    pub pre: String,
}

fn valid_identifier(id: &str) -> bool {
    id.is_empty()
        || id.split('.').all(|part| {
            !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Go's `strconv.ParseInt(s, 10, 64)`: optional sign, decimal digits, in range.
fn parse_i64(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl Version {
    /// Parses a version, or `None` where go-semver reports an error.
    pub fn parse(s: &str) -> Option<Version> {
        let (rest, meta) = s.split_once('+').unwrap_or((s, ""));
        let (core, pre) = rest.split_once('-').unwrap_or((rest, ""));
        let mut parts = core.splitn(3, '.');
        let (major, minor, patch) = (parts.next()?, parts.next()?, parts.next()?);
        if !valid_identifier(pre) || !valid_identifier(meta) {
            return None;
        }
        Some(Version {
            major: parse_i64(major)?,
            minor: parse_i64(minor)?,
            patch: parse_i64(patch)?,
            pre: pre.to_string(),
        })
    }

    /// Whether this version is at least `major.minor.patch` (a release, so a pre-release of
    /// that exact version is lower).
    pub fn at_least(&self, major: i64, minor: i64, patch: i64) -> bool {
        match (self.major, self.minor, self.patch).cmp(&(major, minor, patch)) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => self.pre.is_empty(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_go_semver() {
        let v = Version::parse("03.02.00-rc.1+build.7").unwrap();
        assert_eq!(
            (v.major, v.minor, v.patch, v.pre.as_str()),
            (3, 2, 0, "rc.1")
        );
        assert_eq!(Version::parse("3.2.0-").unwrap().pre, "");
        assert!(Version::parse("3.2.0+").is_some());
        for bad in [
            "3.2",
            "3.2.0.1",
            "v3.2.0",
            "+3.2.0",
            "-3.2.0",
            "",
            "3.2.0-a..b",
            "3.2.0+_",
            "3.9223372036854775808.0",
            "３.２.０",
            "3. 2.0",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn compares_with_pre_release() {
        let v = |s| Version::parse(s).unwrap();
        assert!(v("2.2.0").at_least(2, 2, 0));
        assert!(!v("2.2.0-x").at_least(2, 2, 0));
        assert!(v("2.3.0-x").at_least(2, 2, 0));
        assert!(!v("2.1.9").at_least(2, 2, 0));
    }
}
