//! os-release as upstream's daemon reads it (the `ashcrow/osrelease` library under
//! `pkg/daemon/osrelease`): the first of `/etc/os-release` and `/usr/lib/os-release` that has
//! content, each line holding a `=` split at every `=` with the value the part between the
//! first and the second (so `A=b=c` reads `b`), one pair of double quotes trimmed from its
//! ends, the key as written, the last line for a key winning. Single quotes, escapes and
//! comments are not understood: a `#` line holding a `=` becomes a key of its own.
//!
//! What the daemon does with it: whether the host is a CoreOS variant (only there is the OS
//! part of a config applied and the booted image's version reported), and the `os` label of
//! `mcd_host_os_and_version` (the `ID`, upper-cased).

use std::collections::BTreeMap;

/// The fields of one os-release file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OsRelease {
    fields: BTreeMap<String, String>,
}

/// The path upstream reads first.
pub const ETC_OS_RELEASE: &str = "/etc/os-release";
/// The path upstream reads when the first has no content.
pub const LIB_OS_RELEASE: &str = "/usr/lib/os-release";

impl OsRelease {
    /// Reads the first of `texts` (in [`ETC_OS_RELEASE`], [`LIB_OS_RELEASE`] order; `None` for
    /// a file that could not be read) that is not empty. `None` when none has content: upstream
    /// reports the host as `unsupported` then.
    pub fn read_first(texts: &[Option<&str>]) -> Option<OsRelease> {
        let text = texts.iter().flatten().find(|t| !t.is_empty())?;
        Some(OsRelease::parse(text))
    }

    /// Reads one file's text.
    pub fn parse(text: &str) -> OsRelease {
        let mut fields = BTreeMap::new();
        for line in text.split('\n') {
            let mut parts = line.split('=');
            let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
                continue;
            };
            let value = value.strip_prefix('"').unwrap_or(value);
            let value = value.strip_suffix('"').unwrap_or(value);
            fields.insert(key.to_string(), value.to_string());
        }
        OsRelease { fields }
    }

    /// A field's value (`""` when absent, as the library's struct fields).
    pub fn field(&self, key: &str) -> &str {
        self.fields.get(key).map_or("", String::as_str)
    }

    /// `ID`.
    pub fn id(&self) -> &str {
        self.field("ID")
    }

    /// `VARIANT_ID`.
    pub fn variant_id(&self) -> &str {
        self.field("VARIANT_ID")
    }

    /// An Enterprise Linux CoreOS: RHCOS, SCOS, or RHEL or CentOS with the `coreos` variant.
    pub fn is_el(&self) -> bool {
        let (id, variant) = (self.id(), self.variant_id());
        id == "rhcos"
            || id == "scos"
            || (id == "rhel" && variant == "coreos")
            || (id == "centos" && variant == "coreos")
    }

    /// A CoreOS of any kind (Fedora CoreOS too): the hosts whose booted image upstream reads.
    pub fn is_coreos_variant(&self) -> bool {
        self.variant_id() == "coreos" || self.is_el()
    }

    /// The `os` label of `mcd_host_os_and_version`: the `ID`, upper-cased.
    pub fn prometheus_label(&self) -> String {
        self.id().to_uppercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RHCOS: &str = "NAME=\"Red Hat Enterprise Linux CoreOS\"\nVERSION=\"418.94.202410090804-0\"\nID=\"rhcos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"4.18\"\nVARIANT=\"CoreOS\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"4.18\"\nRHEL_VERSION=9.4\n";

    #[test]
    fn an_rhcos_host_is_a_coreos_variant_labelled_rhcos() {
        let os = OsRelease::parse(RHCOS);
        assert_eq!(os.id(), "rhcos");
        assert!(os.is_el() && os.is_coreos_variant());
        assert_eq!(os.prometheus_label(), "RHCOS");
        assert_eq!(os.field("RHEL_VERSION"), "9.4");
    }

    #[test]
    fn fedora_coreos_and_plain_hosts() {
        let fcos = OsRelease::parse("ID=fedora\nVARIANT_ID=coreos\n");
        assert!(fcos.is_coreos_variant() && !fcos.is_el());
        let debian =
            OsRelease::parse("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n");
        assert!(!debian.is_coreos_variant());
        assert_eq!(debian.prometheus_label(), "DEBIAN");
        let rhel = OsRelease::parse("ID=\"rhel\"\nVARIANT_ID=\"coreos\"\n");
        assert!(rhel.is_el());
        assert!(!OsRelease::parse("ID=rhel\n").is_coreos_variant());
    }

    #[test]
    fn the_librarys_reading_of_odd_lines() {
        // A second `=` cuts the value; single quotes stay; the last line wins; no `=`, no field.
        let os = OsRelease::parse("ID=a=b\nNAME='x'\nID_LIKE=one\nID_LIKE=two\nnothing here\n");
        assert_eq!(os.id(), "a");
        assert_eq!(os.field("NAME"), "'x'");
        assert_eq!(os.field("ID_LIKE"), "two");
        assert_eq!(os.field("nothing here"), "");
        // One quote at one end is trimmed alone; spaces around `=` belong to key and value.
        let os = OsRelease::parse("ID=\"rhcos\nVARIANT_ID = coreos\n");
        assert_eq!(os.id(), "rhcos");
        assert_eq!(os.field("VARIANT_ID "), " coreos");
        assert!(os.is_el());
        assert!(!OsRelease::parse("ID=fedora\nVARIANT_ID = coreos\n").is_coreos_variant());
    }

    #[test]
    fn the_first_file_with_content_is_read() {
        let etc = Some("");
        let lib = Some("ID=scos\n");
        assert_eq!(OsRelease::read_first(&[etc, lib]).unwrap().id(), "scos");
        assert_eq!(OsRelease::read_first(&[None, lib]).unwrap().id(), "scos");
        assert_eq!(
            OsRelease::read_first(&[Some("ID=rhcos\n"), lib])
                .unwrap()
                .id(),
            "rhcos"
        );
        assert!(OsRelease::read_first(&[None, Some("")]).is_none());
    }
}
