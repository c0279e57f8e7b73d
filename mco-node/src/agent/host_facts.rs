//! What the agent reports about its host once it starts, as upstream's daemon does:
//! `mcd_host_os_and_version` (the OS from os-release, upper-cased, and on a CoreOS the booted
//! deployment's version) and `mcd_local_unsupported_packages` (the packages layered on,
//! replaced in or removed from the booted deployment that no supported extension installs).
//!
//! Pure: the os-release texts and the parsed `rpm-ostree status --json` in, the labels and the
//! count out. [`collect`] reads them from the host.

use mco_render::gocompat::os_release::{OsRelease, ETC_OS_RELEASE, LIB_OS_RELEASE};
use mco_render::render::SUPPORTED_EXTENSIONS;

use crate::host::Host;
use crate::root::HostRoot;
use crate::rpm_ostree::{self, Deployment, Status};

/// The labels of `mcd_host_os_and_version`: `os` and `version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostOs {
    /// The os-release `ID` upper-cased (`RHCOS`, `DEBIAN`), `unsupported` when os-release
    /// could not be read.
    pub os: String,
    /// The booted deployment's version on a CoreOS host, else empty.
    pub version: String,
}

/// The `mcd_host_os_and_version` labels of a host whose os-release reads `os_release` (`None`:
/// no file had content) and whose booted deployment is `booted` (read only on CoreOS hosts).
pub fn host_os(os_release: Option<&OsRelease>, booted: Option<&Deployment>) -> HostOs {
    let Some(os) = os_release else {
        return HostOs {
            os: "unsupported".into(),
            version: String::new(),
        };
    };
    let version = if os.is_coreos_variant() {
        booted.and_then(|d| d.version.clone()).unwrap_or_default()
    } else {
        String::new()
    };
    HostOs {
        os: os.prometheus_label(),
        version,
    }
}

/// How many of the booted deployment's package changes (layered, local, file-override,
/// removed and locally replaced packages) no supported extension installs. `None` when there
/// is no booted deployment (upstream then leaves the gauge as it was).
pub fn unsupported_packages(status: &Status) -> Option<usize> {
    let booted = status.deployments.iter().find(|d| d.booted)?;
    let supported = |p: &str| {
        SUPPORTED_EXTENSIONS
            .iter()
            .any(|(_, packages)| packages.contains(&p))
    };
    let changes = [
        &booted.requested_packages,
        &booted.requested_local_packages,
        &booted.requested_local_fileoverride_packages,
        &booted.requested_base_removals,
        &booted.requested_base_local_replacements,
    ];
    Some(
        changes
            .into_iter()
            .flatten()
            .filter(|p| !supported(p))
            .count(),
    )
}

/// What the agent found on its host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFacts {
    /// `mcd_host_os_and_version`'s labels.
    pub os: HostOs,
    /// `mcd_local_unsupported_packages`: 0 on a host without rpm-ostree or whose status
    /// cannot be had, `None` when the status has no booted deployment or does not parse.
    pub unsupported_packages: Option<usize>,
}

/// Reads os-release and, on an rpm-ostree host, `rpm-ostree status --json`.
pub fn collect(root: &HostRoot, host: &mut dyn Host) -> HostFacts {
    let read = |p: &str| {
        root.resolve(p)
            .ok()
            .and_then(|path| std::fs::read_to_string(path).ok())
    };
    let (etc, lib) = (read(ETC_OS_RELEASE), read(LIB_OS_RELEASE));
    let os_release = OsRelease::read_first(&[etc.as_deref(), lib.as_deref()]);
    let status = if rpm_ostree::status_readable(root, host).unwrap_or(false) {
        Some(rpm_ostree::query(host).map_err(|e| e.to_string()))
    } else {
        None
    };
    let booted = match &status {
        Some(Ok(s)) => s.deployments.iter().find(|d| d.booted),
        _ => None,
    };
    let os = host_os(os_release.as_ref(), booted);
    let unsupported_packages = match &status {
        None | Some(Err(_)) => Some(0),
        Some(Ok(s)) => unsupported_packages(s),
    };
    HostFacts {
        os,
        unsupported_packages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(booted: bool, version: &str, packages: &[&str], removed: &[&str]) -> Deployment {
        Deployment {
            booted,
            version: Some(version.into()),
            requested_packages: packages.iter().map(|p| p.to_string()).collect(),
            requested_base_removals: removed.iter().map(|p| p.to_string()).collect(),
            ..Deployment::default()
        }
    }

    #[test]
    fn a_coreos_host_reports_its_booted_version() {
        let rhcos = OsRelease::parse("ID=\"rhcos\"\nVARIANT_ID=coreos\n");
        let d = deployment(true, "418.94.202410090804-0", &[], &[]);
        let got = host_os(Some(&rhcos), Some(&d));
        assert_eq!(got.os, "RHCOS");
        assert_eq!(got.version, "418.94.202410090804-0");
    }

    #[test]
    fn other_hosts_report_no_version_and_unreadable_ones_unsupported() {
        let debian = OsRelease::parse("ID=debian\nVERSION_ID=\"12\"\n");
        let d = deployment(true, "12", &[], &[]);
        assert_eq!(
            host_os(Some(&debian), Some(&d)),
            HostOs {
                os: "DEBIAN".into(),
                version: String::new()
            }
        );
        assert_eq!(host_os(None, None).os, "unsupported");
    }

    #[test]
    fn packages_no_extension_installs_are_counted() {
        // usbguard and the kernel-devel pair come from extensions; the rest do not; a removal
        // counts too; the staged deployment is not looked at.
        let booted = deployment(
            true,
            "1",
            &["usbguard", "kernel-devel", "htop", "vim-enhanced"],
            &["nano"],
        );
        let mut local = deployment(false, "2", &["tmux"], &[]);
        local.staged = true;
        let status = Status {
            deployments: vec![local, booted],
            transaction: None,
        };
        assert_eq!(unsupported_packages(&status), Some(3));
        let mut with_local = status.clone();
        with_local.deployments[1].requested_local_packages = vec!["my-tool".into()];
        with_local.deployments[1].requested_base_local_replacements = vec!["kernel".into()];
        assert_eq!(unsupported_packages(&with_local), Some(5));
        let none_booted = Status {
            deployments: vec![deployment(false, "1", &["htop"], &[])],
            transaction: None,
        };
        assert_eq!(unsupported_packages(&none_booted), None);
    }

    fn root_with(files: &[(&str, &str)]) -> (tempfile::TempDir, HostRoot) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let root = HostRoot::new(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn collected_from_the_host_root_and_rpm_ostree() {
        use crate::host::RecordingHost;
        // An RHCOS host: os-release under /usr/lib only, rpm-ostree answering.
        let (_d, root) = root_with(&[
            (LIB_OS_RELEASE, "ID=\"rhcos\"\nVARIANT_ID=coreos\n"),
            (rpm_ostree::OSTREE_BOOTED, ""),
        ]);
        let mut host = RecordingHost::new();
        host.respond(
            "rpm-ostree status --json",
            r#"{"deployments": [{"booted": true, "version": "418.94.1-0",
                "requested-packages": ["htop", "usbguard"]}]}"#,
        );
        let facts = collect(&root, &mut host);
        assert_eq!(facts.os.os, "RHCOS");
        assert_eq!(facts.os.version, "418.94.1-0");
        assert_eq!(facts.unsupported_packages, Some(1));
        // A plain host: /etc/os-release read, rpm-ostree never asked, 0 packages.
        let (_d, root) = root_with(&[(ETC_OS_RELEASE, "ID=debian\n")]);
        let mut host = RecordingHost::new();
        let facts = collect(&root, &mut host);
        assert_eq!(
            (facts.os.os.as_str(), facts.os.version.as_str()),
            ("DEBIAN", "")
        );
        assert_eq!(facts.unsupported_packages, Some(0));
        assert!(host.calls.is_empty(), "{:?}", host.calls);
        // rpm-ostree failing: 0, as upstream's.
        let (_d, root) = root_with(&[
            (ETC_OS_RELEASE, "ID=rhcos\n"),
            (rpm_ostree::OSTREE_BOOTED, ""),
        ]);
        let mut host = RecordingHost::failing_on("rpm-ostree status");
        let facts = collect(&root, &mut host);
        assert_eq!(facts.unsupported_packages, Some(0));
        assert_eq!(facts.os.version, "");
    }

    #[test]
    fn the_status_is_read_from_rpm_ostrees_json() {
        let text = r#"{"deployments": [{"id": "rhcos-a.0", "osname": "rhcos", "checksum": "a",
            "booted": true, "version": "9.6.20250101-0",
            "requested-packages": ["htop"], "requested-local-packages": ["x.rpm"],
            "requested-local-fileoverride-packages": ["y"], "requested-base-removals": [],
            "requested-base-local-replacements": ["z"]}], "transaction": null}"#;
        let status = rpm_ostree::parse_status(text).unwrap();
        assert_eq!(unsupported_packages(&status), Some(4));
    }
}
