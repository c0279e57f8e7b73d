//! The OS part of an update: the OS image, kernel arguments, kernel type and extensions
//! through rpm-ostree, as upstream's daemon applies them (`applyOSChanges` and
//! `applyLayeredOSChanges` in `pkg/daemon/update.go`).
//!
//! Order, as upstream: extract the extensions image and write the extensions repo (when the
//! configs use extensions or a non-default kernel), drop any pending deployment, undo a kernel
//! switch of the booted deployment (on an OS or kernel type change), rebase to the new image
//! with the pull secret linked for rpm-ostree, kernel arguments, switch the kernel, then
//! install and remove extension packages and verify that the staged deployment carries them;
//! finally remove the repo and the extracted content. Every rpm-ostree change lands in a
//! staged deployment, so the update's undo (`rpm-ostree cleanup -p`) discards all of it.
//!
//! What to do is decided by pure functions ([`plan`], [`revert_kernel_swap`],
//! [`kernel_switch`], [`extension_changes`], [`verify_staged`], [`repo_file`]); [`run`] carries
//! it out through the [`Host`] trait and the [`HostRoot`].

use std::collections::BTreeSet;

use mco_render::plan::actions::extension_packages;
use mco_render::plan::diff::canonical_kernel_type;
use mco_render::plan::layering::OsMode;
use mco_render::plan::reconcile::RenderedInput;
use mco_render::plan::Plan;

use crate::host::{Host, HostCall, HostError};
use crate::root::HostRoot;
use crate::rpm_ostree::{self, Deployment, Status, OSTREE_BOOTED};

use super::ApplyError;

/// The yum repo rpm-ostree installs extensions from while the update runs.
pub const EXTENSIONS_REPO: &str = "/etc/yum.repos.d/coreos-extensions.repo";
/// Where extensions images are extracted.
pub const EXTENSIONS_CONTENT_BASE: &str = "/run/mco-extensions";
/// The pull secret rpm-ostree reads when it pulls from a registry.
pub const OSTREE_AUTH_FILE: &str = "/run/ostree/auth.json";
/// The cluster's pull secret, written for the kubelet.
pub const KUBELET_AUTH_FILE: &str = "/var/lib/kubelet/config.json";
/// The cluster's pull secret merged with the internal registry's, when the operator wrote it.
pub const INTERNAL_REGISTRY_AUTH_FILE: &str = "/etc/mco/internal-registry-pull-secret.json";
/// The name prefix of the containers the extensions are copied out of.
pub const PIVOT_CONTAINER_PREFIX: &str = "ostree-container-pivot-";

/// The packages of the default kernel, removed by a kernel switch.
pub const DEFAULT_KERNEL: [&str; 5] = [
    "kernel",
    "kernel-core",
    "kernel-modules",
    "kernel-modules-core",
    "kernel-modules-extra",
];
/// The realtime kernel's packages (not the `kernel-rt` meta-package, which pulls in more).
pub const REALTIME_KERNEL: [&str; 3] = [
    "kernel-rt-core",
    "kernel-rt-modules",
    "kernel-rt-modules-extra",
];
/// The 64k-pages kernel's packages.
pub const KERNEL_64K: [&str; 4] = [
    "kernel-64k-core",
    "kernel-64k-modules",
    "kernel-64k-modules-core",
    "kernel-64k-modules-extra",
];

/// What the OS part of an update does (decided by [`plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OsUpdate {
    /// What changes, for the log (upstream's `osChangesString`).
    pub summary: String,
    /// The extensions image to extract and serve as the extensions repo.
    pub extensions_image: Option<String>,
    /// The host path it is extracted to.
    pub content_dir: String,
    /// The name of the container it is copied out of.
    pub container: String,
    /// Undo the booted deployment's kernel switch first (an OS image or kernel type change).
    pub revert_kernel_swap: bool,
    /// Rebase to this image (`osImageURL` changed).
    pub rebase: Option<String>,
    /// `rpm-ostree kargs` arguments (kernel arguments changed).
    pub kargs: Option<Vec<String>>,
    /// Switch to this kernel type (`realtime` or `64k-pages`) after the rebase.
    pub kernel: Option<String>,
    /// Bring the layered extension packages to these extensions' (the step runs).
    pub extensions: Option<Vec<String>>,
}

impl OsUpdate {
    /// The steps as command lines, for dry runs (the ones that depend on the booted
    /// deployment are described).
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(image) = &self.extensions_image {
            out.push(format!(
                "extract {image} to {} and write {EXTENSIONS_REPO}",
                self.content_dir
            ));
        }
        out.push(HostCall::CleanupPending.command_line());
        if self.revert_kernel_swap {
            out.push("rpm-ostree override reset <the booted deployment's kernel overrides>".into());
        }
        if let Some(image) = &self.rebase {
            out.push(format!("link {OSTREE_AUTH_FILE} to the pull secret"));
            out.push(
                HostCall::Rebase {
                    image: image.clone(),
                }
                .command_line(),
            );
        }
        if let Some(args) = &self.kargs {
            out.push(HostCall::Kargs { args: args.clone() }.command_line());
        }
        if let Some(k) = &self.kernel {
            if let Ok(Some(call)) = kernel_switch(k, "aarch64") {
                out.push(call.command_line());
            }
        }
        if let Some(exts) = &self.extensions {
            out.push(format!(
                "rpm-ostree update <extension packages of [{}] not yet layered>, then verify them staged",
                exts.join(" ")
            ));
        }
        out
    }
}

/// The OS part of the update from `old` to `new`, or `None` when the OS is left alone.
///
/// As upstream, it runs when the image, extensions, kernel type or kernel arguments change,
/// and on every update of a node with a realtime or 64k-pages kernel (the kernel packages are
/// kept current then, OCPBUGS-4049).
///
/// In [`OsMode::Layered`] (the node moves to an on-cluster built image) only the rebase and the
/// kernel arguments are left, as upstream's `applyLayeredOSChanges` with `oclEnabled`: the
/// kernel type and the extensions are built into the image, so neither the extensions image,
/// nor a kernel switch, nor extension packages are touched.
pub fn plan(p: &Plan, old: &RenderedInput, new: &RenderedInput, mode: OsMode) -> Option<OsUpdate> {
    let layered = mode == OsMode::Layered;
    let d = &p.diff;
    let (old_kernel, new_kernel) = (
        canonical_kernel_type(&old.kernel_type),
        canonical_kernel_type(&new.kernel_type),
    );
    let special_kernel = new_kernel != "default";
    if !(d.os_update || d.extensions || d.kernel_type || d.kargs || special_kernel) {
        return None;
    }
    let have_extensions = !old.extensions.is_empty() || !new.extensions.is_empty();
    let have_kernel_type = old_kernel != "default" || special_kernel;
    let image = &new.base_os_extensions_container_image;
    let extensions_image = (!layered && !image.is_empty() && (have_extensions || have_kernel_type))
        .then(|| image.clone());
    let name = if new.name.is_empty() {
        "config".to_string()
    } else {
        new.name.clone()
    };
    let rebase = (d.os_update && !new.os_image_url.is_empty()).then(|| new.os_image_url.clone());
    let os_or_kernel = !layered && (d.os_update || d.kernel_type);
    let extensions_empty = old.extensions.is_empty() && new.extensions.is_empty();
    let extensions_same = old.extensions == new.extensions && old.os_image_url == new.os_image_url;
    Some(OsUpdate {
        summary: summary(p, new_kernel),
        extensions_image,
        content_dir: format!("{EXTENSIONS_CONTENT_BASE}/os-extensions-content-{name}"),
        container: format!("{PIVOT_CONTAINER_PREFIX}{name}"),
        revert_kernel_swap: os_or_kernel,
        rebase,
        kargs: p.kargs_args.clone().filter(|a| !a.is_empty()),
        kernel: (os_or_kernel && special_kernel).then(|| new_kernel.to_string()),
        extensions: (!(layered || extensions_empty || extensions_same))
            .then(|| new.extensions.clone()),
    })
}

fn summary(p: &Plan, new_kernel: &str) -> String {
    let d = &p.diff;
    let mut parts = Vec::new();
    if d.os_update {
        parts.push("Upgrading OS".to_string());
    }
    if d.extensions {
        parts.push("Installing extensions".into());
    }
    if d.kernel_type {
        parts.push("Changing kernel type".into());
    }
    if d.kargs {
        parts.push("Changing kernel arguments".into());
    }
    if parts.is_empty() {
        return format!("Updating to a target config with {new_kernel} kernel");
    }
    parts.join("; ")
}

/// The text of the extensions repo serving the image extracted to `content_dir`.
pub fn repo_file(content_dir: &str) -> String {
    format!(
        "[coreos-extensions]\nenabled=1\nmetadata_expire=1m\nbaseurl={content_dir}/usr/share/rpm-ostree/extensions/\ngpgcheck=0\nskip_if_unavailable=False\n"
    )
}

/// The call undoing the booted deployment's kernel switch: its kernel overrides reset and its
/// realtime or 64k-pages kernel packages uninstalled. `None` unless both are there (a
/// machine-local kernel hotfix is left alone).
pub fn revert_kernel_swap(booted: &Deployment) -> Option<HostCall> {
    let reset: Vec<String> = booted
        .requested_base_removals
        .iter()
        .filter(|p| *p == "kernel" || p.starts_with("kernel-"))
        .cloned()
        .collect();
    let uninstall: Vec<String> = booted
        .requested_packages
        .iter()
        .filter(|p| p.starts_with("kernel-rt-") || p.starts_with("kernel-64k-"))
        .cloned()
        .collect();
    (!reset.is_empty() && !uninstall.is_empty())
        .then_some(HostCall::OverrideReset { reset, uninstall })
}

/// The call switching the default kernel for `kernel_type` on a host of `arch`: `None` for
/// the default kernel, an error for 64k pages off `aarch64`.
pub fn kernel_switch(kernel_type: &str, arch: &str) -> Result<Option<HostCall>, String> {
    let install: &[&str] = match canonical_kernel_type(kernel_type) {
        "realtime" => &REALTIME_KERNEL,
        "64k-pages" if arch != "aarch64" => {
            return Err("64k-pages is only supported for aarch64 architecture".into())
        }
        "64k-pages" => &KERNEL_64K,
        _ => return Ok(None),
    };
    Ok(Some(HostCall::OverrideRemove {
        remove: DEFAULT_KERNEL.iter().map(|p| p.to_string()).collect(),
        install: install.iter().map(|p| p.to_string()).collect(),
    }))
}

/// The packages of `extensions` (unknown names have none).
pub fn packages_of(extensions: &[String]) -> Vec<String> {
    extensions
        .iter()
        .flat_map(|e| extension_packages(e))
        .map(str::to_string)
        .collect()
}

/// The `rpm-ostree update` bringing the layered packages `installed` to those of `extensions`:
/// missing ones installed, extension packages no longer wanted removed (packages that belong
/// to no extension are not the agent's), each list sorted. `None` when nothing changes.
pub fn extension_changes(installed: &[String], extensions: &[String]) -> Option<HostCall> {
    let required: BTreeSet<String> = packages_of(extensions).into_iter().collect();
    let installed: BTreeSet<&String> = installed.iter().collect();
    let managed: BTreeSet<&str> = mco_render::render::SUPPORTED_EXTENSIONS
        .iter()
        .flat_map(|(_, pkgs)| pkgs.iter().copied())
        .collect();
    let install: Vec<String> = required
        .iter()
        .filter(|p| !installed.contains(p))
        .cloned()
        .collect();
    let uninstall: Vec<String> = installed
        .iter()
        .filter(|p| managed.contains(p.as_str()) && !required.contains(p.as_str()))
        .map(|p| p.to_string())
        .collect();
    (!install.is_empty() || !uninstall.is_empty())
        .then_some(HostCall::Update { install, uninstall })
}

/// Whether the staged deployment layers every package of `extensions`: the check upstream
/// makes before rebooting (OCPBUGS-65645).
pub fn verify_staged(status: &Status, extensions: &[String]) -> Result<(), String> {
    let expected = packages_of(extensions);
    if expected.is_empty() {
        return Ok(());
    }
    let staged = status
        .staged()
        .ok_or("no staged deployment found after applying extensions")?;
    let missing: Vec<String> = expected
        .into_iter()
        .filter(|p| !staged.requested_packages.contains(p))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the following extension packages are missing from the staged deployment: [{}]",
        missing.join(" ")
    ))
}

/// The pull secret rpm-ostree gets: the merged one when it is there and valid JSON, else the
/// cluster's.
pub fn pull_secret_source(root: &HostRoot) -> &'static str {
    let merged = root
        .resolve(INTERNAL_REGISTRY_AUTH_FILE)
        .ok()
        .and_then(|p| std::fs::read(p).ok());
    match merged {
        Some(bytes) if serde_json::from_slice::<serde_json::Value>(&bytes).is_ok() => {
            INTERNAL_REGISTRY_AUTH_FILE
        }
        _ => KUBELET_AUTH_FILE,
    }
}

/// Points `/run/ostree/auth.json` at the pull secret (replacing an older link); returns the
/// file linked.
pub fn link_pull_secret(root: &HostRoot) -> Result<&'static str, ApplyError> {
    let source = pull_secret_source(root);
    let mut dirty = BTreeSet::new();
    root.symlink_atomic(OSTREE_AUTH_FILE, std::path::Path::new(source), &mut dirty)?;
    Ok(source)
}

fn os_err(e: impl std::fmt::Display) -> ApplyError {
    ApplyError::Os(e.to_string())
}

/// A failure of the steps upstream counts in `mcd_pivot_errors_total`: the kernel swap's undo
/// and the change of OS image.
fn pivot_err(e: String) -> ApplyError {
    ApplyError::Pivot(e)
}

fn query_status(host: &mut dyn Host) -> Result<Status, ApplyError> {
    rpm_ostree::query(host).map_err(|e| match e {
        rpm_ostree::StatusError::Host(h) => ApplyError::Host(h),
        rpm_ostree::StatusError::Parse(p) => os_err(p),
    })
}

/// The log line (and Event note) of an OS part left out on a host that is not an rpm-ostree
/// host.
pub fn skipped_note(summary: &str) -> String {
    format!(
        "not an rpm-ostree host (no {OSTREE_BOOTED}): the OS part of the update is skipped ({summary})"
    )
}

/// The prefix of the OS steps a host that only prints commands is not asked to run.
pub const NOT_RUN: &str = "not run (the host only prints commands): ";

/// Carries out `u`, logging each step. The extracted content and the repo are removed
/// whatever happens; rpm-ostree's changes stay staged for the reboot (a failure leaves them
/// to the update's undo, `rpm-ostree cleanup -p`). On a host that only prints commands
/// ([`Host::runs_commands`] `false`) the steps are logged as [`OsUpdate::describe`] puts them,
/// each after [`NOT_RUN`], and nothing runs: the steps read outputs such a host cannot give.
pub fn run(
    root: &HostRoot,
    host: &mut dyn Host,
    u: &OsUpdate,
    log: &mut Vec<String>,
) -> Result<(), ApplyError> {
    log.push(format!("OS update: {}", u.summary));
    if !host.runs_commands() {
        log.extend(u.describe().into_iter().map(|l| format!("{NOT_RUN}{l}")));
        return Ok(());
    }
    let result = run_steps(root, host, u, log);
    if u.extensions_image.is_some() {
        let mut dirty = BTreeSet::new();
        if let Err(e) = root.remove(EXTENSIONS_REPO, &mut dirty) {
            log.push(format!("could not remove {EXTENSIONS_REPO}: {e}"));
        }
        match root.resolve(&u.content_dir) {
            Ok(dir) if dir.exists() => {
                if let Err(e) = std::fs::remove_dir_all(&dir) {
                    log.push(format!("could not remove {}: {e}", u.content_dir));
                }
            }
            Ok(_) => {}
            Err(e) => log.push(format!("could not remove {}: {e}", u.content_dir)),
        }
    }
    result
}

fn run_call(host: &mut dyn Host, call: &HostCall, log: &mut Vec<String>) -> Result<(), HostError> {
    call.run(host)?;
    log.push(format!("run {}", call.command_line()));
    Ok(())
}

fn run_steps(
    root: &HostRoot,
    host: &mut dyn Host,
    u: &OsUpdate,
    log: &mut Vec<String>,
) -> Result<(), ApplyError> {
    if let Some(image) = &u.extensions_image {
        extract_extensions(root, host, image, u, log)
            .map_err(|e| os_err(format!("error pulling extensions image {image}: {e}")))?;
        let mut dirty = BTreeSet::new();
        root.write_atomic(
            EXTENSIONS_REPO,
            repo_file(&u.content_dir).as_bytes(),
            0o644,
            None,
            0o755,
            false,
            &mut dirty,
        )?;
        log.push(format!("wrote {EXTENSIONS_REPO}"));
    }
    run_call(host, &HostCall::CleanupPending, log)
        .map_err(|e| os_err(format!("failed to remove pending deployment: {e}")))?;
    let booted = if u.revert_kernel_swap || u.rebase.is_some() || u.extensions.is_some() {
        let status = query_status(host)?;
        Some(status.booted().map_err(os_err)?.clone())
    } else {
        None
    };
    if let (true, Some(b)) = (u.revert_kernel_swap, &booted) {
        match revert_kernel_swap(b) {
            Some(call) => run_call(host, &call, log).map_err(|e| pivot_err(e.to_string()))?,
            None => log.push("no kernel overrides to undo".into()),
        }
    }
    if let Some(image) = &u.rebase {
        let booted_image = match &booted {
            Some(b) => b.image().map_err(os_err)?,
            None => None,
        };
        if booted_image.as_deref() == Some(image.as_str()) {
            log.push(format!("already on the desired image {image}"));
        } else {
            let source = link_pull_secret(root)?;
            log.push(format!("linked {OSTREE_AUTH_FILE} to {source}"));
            let call = HostCall::Rebase {
                image: image.clone(),
            };
            run_call(host, &call, log)
                .map_err(|e| pivot_err(format!("failed to update OS to {image}: {e}")))?;
        }
    }
    if let Some(args) = &u.kargs {
        run_call(host, &HostCall::Kargs { args: args.clone() }, log)?;
    }
    if let Some(kernel) = &u.kernel {
        if let Some(call) = kernel_switch(kernel, &host.arch()).map_err(os_err)? {
            run_call(host, &call, log)?;
        }
    }
    if let (Some(exts), Some(b)) = (&u.extensions, &booted) {
        match extension_changes(&b.requested_packages, exts) {
            None => log.push("no extension updates required".into()),
            Some(call) => {
                run_call(host, &call, log)?;
                let status = query_status(host)?;
                verify_staged(&status, exts).map_err(os_err)?;
                log.push("verified the extension packages are staged".into());
            }
        }
    }
    Ok(())
}

/// Pulls the extensions image (unless present) and copies its content to `u.content_dir`
/// through a container that never runs.
fn extract_extensions(
    root: &HostRoot,
    host: &mut dyn Host,
    image: &str,
    u: &OsUpdate,
    log: &mut Vec<String>,
) -> Result<(), ApplyError> {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    root.mkdir_all(EXTENSIONS_CONTENT_BASE, 0o755)?;
    let listed = host.podman(&words(&[
        "images",
        "--format=json",
        "--filter",
        &format!("reference={image}"),
    ]))?;
    if !image_listed(&listed).map_err(os_err)? {
        let mut pull = words(&["pull", "-q"]);
        if root.exists(KUBELET_AUTH_FILE)? {
            pull.extend(words(&["--authfile", KUBELET_AUTH_FILE]));
        }
        pull.push(image.to_string());
        host.podman(&pull)?;
        log.push(format!("run podman {}", pull.join(" ")));
    }
    let dir = root.resolve(&u.content_dir)?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| os_err(format!("{}: {e}", u.content_dir)))?;
    }
    let id = host.podman(&words(&[
        "create",
        "--net=none",
        "--annotation=org.openshift.machineconfigoperator.pivot=true",
        "--name",
        &u.container,
        image,
    ]))?;
    let id = match id.trim() {
        "" => u.container.clone(),
        id => id.to_string(),
    };
    let copied = host
        .podman(&words(&["cp", &format!("{id}:/"), &u.content_dir]))
        .map_err(ApplyError::from)
        .and_then(|_| {
            host.chcon(&words(&["-R", "-t", "var_run_t", &u.content_dir]))
                .map_err(|e| {
                    os_err(format!(
                        "changing selinux context on path {}: {e}",
                        u.content_dir
                    ))
                })
        });
    // The container only served the copy; failures to remove it are not the update's.
    let _ = host.podman(&words(&["kill", &u.container]));
    let _ = host.podman(&words(&["rm", "-f", &u.container]));
    copied?;
    log.push(format!("extracted {image} to {}", u.content_dir));
    Ok(())
}

/// Whether `podman images --format=json` listed an image (empty output lists none).
fn image_listed(output: &str) -> Result<bool, String> {
    if output.trim().is_empty() {
        return Ok(false);
    }
    let v: Vec<serde_json::Value> = serde_json::from_str(output)
        .map_err(|e| format!("failed to decode podman image ls output: {e}"))?;
    Ok(!v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repo_points_into_the_extracted_content() {
        assert_eq!(
            repo_file("/run/mco-extensions/os-extensions-content-x"),
            "[coreos-extensions]\nenabled=1\nmetadata_expire=1m\nbaseurl=/run/mco-extensions/os-extensions-content-x/usr/share/rpm-ostree/extensions/\ngpgcheck=0\nskip_if_unavailable=False\n"
        );
    }

    #[test]
    fn a_kernel_switch_is_reverted_only_when_it_is_one() {
        let swapped = Deployment {
            requested_base_removals: DEFAULT_KERNEL.iter().map(|p| p.to_string()).collect(),
            requested_packages: vec![
                "usbguard".into(),
                "kernel-rt-core".into(),
                "kernel-rt-modules".into(),
            ],
            ..Deployment::default()
        };
        assert_eq!(
            revert_kernel_swap(&swapped).map(|c| c.command_line()).as_deref(),
            Some("rpm-ostree override reset kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra --uninstall kernel-rt-core --uninstall kernel-rt-modules")
        );
        // A local kernel hotfix (override without a replacement kernel) is not touched.
        let hotfix = Deployment {
            requested_base_removals: vec!["kernel-core".into()],
            ..Deployment::default()
        };
        assert_eq!(revert_kernel_swap(&hotfix), None);
        assert_eq!(revert_kernel_swap(&Deployment::default()), None);
    }

    #[test]
    fn kernel_switches_by_type_and_architecture() {
        assert_eq!(kernel_switch("default", "x86_64"), Ok(None));
        assert_eq!(kernel_switch("", "x86_64"), Ok(None));
        assert_eq!(
            kernel_switch("realtime", "x86_64").unwrap().map(|c| c.command_line()).as_deref(),
            Some("rpm-ostree override remove kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra --install kernel-rt-core --install kernel-rt-modules --install kernel-rt-modules-extra")
        );
        assert_eq!(
            kernel_switch("64k-pages", "x86_64"),
            Err("64k-pages is only supported for aarch64 architecture".into())
        );
        assert!(kernel_switch("64k-pages", "aarch64").unwrap().is_some());
    }

    #[test]
    fn extension_changes_touch_only_extension_packages() {
        let installed = vec![
            "usbguard".to_string(),
            "htop".to_string(),
            "kernel-rt-core".to_string(),
        ];
        let call = extension_changes(&installed, &["kerberos".into()]);
        assert_eq!(
            call.map(|c| c.command_line()).as_deref(),
            Some("rpm-ostree update --install krb5-workstation --install libkadm5 --uninstall usbguard")
        );
        assert_eq!(extension_changes(&installed, &["usbguard".into()]), None);
    }

    #[test]
    fn staged_verification_names_the_missing_packages() {
        let staged = |pkgs: &[&str]| Status {
            deployments: vec![Deployment {
                staged: true,
                requested_packages: pkgs.iter().map(|p| p.to_string()).collect(),
                ..Deployment::default()
            }],
            transaction: None,
        };
        let want = vec!["kerberos".to_string()];
        assert_eq!(
            verify_staged(&staged(&["krb5-workstation", "libkadm5"]), &want),
            Ok(())
        );
        assert_eq!(
            verify_staged(&staged(&["krb5-workstation"]), &want),
            Err("the following extension packages are missing from the staged deployment: [libkadm5]".into())
        );
        assert_eq!(
            verify_staged(&Status::default(), &want),
            Err("no staged deployment found after applying extensions".into())
        );
        assert_eq!(verify_staged(&Status::default(), &[]), Ok(()));
    }

    #[test]
    fn podman_image_listings() {
        assert_eq!(image_listed(""), Ok(false));
        assert_eq!(image_listed("[]\n"), Ok(false));
        assert_eq!(
            image_listed(r#"[{"Id": "abc", "RepoDigests": []}]"#),
            Ok(true)
        );
        assert!(image_listed("Error: oops").is_err());
    }
}
