//! Ignition spec versions.

use std::fmt;

/// A spec version that this crate models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SpecVersion {
    /// Spec 2.2.0.
    V2_2,
    /// Spec 3.0.0.
    V3_0,
    /// Spec 3.1.0.
    V3_1,
    /// Spec 3.2.0.
    V3_2,
    /// Spec 3.3.0.
    V3_3,
    /// Spec 3.4.0.
    V3_4,
    /// Spec 3.5.0.
    V3_5,
}

impl SpecVersion {
    /// All versions, oldest first.
    pub const ALL: [SpecVersion; 7] = [
        SpecVersion::V2_2,
        SpecVersion::V3_0,
        SpecVersion::V3_1,
        SpecVersion::V3_2,
        SpecVersion::V3_3,
        SpecVersion::V3_4,
        SpecVersion::V3_5,
    ];

    /// The newest 3.x version, the one rendered configs use.
    pub const LATEST: SpecVersion = SpecVersion::V3_5;

    /// The major version (2 or 3).
    pub fn major(self) -> u64 {
        match self {
            SpecVersion::V2_2 => 2,
            _ => 3,
        }
    }

    /// The minor version.
    pub fn minor(self) -> u64 {
        match self {
            SpecVersion::V2_2 => 2,
            SpecVersion::V3_0 => 0,
            SpecVersion::V3_1 => 1,
            SpecVersion::V3_2 => 2,
            SpecVersion::V3_3 => 3,
            SpecVersion::V3_4 => 4,
            SpecVersion::V3_5 => 5,
        }
    }

    /// The version string as it appears in `ignition.version`.
    pub fn as_str(self) -> &'static str {
        match self {
            SpecVersion::V2_2 => "2.2.0",
            SpecVersion::V3_0 => "3.0.0",
            SpecVersion::V3_1 => "3.1.0",
            SpecVersion::V3_2 => "3.2.0",
            SpecVersion::V3_3 => "3.3.0",
            SpecVersion::V3_4 => "3.4.0",
            SpecVersion::V3_5 => "3.5.0",
        }
    }

    /// The version for a major and minor number, if modelled.
    pub fn from_major_minor(major: u64, minor: u64) -> Option<SpecVersion> {
        SpecVersion::ALL
            .into_iter()
            .find(|v| v.major() == major && v.minor() == minor)
    }

    /// Parses an exact, modelled version string (`3.2.0`); pre-release and build tags are refused.
    pub fn parse(s: &str) -> Option<SpecVersion> {
        let v = semver::Version::parse(s).ok()?;
        if !v.pre.is_empty() || !v.build.is_empty() || v.patch != 0 {
            return None;
        }
        SpecVersion::from_major_minor(v.major, v.minor)
    }

    /// The next newer 3.x version, if any.
    pub fn next(self) -> Option<SpecVersion> {
        match self {
            SpecVersion::V2_2 => None,
            SpecVersion::V3_0 => Some(SpecVersion::V3_1),
            SpecVersion::V3_1 => Some(SpecVersion::V3_2),
            SpecVersion::V3_2 => Some(SpecVersion::V3_3),
            SpecVersion::V3_3 => Some(SpecVersion::V3_4),
            SpecVersion::V3_4 => Some(SpecVersion::V3_5),
            SpecVersion::V3_5 => None,
        }
    }

    /// True for 3.x versions.
    pub fn is_v3(self) -> bool {
        self.major() == 3
    }
}

impl fmt::Display for SpecVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_exact_versions_only() {
        assert_eq!(SpecVersion::parse("3.2.0"), Some(SpecVersion::V3_2));
        assert_eq!(SpecVersion::parse("2.2.0"), Some(SpecVersion::V2_2));
        assert_eq!(SpecVersion::parse("3.2"), None);
        assert_eq!(SpecVersion::parse("3.6.0"), None);
        assert_eq!(SpecVersion::parse("3.5.0-experimental"), None);
        assert_eq!(SpecVersion::parse("2.1.0"), None);
    }

    #[test]
    fn round_trips_strings() {
        for v in SpecVersion::ALL {
            assert_eq!(SpecVersion::parse(v.as_str()), Some(v));
        }
    }
}
