//! The `openshift` variant's stable spec versions (4.8.0 to 4.22.0) and what follows from one.

/// A stable `openshift` spec version, `4.<minor>.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SpecVersion {
    minor: u8,
}

impl SpecVersion {
    /// The oldest and newest minor versions this translator knows.
    pub const MINORS: std::ops::RangeInclusive<u8> = 8..=22;

    /// `4.N.0` for a known N.
    pub fn parse(text: &str) -> Option<SpecVersion> {
        let rest = text.strip_prefix("4.")?.strip_suffix(".0")?;
        if rest.starts_with('0') && rest.len() > 1 {
            return None;
        }
        let minor: u8 = rest.parse().ok()?;
        Self::MINORS
            .contains(&minor)
            .then_some(SpecVersion { minor })
    }

    /// `4.<minor>.0`, for a known minor.
    pub fn from_minor(minor: u8) -> Option<SpecVersion> {
        Self::MINORS
            .contains(&minor)
            .then_some(SpecVersion { minor })
    }

    /// The minor version.
    pub fn minor(self) -> u8 {
        self.minor
    }

    /// The Ignition spec version the MachineConfig holds.
    pub fn ignition_version(self) -> &'static str {
        match self.minor {
            ..=13 => "3.2.0",
            14..=18 => "3.4.0",
            _ => "3.5.0",
        }
    }

    /// Whether contents are gzipped when that is shorter (not before 4.10).
    pub fn auto_compression(self) -> bool {
        self.minor >= 10
    }

    /// Whether `contents.compression` may be set (4.10 on).
    pub fn compression_allowed(self) -> bool {
        self.minor >= 10
    }

    /// Whether `password_hash` may be set for `core` (4.13 on).
    pub fn password_hash_allowed(self) -> bool {
        self.minor >= 13
    }

    /// Whether top-level `kernel_arguments` is refused in favour of `openshift.kernel_arguments`.
    pub fn refuses_ignition_kargs(self) -> bool {
        self.minor >= 14
    }

    /// The Go package of the fcos schema the variant embeds (boot device, GRUB), as yaml.v3's
    /// type errors name it.
    pub fn fcos_package(self) -> &'static str {
        match self.minor {
            ..=13 => "v1_3",
            14..=18 => "v1_5",
            _ => "v1_6",
        }
    }

    /// The Go package of the base schema, as yaml.v3's type errors name it.
    pub fn base_package(self) -> &'static str {
        match self.minor {
            ..=13 => "v0_3",
            14..=18 => "v0_5",
            _ => "v0_6",
        }
    }
}
