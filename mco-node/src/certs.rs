//! The node's certificates from the ControllerConfig, written in place as upstream's
//! certificate writer does (`pkg/daemon/certificate_writer.go`): no update, no drain, no
//! reboot, no host command.
//!
//! | file | from |
//! |---|---|
//! | [`KUBELET_CA_PATH`] | `spec.kubeAPIServerServingCAData` |
//! | [`CLOUD_CA_PATH`] | `spec.cloudProviderCAData` |
//! | `/etc/docker/certs.d/<registry>/ca.crt` | each of `spec.imageRegistryBundleData`, then `spec.imageRegistryBundleUserData` (`<registry>` is the bundle's `file` with `..` read as `:`, the port separator a ConfigMap key cannot hold) |
//! | [`KUBECONFIG_PATH`]'s first cluster's `certificate-authority-data` | the `kubeconfig-data` ConfigMap's `ca-bundle.crt` |
//!
//! Folders of [`REGISTRY_CERTS_DIR`] that no bundle names are removed; its plain files are
//! left alone. What to write is decided purely ([`plan`], [`stale_registry_folders`],
//! [`kubeconfig_with_ca`]); [`sync`] reads the host root, decides and writes, each file
//! atomically and only when its bytes change.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use mco_render::api::{CaFieldError, ControllerConfigSpec, ImageRegistryBundle};
use mco_render::controllers::operator::certificates::pem_blocks;
use mco_render::gocompat::base64::{std_decode, std_encode};
use serde_json::Value;

use crate::root::{sync_dirs, Entry, HostRoot, RootError};

/// The kubelet's CA bundle for the kube-apiserver.
pub const KUBELET_CA_PATH: &str = "/etc/kubernetes/kubelet-ca.crt";
/// The cloud provider's CA bundle.
pub const CLOUD_CA_PATH: &str =
    "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem";
/// The folder of per-registry CA folders (`<registry>/ca.crt`) the container tools read.
pub const REGISTRY_CERTS_DIR: &str = "/etc/docker/certs.d";
/// The node's kubeconfig.
pub const KUBECONFIG_PATH: &str = "/etc/kubernetes/kubeconfig";
/// The files a config may also hold whose bytes the certificate writer changes, so the
/// on-disk drift check skips them (upstream's `getFilesToIgnore`).
pub const DRIFT_IGNORED: &[&str] = &[KUBELET_CA_PATH, CLOUD_CA_PATH];

/// The mode of a new file (an existing file keeps its own).
pub const FILE_MODE: u32 = 0o644;
/// The mode of a new folder.
pub const DIR_MODE: u32 = 0o755;

/// Why the certificates could not be written.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// A CA field of the ControllerConfig does not decode.
    #[error(transparent)]
    Spec(#[from] CaFieldError),
    /// The kubeconfig cannot be read or has no cluster.
    #[error("{KUBECONFIG_PATH}: {0}")]
    Kubeconfig(String),
    /// The host root refused a read or a write.
    #[error(transparent)]
    Root(#[from] RootError),
}

/// One file to hold exactly these bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertFile {
    /// The host path.
    pub path: String,
    /// Its contents.
    pub data: Vec<u8>,
}

/// What the ControllerConfig asks of the disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertPlan {
    /// The files, in writing order (a later one for the same path wins).
    pub files: Vec<CertFile>,
    /// The folders of [`REGISTRY_CERTS_DIR`] the bundles keep: their folder names and their
    /// `file` names as written.
    pub registry_folders: BTreeSet<String>,
    /// Bundles refused (a `file` that is no folder name).
    pub warnings: Vec<String>,
}

/// The folder under [`REGISTRY_CERTS_DIR`] of a registry bundle's `file`: `..` is the port
/// separator (`registry.example..5000` is `registry.example:5000`).
pub fn registry_folder(file: &str) -> String {
    file.replace("..", ":")
}

/// Whether `name` is one path component.
fn is_folder_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// `data` ending with a newline, as upstream writes its CA bundles.
fn with_newline(mut data: Vec<u8>) -> Vec<u8> {
    if data.last() != Some(&b'\n') {
        data.push(b'\n');
    }
    data
}

/// The certificate files of a ControllerConfig spec. A CA field that is absent or empty
/// writes nothing (the file, written by the MachineConfig or the installer, is kept).
pub fn plan(spec: &ControllerConfigSpec) -> Result<CertPlan, CaFieldError> {
    let mut out = CertPlan::default();
    for (field, path) in [
        ("kubeAPIServerServingCAData", KUBELET_CA_PATH),
        ("cloudProviderCAData", CLOUD_CA_PATH),
    ] {
        if let Some(data) = spec.ca_bytes(field)?.filter(|d| !d.is_empty()) {
            out.files.push(CertFile {
                path: path.to_string(),
                data: with_newline(data),
            });
        }
    }
    let mut bundles: Vec<ImageRegistryBundle> =
        spec.image_registry_bundles("imageRegistryBundleData")?;
    bundles.extend(spec.image_registry_bundles("imageRegistryBundleUserData")?);
    for b in bundles {
        let folder = registry_folder(&b.file);
        if !is_folder_name(&folder) {
            out.warnings.push(format!(
                "image registry bundle {:?}: not a folder name",
                b.file
            ));
            continue;
        }
        out.files.push(CertFile {
            path: format!("{REGISTRY_CERTS_DIR}/{folder}/ca.crt"),
            data: b.data,
        });
        out.registry_folders.insert(folder);
        out.registry_folders.insert(b.file);
    }
    Ok(out)
}

/// The folders of [`REGISTRY_CERTS_DIR`] (`entries`: name and whether it is a folder) that
/// no bundle keeps. Plain files and symlinks are never stale.
pub fn stale_registry_folders(entries: &[(String, bool)], plan: &CertPlan) -> Vec<String> {
    entries
        .iter()
        .filter(|(name, is_dir)| *is_dir && !plan.registry_folders.contains(name))
        .map(|(name, _)| name.clone())
        .collect()
}

/// `bundle` cut after each `-----END CERTIFICATE-----`, as upstream compares bundles
/// certificate by certificate; each piece is trimmed (upstream compares them with the
/// newline before them, so a certificate moved to the front of a bundle looks new to it).
fn certificates_of(bundle: &str) -> Vec<String> {
    const END: &str = "-----END CERTIFICATE-----";
    let mut out = Vec::new();
    let mut rest = bundle.trim();
    while let Some(i) = rest.find(END) {
        out.push(rest[..i + END.len()].trim().to_string());
        rest = &rest[i + END.len()..];
    }
    out.push(rest.trim().to_string());
    out
}

/// The kubeconfig with its first cluster's `certificate-authority-data` set to the
/// certificates of `ca`, when `ca` holds a certificate the kubeconfig lacks; `None` when the
/// kubeconfig already trusts every one. Certificates that are not PEM are left out, and
/// the rest of the kubeconfig is kept (written as upstream's YAML library writes it).
pub fn kubeconfig_with_ca(kubeconfig: &[u8], ca: &[u8]) -> Result<Option<Vec<u8>>, CertError> {
    let bad = |m: String| CertError::Kubeconfig(m);
    let mut kc: Value = serde_yaml_ng::from_slice(kubeconfig).map_err(|e| bad(e.to_string()))?;
    let cluster = kc
        .pointer_mut("/clusters/0/cluster")
        .filter(|c| c.is_object())
        .ok_or_else(|| bad("no cluster".into()))?;
    let on_disk = match cluster.get("certificate-authority-data") {
        Some(Value::String(s)) => {
            std_decode(s).ok_or_else(|| bad("CA data is not base64".into()))?
        }
        _ => Vec::new(),
    };
    let on_disk = String::from_utf8_lossy(&on_disk).into_owned();
    let wanted = String::from_utf8_lossy(ca).into_owned();
    if on_disk.trim() == wanted.trim() {
        return Ok(None);
    }
    let have = certificates_of(&on_disk);
    let mut missing = false;
    let mut full = String::new();
    for cert in certificates_of(&wanted) {
        if !have.contains(&cert) {
            missing = true;
        }
        let blocks = pem_blocks(cert.as_bytes());
        if blocks.is_empty() {
            // The text after the last certificate (or garbage): nothing more to read.
            break;
        }
        if blocks.iter().any(|b| b.label == "CERTIFICATE") {
            full.push_str(&cert);
            full.push('\n');
        }
    }
    if !missing {
        return Ok(None);
    }
    cluster["certificate-authority-data"] = Value::String(std_encode(full.as_bytes()));
    Ok(Some(
        mco_render::gocompat::yaml::to_go_yaml(&kc).into_bytes(),
    ))
}

/// What [`sync`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertReport {
    /// Files written (their bytes changed).
    pub written: Vec<String>,
    /// Stale registry folders removed.
    pub removed: Vec<String>,
    /// Bundles or inputs skipped, for the log.
    pub warnings: Vec<String>,
}

impl CertReport {
    /// Whether the disk changed.
    pub fn changed(&self) -> bool {
        !self.written.is_empty() || !self.removed.is_empty()
    }
}

/// Writes `data` at `path` unless it already holds it; an existing file keeps its mode.
fn write_if_changed(
    root: &HostRoot,
    path: &str,
    data: &[u8],
    dirty: &mut BTreeSet<PathBuf>,
) -> Result<bool, RootError> {
    let mode = match root.entry(path)? {
        Entry::File { data: old, .. } if old == data => return Ok(false),
        Entry::File { mode, .. } => mode & 0o7777,
        _ => FILE_MODE,
    };
    root.write_atomic(path, data, mode, None, DIR_MODE, false, dirty)?;
    Ok(true)
}

/// Brings the certificate files under `root` to what `spec` and the kubeconfig CA
/// (`kubeconfig_ca`: the `kubeconfig-data` ConfigMap's `ca-bundle.crt`, when there is one)
/// ask: each file atomically and only when its bytes differ, stale registry folders
/// removed, the temp files of an interrupted pass removed, the directories synced. A missing kubeconfig is not written.
pub fn sync(
    root: &HostRoot,
    spec: &ControllerConfigSpec,
    kubeconfig_ca: Option<&[u8]>,
) -> Result<CertReport, CertError> {
    let plan = plan(spec)?;
    let mut report = CertReport {
        warnings: plan.warnings.clone(),
        ..Default::default()
    };
    let mut dirty = BTreeSet::new();
    let entries = match root.list_dir(REGISTRY_CERTS_DIR)? {
        Some(e) => e,
        None => {
            root.mkdir_all(REGISTRY_CERTS_DIR, DIR_MODE)?;
            Vec::new()
        }
    };
    for name in stale_registry_folders(&entries, &plan) {
        let path = format!("{REGISTRY_CERTS_DIR}/{name}");
        root.remove_tree(&path, &mut dirty)?;
        report.removed.push(path);
    }
    // The last word for each path (user bundles after the cluster's).
    let mut files: BTreeMap<&str, &[u8]> = BTreeMap::new();
    let mut order = Vec::new();
    for f in &plan.files {
        if files.insert(&f.path, &f.data).is_none() {
            order.push(f.path.as_str());
        }
    }
    for path in order {
        // A pass cut short leaves the temp file of the write it was in; when this pass finds
        // the bytes already right (the spec went back), nothing else would remove it.
        root.remove_temp(path)?;
        if write_if_changed(root, path, files[path], &mut dirty)? {
            report.written.push(path.to_string());
        }
    }
    if let Some(ca) = kubeconfig_ca.filter(|c| !c.is_empty()) {
        root.remove_temp(KUBECONFIG_PATH)?;
        match root.entry(KUBECONFIG_PATH)? {
            Entry::File { data, .. } => {
                if let Some(new) = kubeconfig_with_ca(&data, ca)? {
                    if write_if_changed(root, KUBECONFIG_PATH, &new, &mut dirty)? {
                        report.written.push(KUBECONFIG_PATH.to_string());
                    }
                }
            }
            _ => report
                .warnings
                .push(format!("{KUBECONFIG_PATH}: no kubeconfig to update")),
        }
    }
    sync_dirs(&dirty).map_err(|e| {
        CertError::Root(RootError::Io {
            path: REGISTRY_CERTS_DIR.to_string(),
            source: e,
        })
    })?;
    Ok(report)
}

#[cfg(test)]
mod tests;
