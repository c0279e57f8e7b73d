//! What `rpm-ostree status --json` says, typed, and the OS image a deployment runs.
//!
//! Parsing is pure: the text in, values out ([`query`] runs the command through the [`Host`]
//! trait; [`is_rpm_ostree_host`] and [`status_readable`] say where it may run). Follows the fields upstream's daemon reads through
//! `rpmostree-client-go` (`Deployment`, `GetBootedDeployment`, `GetStagedDeployment`) and how
//! it turns a deployment's origin into the image it compares with `osImageURL`
//! (`GetBootedOSImageURL` in `pkg/daemon/rpm-ostree.go`, the client's `imgref` parser).

use serde::Deserialize;

use crate::host::Host;
use crate::root::{HostRoot, RootError};

/// The file ostree creates in `/run` when the system booted from an ostree deployment: its
/// absence means the host is no rpm-ostree host and the OS checks do not apply.
pub const OSTREE_BOOTED: &str = "/run/ostree-booted";

/// Whether the host under `root` is an rpm-ostree host ([`OSTREE_BOOTED`] exists). On any other
/// host the agent applies everything but the OS part of a config (image, kernel arguments,
/// kernel type, extensions), as upstream's daemon does on hosts that are not CoreOS.
pub fn is_rpm_ostree_host(root: &HostRoot) -> Result<bool, RootError> {
    root.exists(OSTREE_BOOTED)
}

/// Whether the booted deployment can be read on this host: an rpm-ostree host whose commands
/// run (a host that only prints commands cannot answer `rpm-ostree status`).
pub fn status_readable(root: &HostRoot, host: &dyn Host) -> Result<bool, RootError> {
    Ok(host.runs_commands() && is_rpm_ostree_host(root)?)
}

/// The `rpm-ostree status --json` arguments.
pub fn status_args() -> Vec<String> {
    vec!["status".into(), "--json".into()]
}

/// `rpm-ostree status --json`: the deployments (booted, staged, rollback) and any transaction
/// under way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Status {
    /// Bootable trees, newest first.
    #[serde(default)]
    pub deployments: Vec<Deployment>,
    /// The transaction under way (`null` when none).
    #[serde(default)]
    pub transaction: Option<Vec<String>>,
}

/// One deployment (the fields the agent reads; the rest are ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Deployment {
    /// Deployment id (`rhcos-<checksum>.0`).
    pub id: String,
    /// The stateroot.
    pub osname: String,
    /// The deployment's commit.
    pub checksum: String,
    /// The base commit when packages are layered on top.
    pub base_checksum: Option<String>,
    /// The OS version.
    pub version: Option<String>,
    /// This deployment is running.
    pub booted: bool,
    /// This deployment is staged for the next boot.
    pub staged: bool,
    /// The origin refspec (ostree remotes).
    pub origin: Option<String>,
    /// A custom origin: `[url, description]` (`pivot://IMAGE` for pre-container RHCOS).
    pub custom_origin: Vec<String>,
    /// The container image the deployment came from (`ostree-unverified-registry:IMAGE`).
    pub container_image_reference: Option<String>,
    /// Layered packages asked for.
    pub requested_packages: Vec<String>,
    /// Base packages asked to be removed (overrides).
    pub requested_base_removals: Vec<String>,
    /// Local RPMs layered (`rpm-ostree install ./x.rpm`).
    pub requested_local_packages: Vec<String>,
    /// Local RPMs layered over files of base packages.
    pub requested_local_fileoverride_packages: Vec<String>,
    /// Base packages replaced by local RPMs.
    pub requested_base_local_replacements: Vec<String>,
}

/// `rpm-ostree status --json` could not be had.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The command failed.
    #[error(transparent)]
    Host(#[from] crate::host::HostError),
    /// Its output did not parse.
    #[error("{0}")]
    Parse(String),
}

/// Runs `rpm-ostree status --json` on `host` and parses it.
pub fn query(host: &mut dyn Host) -> Result<Status, StatusError> {
    let text = host.rpm_ostree_output(&status_args())?;
    parse_status(&text).map_err(StatusError::Parse)
}

/// Parses `rpm-ostree status --json`.
pub fn parse_status(text: &str) -> Result<Status, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("failed to parse `rpm-ostree status --json` output: {e}"))
}

impl Status {
    /// The running deployment, or an error when none is marked booted.
    pub fn booted(&self) -> Result<&Deployment, String> {
        self.deployments
            .iter()
            .find(|d| d.booted)
            .ok_or_else(|| "no booted deployment found".to_string())
    }

    /// The deployment staged for the next boot, if any.
    pub fn staged(&self) -> Option<&Deployment> {
        self.deployments.iter().find(|d| d.staged)
    }
}

impl Deployment {
    /// The OS image this deployment runs, as `osImageURL` names it: the image of its container
    /// reference with the ostree and transport prefixes stripped, else a `pivot://` custom
    /// origin's image, else `None` (a host not deployed from an image).
    pub fn image(&self) -> Result<Option<String>, String> {
        if let Some(r) = self.container_image_reference.as_deref() {
            if !r.is_empty() {
                return parse_image_reference(r).map(|r| Some(r.image));
            }
        }
        Ok(self
            .custom_origin
            .first()
            .and_then(|o| o.strip_prefix("pivot://"))
            .map(str::to_string))
    }
}

/// An ostree container image reference, split (ostree-ext's `OstreeImageReference`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageReference {
    /// Signatures are not verified (`ostree-unverified-*`, `ostree-remote-*`).
    pub unverified: bool,
    /// The ostree remote whose keys verify the image (`ostree-remote-*`).
    pub remote: Option<String>,
    /// The containers transport: `registry` (`docker://` reads as it), `containers-storage`,
    /// `oci`, `oci-archive`, ...
    pub transport: String,
    /// The image with every prefix stripped: a pull spec for registries, a path for archives.
    pub image: String,
}

/// Parses `ostree-unverified-registry:quay.io/x@sha256:...` and its siblings
/// (`ostree-image-signed:`, `ostree-unverified-image:TRANSPORT:`, `ostree-remote-registry:REMOTE:`,
/// `ostree-remote-image:REMOTE:TRANSPORT:`).
pub fn parse_image_reference(reference: &str) -> Result<ImageReference, String> {
    let invalid = || format!("invalid ostree image reference (unmatched scheme): {reference}");
    let (scheme, rest) = reference.split_once(':').ok_or_else(invalid)?;
    let remote_and = |rest: &str| -> Result<(String, String), String> {
        rest.split_once(':')
            .map(|(r, i)| (r.to_string(), i.to_string()))
            .ok_or_else(|| format!("invalid ostree image reference (missing remote): {reference}"))
    };
    let (unverified, remote, transported) = match scheme {
        "ostree-image-signed" => (false, None, rest.to_string()),
        "ostree-unverified-image" => (true, None, rest.to_string()),
        "ostree-unverified-registry" => (true, None, format!("registry:{rest}")),
        "ostree-remote-registry" => {
            let (r, i) = remote_and(rest)?;
            (true, Some(r), format!("registry:{i}"))
        }
        "ostree-remote-image" => {
            let (r, i) = remote_and(rest)?;
            (true, Some(r), i)
        }
        _ => return Err(invalid()),
    };
    let (transport, image) = transported
        .split_once(':')
        .ok_or_else(|| format!("invalid image reference (missing ':'): {transported}"))?;
    let (transport, image) = if transport == "docker" {
        let image = image
            .strip_prefix("//")
            .ok_or_else(|| format!("missing // in docker:// ({reference})"))?;
        ("registry", image)
    } else {
        (transport, image)
    };
    Ok(ImageReference {
        unverified,
        remote,
        transport: transport.to_string(),
        image: image.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rpm-ostree status --json` of an RHCOS 9 node with a staged update that layers an
    /// extension and switches to the realtime kernel (trimmed of fields the agent ignores).
    const STATUS: &str = r#"{
  "deployments": [
    {
      "id": "rhcos-3f1b1e0c1e0a.0",
      "osname": "rhcos",
      "serial": 0,
      "checksum": "3f1b1e0c1e0a",
      "base-checksum": "9a8b7c6d5e4f",
      "version": "418.94.202410090804-0",
      "timestamp": 1728461233,
      "booted": false,
      "staged": true,
      "pinned": false,
      "unlocked": "none",
      "live-replaced": null,
      "container-image-reference": "ostree-unverified-registry:quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:2222",
      "container-image-reference-digest": "sha256:2222",
      "requested-packages": ["kernel-rt-core", "kernel-rt-modules", "kernel-rt-modules-extra", "usbguard"],
      "requested-local-packages": [],
      "requested-base-removals": ["kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra"],
      "requested-base-local-replacements": [],
      "base-removals": [],
      "regenerate-initramfs": false,
      "modules": []
    },
    {
      "id": "rhcos-9a8b7c6d5e4f.0",
      "osname": "rhcos",
      "serial": 0,
      "checksum": "9a8b7c6d5e4f",
      "version": "418.94.202410090804-0",
      "timestamp": 1728461233,
      "booted": true,
      "staged": false,
      "pinned": false,
      "container-image-reference": "ostree-unverified-registry:quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111",
      "container-image-reference-digest": "sha256:1111",
      "requested-packages": [],
      "requested-base-removals": []
    }
  ],
  "transaction": null,
  "cached-update": null,
  "update-driver": null
}"#;

    #[test]
    fn booted_and_staged_deployments_of_a_real_status() {
        let s = parse_status(STATUS).unwrap();
        assert_eq!(s.transaction, None);
        let booted = s.booted().unwrap();
        assert_eq!(booted.id, "rhcos-9a8b7c6d5e4f.0");
        assert!(booted.requested_packages.is_empty());
        assert_eq!(
            booted.image().unwrap().as_deref(),
            Some("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111")
        );
        let staged = s.staged().unwrap();
        assert_eq!(staged.base_checksum.as_deref(), Some("9a8b7c6d5e4f"));
        assert_eq!(staged.requested_packages[3], "usbguard");
        assert_eq!(staged.requested_base_removals[0], "kernel");
    }

    #[test]
    fn a_status_without_a_booted_deployment_or_not_json_is_an_error() {
        let s = parse_status(r#"{"deployments": [{"id": "a", "booted": false}]}"#).unwrap();
        assert_eq!(s.booted(), Err("no booted deployment found".into()));
        assert_eq!(s.staged(), None);
        assert!(parse_status("error: rpm-ostreed not running")
            .unwrap_err()
            .starts_with("failed to parse `rpm-ostree status --json` output"));
    }

    #[test]
    fn pivot_origins_and_hosts_without_an_image() {
        let d = Deployment {
            custom_origin: vec![
                "pivot://quay.io/rhcos@sha256:3333".into(),
                "Managed by machine-config-operator".into(),
            ],
            ..Deployment::default()
        };
        assert_eq!(
            d.image().unwrap().as_deref(),
            Some("quay.io/rhcos@sha256:3333")
        );
        let fcos = Deployment {
            origin: Some("fedora:fedora/x86_64/coreos/stable".into()),
            ..Deployment::default()
        };
        assert_eq!(fcos.image(), Ok(None));
    }

    #[test]
    fn image_references_lose_their_ostree_and_transport_prefixes() {
        let cases = [
            (
                "ostree-unverified-registry:quay.io/a/b:4.18",
                "registry",
                "quay.io/a/b:4.18",
                true,
                None,
            ),
            (
                "ostree-image-signed:docker://quay.io/a/b@sha256:1",
                "registry",
                "quay.io/a/b@sha256:1",
                false,
                None,
            ),
            (
                "ostree-unverified-image:containers-storage:quay.io/a/b@sha256:1",
                "containers-storage",
                "quay.io/a/b@sha256:1",
                true,
                None,
            ),
            (
                "ostree-unverified-image:oci-archive:/var/tmp/os.ociarchive",
                "oci-archive",
                "/var/tmp/os.ociarchive",
                true,
                None,
            ),
            (
                "ostree-remote-registry:fedora:quay.io/fedora/fedora-coreos:stable",
                "registry",
                "quay.io/fedora/fedora-coreos:stable",
                true,
                Some("fedora"),
            ),
            (
                "ostree-remote-image:fedora:docker://quay.io/fedora/fedora-coreos:stable",
                "registry",
                "quay.io/fedora/fedora-coreos:stable",
                true,
                Some("fedora"),
            ),
        ];
        for (input, transport, image, unverified, remote) in cases {
            let r = parse_image_reference(input).unwrap();
            assert_eq!(r.transport, transport, "{input}");
            assert_eq!(r.image, image, "{input}");
            assert_eq!(r.unverified, unverified, "{input}");
            assert_eq!(r.remote.as_deref(), remote, "{input}");
        }
        for bad in [
            "quay.io/a/b:4.18",
            "registry:quay.io/a",
            "ostree-image-signed:docker:quay.io/a",
            "ostree-unverified-image:noseparator",
        ] {
            assert!(parse_image_reference(bad).is_err(), "{bad}");
        }
    }
}
