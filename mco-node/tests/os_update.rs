//! The OS part of an update, host command by host command, through the recording host: the
//! image rebase with the pull secret linked, extensions from the extensions image, kernel type
//! switches, kernel arguments, everything together in upstream's order, and the failures that
//! roll the update back.

mod common;

use common::*;
use mco_node::apply::os::{EXTENSIONS_REPO, OSTREE_AUTH_FILE};
use mco_node::apply::revert::{self, REVERT_FILE};
use mco_node::apply::{run_update, ApplyOptions};
use mco_node::host::HostError;
use mco_node::state::read_current;
use mco_node::{DesiredConfig, Host, HostRoot, NodeState, RecordingHost};
use serde_json::{json, Value};

const IMAGE_A: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aaaa";
const IMAGE_B: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bbbb";
const EXT_IMAGE: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:eeee";
const CONTENT: &str = "/run/mco-extensions/os-extensions-content-r2";
const PIVOT: &str = "ostree-container-pivot-r2";
const DEFAULT_KERNEL: &str =
    "kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra";

/// A rendered MachineConfig with these spec fields (the Ignition config empty).
fn os_mc(name: &str, spec: Value) -> DesiredConfig {
    let mut s = json!({"config": {"ignition": {"version": "3.4.0"}}});
    if let (Some(m), Some(extra)) = (s.as_object_mut(), spec.as_object()) {
        m.extend(extra.clone());
    }
    let v = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name},
        "spec": s,
    });
    DesiredConfig::from_bytes(v.to_string().as_bytes(), name).expect("config")
}

/// `rpm-ostree status --json` with the booted deployment on `image` layering `packages` and
/// removing `removals`, and, when `staged` is given, a staged deployment layering those.
fn status(image: &str, packages: &[&str], removals: &[&str], staged: Option<&[&str]>) -> String {
    let mut deployments = Vec::new();
    if let Some(pkgs) = staged {
        deployments.push(json!({
            "id": "rhcos-s.0", "osname": "rhcos", "checksum": "s", "base-checksum": "b",
            "booted": false, "staged": true,
            "container-image-reference": format!("ostree-unverified-registry:{image}"),
            "requested-packages": pkgs, "requested-base-removals": removals,
        }));
    }
    deployments.push(json!({
        "id": "rhcos-b.0", "osname": "rhcos", "checksum": "b", "version": "418.94.202410090804-0",
        "booted": true, "staged": false,
        "container-image-reference": format!("ostree-unverified-registry:{image}"),
        "requested-packages": packages, "requested-base-removals": removals,
    }));
    json!({"deployments": deployments, "transaction": null}).to_string()
}

/// The extraction of the extensions image (present locally when `present`).
fn extraction(present: bool) -> Vec<String> {
    let mut v = vec![format!(
        "podman images --format=json --filter reference={EXT_IMAGE}"
    )];
    if !present {
        v.push(format!(
            "podman pull -q --authfile /var/lib/kubelet/config.json {EXT_IMAGE}"
        ));
    }
    v.extend([
        format!("podman create --net=none --annotation=org.openshift.machineconfigoperator.pivot=true --name {PIVOT} {EXT_IMAGE}"),
        format!("podman cp 5e1f0c:/ {CONTENT}"),
        format!("chcon -R -t var_run_t {CONTENT}"),
        format!("podman kill {PIVOT}"),
        format!("podman rm -f {PIVOT}"),
    ]);
    v
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A recording host that also keeps the extensions repo as rpm-ostree sees it.
#[derive(Default)]
struct Spy {
    inner: RecordingHost,
    root: Option<HostRoot>,
    repo_seen: Vec<Option<String>>,
}

impl Spy {
    fn new(root: &HostRoot) -> Spy {
        let mut inner = RecordingHost::new();
        inner
            .respond("podman images", "[]")
            .respond("podman create", "5e1f0c\n");
        Spy {
            inner,
            root: Some(root.clone()),
            repo_seen: Vec::new(),
        }
    }
}

impl Host for Spy {
    fn systemctl(&mut self, args: &[String]) -> Result<(), HostError> {
        self.inner.systemctl(args)
    }
    fn rpm_ostree(&mut self, args: &[String]) -> Result<(), HostError> {
        if let Some(root) = &self.root {
            self.repo_seen.push(read(root, EXTENSIONS_REPO));
        }
        self.inner.rpm_ostree(args)
    }
    fn rpm_ostree_output(&mut self, args: &[String]) -> Result<String, HostError> {
        self.inner.rpm_ostree_output(args)
    }
    fn podman(&mut self, args: &[String]) -> Result<String, HostError> {
        self.inner.podman(args)
    }
    fn chcon(&mut self, args: &[String]) -> Result<(), HostError> {
        self.inner.chcon(args)
    }
    fn reboot(&mut self) -> Result<(), HostError> {
        self.inner.reboot()
    }
    fn arch(&self) -> String {
        self.inner.arch()
    }
}

/// The root of an rpm-ostree host (`/run/ostree-booted`) with the kubelet's pull secret.
fn setup() -> (tempfile::TempDir, HostRoot) {
    let (d, root) = plain_setup();
    write(&root, "/run/ostree-booted", "");
    (d, root)
}

/// The root of a host that is not an rpm-ostree host, with the kubelet's pull secret.
fn plain_setup() -> (tempfile::TempDir, HostRoot) {
    let (d, root) = temp_root();
    write(&root, "/var/lib/kubelet/config.json", r#"{"auths": {}}"#);
    (d, root)
}

/// Everything the OS part can change, with a file and a unit beside it.
fn os_heavy_pair() -> (DesiredConfig, DesiredConfig) {
    let old = os_mc(
        "r1",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE}),
    );
    let new = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_B, "baseOSExtensionsContainerImage": EXT_IMAGE,
               "kernelType": "realtime", "kernelArguments": ["nosmt"], "extensions": ["sysstat"],
               "config": {"ignition": {"version": "3.4.0"},
                   "storage": {"files": [file("/etc/motd", "hi\n")]},
                   "systemd": {"units": [{"name": "hello.service", "enabled": true,
                       "contents": "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}]},
                   "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA core"]}]}}}),
    );
    (old, new)
}

#[test]
fn off_rpm_ostree_hosts_everything_but_the_os_part_is_applied() {
    let (_d, root) = plain_setup();
    let mut host = Spy::new(&root);
    let (old, new) = os_heavy_pair();
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    // Files, units, SSH keys and the reboot; no rpm-ostree, no podman, no pull secret link.
    assert_eq!(read(&root, "/etc/motd").as_deref(), Some("hi\n"));
    assert!(read(&root, "/etc/systemd/system/hello.service").is_some());
    assert!(
        read(&root, "/home/core/.ssh/authorized_keys.d/ignition")
            .is_some_and(|k| k.contains("ssh-ed25519 AAAA core")),
        "{:?}",
        out.log
    );
    assert_eq!(
        host.inner.calls,
        strings(&["systemctl enable hello.service", "reboot"])
    );
    assert!(std::fs::symlink_metadata(host_path(&root, OSTREE_AUTH_FILE)).is_err());
    let skipped: Vec<&String> = out
        .log
        .iter()
        .filter(|l| l.contains("the OS part of the update is skipped"))
        .collect();
    assert_eq!(
        skipped,
        [&"not an rpm-ostree host (no /run/ostree-booted): the OS part of the update is skipped (Upgrading OS; Installing extensions; Changing kernel type; Changing kernel arguments)".to_string()],
        "{:?}",
        out.log
    );
    assert_eq!(
        read_current(&root)
            .map(|c| c.name().to_string())
            .ok()
            .as_deref(),
        Some("r2")
    );
}

#[test]
fn a_failed_update_off_rpm_ostree_hosts_rolls_back_without_rpm_ostree() {
    let (_d, root) = plain_setup();
    let mut host = Spy::new(&root);
    host.inner.fail_on.push("systemctl enable".into());
    let (old, new) = os_heavy_pair();
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Degraded, "{:?}", out.status);
    assert!(
        out.status.reason.contains("rolled back"),
        "{}",
        out.status.reason
    );
    assert!(
        !out.status.reason.contains("undo errors"),
        "{}",
        out.status.reason
    );
    assert!(
        host.inner
            .calls
            .iter()
            .all(|c| !c.starts_with("rpm-ostree")),
        "{:?}",
        host.inner.calls
    );
    assert_eq!(read(&root, "/etc/motd"), None);
}

#[test]
fn a_host_that_only_prints_commands_prints_the_os_steps_and_goes_on() {
    let (_d, root) = setup();
    let (old, new) = os_heavy_pair();
    let opts = ApplyOptions {
        reboot: mco_node::apply::RebootMode::Skip,
        ..ApplyOptions::default()
    };
    let out = run_update(
        &root,
        &mut mco_node::host::PrintHost,
        &old,
        &new,
        opts,
        None,
    );
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(read(&root, "/etc/motd").as_deref(), Some("hi\n"));
    let printed: Vec<&str> = out
        .log
        .iter()
        .filter_map(|l| l.strip_prefix(mco_node::apply::os::NOT_RUN))
        .collect();
    assert_eq!(
        printed,
        strings(&[
            &format!("extract {EXT_IMAGE} to {CONTENT} and write {EXTENSIONS_REPO}"),
            "rpm-ostree cleanup -p",
            "rpm-ostree override reset <the booted deployment's kernel overrides>",
            &format!("link {OSTREE_AUTH_FILE} to the pull secret"),
            &format!("rpm-ostree rebase --experimental ostree-unverified-registry:{IMAGE_B}"),
            "rpm-ostree kargs --append=nosmt",
            &format!("rpm-ostree override remove {DEFAULT_KERNEL} --install kernel-rt-core --install kernel-rt-modules --install kernel-rt-modules-extra"),
            "rpm-ostree update <extension packages of [sysstat] not yet layered>, then verify them staged",
        ]),
        "{:?}",
        out.log
    );
    // Nothing was extracted or linked.
    assert!(std::fs::symlink_metadata(host_path(&root, OSTREE_AUTH_FILE)).is_err());
    assert_eq!(read(&root, EXTENSIONS_REPO), None);
    assert!(out.reboot_pending);
}

fn update(
    root: &HostRoot,
    host: &mut dyn Host,
    old: &DesiredConfig,
    new: &DesiredConfig,
) -> mco_node::ApplyOutcome {
    run_update(root, host, old, new, ApplyOptions::default(), None)
}

#[test]
fn an_os_image_change_links_the_pull_secret_and_rebases() {
    let (_d, root) = setup();
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None));
    let old = os_mc("r1", json!({"osImageURL": IMAGE_A}));
    let new = os_mc("r2", json!({"osImageURL": IMAGE_B}));
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(
        host.calls,
        strings(&[
            "rpm-ostree cleanup -p",
            "rpm-ostree status --json",
            &format!("rpm-ostree rebase --experimental ostree-unverified-registry:{IMAGE_B}"),
            "reboot",
        ])
    );
    let link = std::fs::read_link(host_path(&root, OSTREE_AUTH_FILE)).unwrap();
    assert_eq!(link, std::path::Path::new("/var/lib/kubelet/config.json"));
    assert_eq!(read_current(&root).unwrap().name(), "r2");
}

#[test]
fn the_merged_pull_secret_is_linked_when_valid() {
    let (_d, root) = setup();
    write(
        &root,
        "/etc/mco/internal-registry-pull-secret.json",
        r#"{"auths": {"image-registry.openshift-image-registry.svc:5000": {}}}"#,
    );
    // An older link is replaced.
    std::fs::create_dir_all(host_path(&root, "/run/ostree")).unwrap();
    std::os::unix::fs::symlink("/old/secret.json", host_path(&root, OSTREE_AUTH_FILE)).unwrap();
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None));
    let old = os_mc("r1", json!({"osImageURL": IMAGE_A}));
    let new = os_mc("r2", json!({"osImageURL": IMAGE_B}));
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    let link = std::fs::read_link(host_path(&root, OSTREE_AUTH_FILE)).unwrap();
    assert_eq!(
        link,
        std::path::Path::new("/etc/mco/internal-registry-pull-secret.json")
    );

    // Not JSON: the cluster's pull secret instead.
    write(
        &root,
        "/etc/mco/internal-registry-pull-secret.json",
        "{not json",
    );
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &status(IMAGE_B, &[], &[], None));
    let newer = os_mc("r3", json!({"osImageURL": IMAGE_A}));
    let out = update(&root, &mut host, &new, &newer);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    let link = std::fs::read_link(host_path(&root, OSTREE_AUTH_FILE)).unwrap();
    assert_eq!(link, std::path::Path::new("/var/lib/kubelet/config.json"));
}

#[test]
fn a_host_already_booted_on_the_new_image_is_not_rebased() {
    let (_d, root) = setup();
    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &status(IMAGE_B, &[], &[], None));
    let old = os_mc("r1", json!({"osImageURL": IMAGE_A}));
    let new = os_mc("r2", json!({"osImageURL": IMAGE_B}));
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(
        host.calls,
        strings(&[
            "rpm-ostree cleanup -p",
            "rpm-ostree status --json",
            "reboot"
        ])
    );
    assert!(
        out.log
            .iter()
            .any(|l| l.contains("already on the desired image")),
        "{:?}",
        out.log
    );
}

#[test]
fn extensions_added_come_from_the_extensions_image_and_are_verified_staged() {
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    host.inner
        .respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None))
        .respond(
            "rpm-ostree status --json",
            &status(
                IMAGE_A,
                &[],
                &[],
                Some(&["krb5-workstation", "libkadm5", "usbguard"]),
            ),
        );
    let old = os_mc(
        "r1",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE}),
    );
    let new = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE, "extensions": ["usbguard", "kerberos"]}),
    );
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    let mut want = extraction(false);
    want.extend(strings(&[
        "rpm-ostree cleanup -p",
        "rpm-ostree status --json",
        "rpm-ostree update --install krb5-workstation --install libkadm5 --install usbguard",
        "rpm-ostree status --json",
        "reboot",
    ]));
    assert_eq!(host.inner.calls, want);
    let repo = format!("[coreos-extensions]\nenabled=1\nmetadata_expire=1m\nbaseurl={CONTENT}/usr/share/rpm-ostree/extensions/\ngpgcheck=0\nskip_if_unavailable=False\n");
    // rpm-ostree saw the repo at every call; it is gone afterwards, with the content.
    assert_eq!(host.repo_seen, vec![Some(repo.clone()), Some(repo)]);
    assert_eq!(read(&root, EXTENSIONS_REPO), None);
    assert!(!host_path(&root, CONTENT).exists());
    assert!(host_path(&root, "/run/mco-extensions").is_dir());
}

#[test]
fn extensions_removed_uninstall_only_their_packages() {
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    // The image is already in local storage: no pull.
    host.inner
        .outputs
        .retain(|(prefix, _)| prefix != "podman images");
    host.inner
        .respond("podman images", r#"[{"Id": "e1", "RepoDigests": []}]"#);
    let layered = ["htop", "krb5-workstation", "libkadm5", "usbguard"];
    host.inner
        .respond(
            "rpm-ostree status --json",
            &status(IMAGE_A, &layered, &[], None),
        )
        .respond(
            "rpm-ostree status --json",
            &status(
                IMAGE_A,
                &layered,
                &[],
                Some(&["htop", "krb5-workstation", "libkadm5"]),
            ),
        );
    let old = os_mc(
        "r1",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE, "extensions": ["usbguard", "kerberos"]}),
    );
    let new = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE, "extensions": ["kerberos"]}),
    );
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    let mut want = extraction(true);
    want.extend(strings(&[
        "rpm-ostree cleanup -p",
        "rpm-ostree status --json",
        "rpm-ostree update --uninstall usbguard",
        "rpm-ostree status --json",
        "reboot",
    ]));
    assert_eq!(host.inner.calls, want);
}

#[test]
fn default_to_realtime_kernel() {
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    host.inner
        .respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None));
    let old = os_mc(
        "r1",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE}),
    );
    let new = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE, "kernelType": "realtime"}),
    );
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    let mut want = extraction(false);
    want.extend(strings(&[
        "rpm-ostree cleanup -p",
        "rpm-ostree status --json",
        &format!("rpm-ostree override remove {DEFAULT_KERNEL} --install kernel-rt-core --install kernel-rt-modules --install kernel-rt-modules-extra"),
        "reboot",
    ]));
    assert_eq!(host.inner.calls, want);
    assert!(host.repo_seen.iter().all(Option::is_some));
}

#[test]
fn realtime_to_default_kernel_resets_the_overrides() {
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    let rt = [
        "kernel-rt-core",
        "kernel-rt-modules",
        "kernel-rt-modules-extra",
    ];
    let removals: Vec<&str> = DEFAULT_KERNEL.split(' ').collect();
    host.inner.respond(
        "rpm-ostree status --json",
        &status(IMAGE_A, &rt, &removals, None),
    );
    let old = os_mc(
        "r1",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE, "kernelType": "realtime"}),
    );
    let new = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE}),
    );
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    let mut want = extraction(false);
    want.extend(strings(&[
        "rpm-ostree cleanup -p",
        "rpm-ostree status --json",
        &format!("rpm-ostree override reset {DEFAULT_KERNEL} --uninstall kernel-rt-core --uninstall kernel-rt-modules --uninstall kernel-rt-modules-extra"),
        "reboot",
    ]));
    assert_eq!(host.inner.calls, want);
}

#[test]
fn the_64k_pages_kernel_on_aarch64_and_refused_elsewhere() {
    let (_d, root) = setup();
    let old = os_mc("r1", json!({"osImageURL": IMAGE_A}));
    let new = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_A, "kernelType": "64k-pages"}),
    );
    let mut host = RecordingHost::new();
    host.arch = "aarch64".into();
    host.respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None));
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(
        host.calls,
        strings(&[
            "rpm-ostree cleanup -p",
            "rpm-ostree status --json",
            &format!("rpm-ostree override remove {DEFAULT_KERNEL} --install kernel-64k-core --install kernel-64k-modules --install kernel-64k-modules-core --install kernel-64k-modules-extra"),
            "reboot",
        ])
    );

    let (_d, root) = setup();
    let mut host = RecordingHost::new();
    host.arch = "x86_64".into();
    host.respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None));
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Degraded);
    assert!(
        out.status
            .reason
            .starts_with("64k-pages is only supported for aarch64 architecture; rolled back to r1"),
        "{}",
        out.status.reason
    );
    // The undo drops whatever rpm-ostree staged.
    assert_eq!(
        host.calls,
        strings(&[
            "rpm-ostree cleanup -p",
            "rpm-ostree status --json",
            "rpm-ostree cleanup -p"
        ])
    );
}

#[test]
fn kernel_arguments_need_no_status() {
    let (_d, root) = setup();
    let mut host = RecordingHost::new();
    let old = os_mc(
        "r1",
        json!({"osImageURL": IMAGE_A, "kernelArguments": ["a=1", "nosmt"]}),
    );
    let new = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_A, "kernelArguments": ["a=2", "nosmt", "b"]}),
    );
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(
        host.calls,
        strings(&[
            "rpm-ostree cleanup -p",
            "rpm-ostree kargs --delete-if-present=a=1 --delete-if-present=nosmt --append=a=2 --append=nosmt --append=b",
            "reboot",
        ])
    );
}

#[test]
fn everything_at_once_in_upstreams_order() {
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    host.inner
        .respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None))
        .respond(
            "rpm-ostree status --json",
            &status(
                IMAGE_B,
                &[],
                &[],
                Some(&[
                    "kernel-rt-core",
                    "kernel-rt-modules",
                    "kernel-rt-modules-extra",
                    "sysstat",
                ]),
            ),
        );
    let old = os_mc(
        "r1",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE}),
    );
    let new = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_B, "baseOSExtensionsContainerImage": EXT_IMAGE,
               "kernelType": "realtime", "kernelArguments": ["nosmt"], "extensions": ["sysstat"]}),
    );
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    let mut want = extraction(false);
    want.extend(strings(&[
        "rpm-ostree cleanup -p",
        "rpm-ostree status --json",
        &format!("rpm-ostree rebase --experimental ostree-unverified-registry:{IMAGE_B}"),
        "rpm-ostree kargs --append=nosmt",
        &format!("rpm-ostree override remove {DEFAULT_KERNEL} --install kernel-rt-core --install kernel-rt-modules --install kernel-rt-modules-extra"),
        "rpm-ostree update --install sysstat",
        "rpm-ostree status --json",
        "reboot",
    ]));
    assert_eq!(host.inner.calls, want);
    assert!(std::fs::read_link(host_path(&root, OSTREE_AUTH_FILE)).is_ok());
}

#[test]
fn a_realtime_node_keeps_its_kernel_current_on_other_updates() {
    // Upstream runs the OS step on every update of a realtime node (OCPBUGS-4049): the
    // extensions repo is there, pending deployments dropped, nothing else changes.
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    let spec = json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE, "kernelType": "realtime"});
    let old = os_mc("r1", spec.clone());
    let mut new_spec = spec;
    new_spec["config"] = json!({"ignition": {"version": "3.4.0"}, "storage": {"files": [file("/etc/motd", "hi\n")]}});
    let new = os_mc("r2", new_spec);
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    let mut want = extraction(false);
    // A file change reboots anyway (the default policy).
    want.extend(strings(&["rpm-ostree cleanup -p", "reboot"]));
    assert_eq!(host.inner.calls, want);
    assert_eq!(read(&root, "/etc/motd").as_deref(), Some("hi\n"));
}

#[test]
fn a_failing_extensions_install_rolls_back() {
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    host.inner.fail_on.push("rpm-ostree update".into());
    host.inner
        .respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None));
    let old = os_mc(
        "r1",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE}),
    );
    let mut new_spec = json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE, "extensions": ["usbguard"]});
    new_spec["config"] = json!({"ignition": {"version": "3.4.0"}, "storage": {"files": [file("/etc/usbguard/rules.conf", "allow\n")]}});
    let new = os_mc("r2", new_spec);
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Degraded);
    assert!(
        out.status
            .reason
            .starts_with("rpm-ostree update --install usbguard: exit status: 1"),
        "{}",
        out.status.reason
    );
    assert!(
        out.status.reason.ends_with("rolled back to r1"),
        "{}",
        out.status.reason
    );
    let mut want = extraction(false);
    want.extend(strings(&[
        "rpm-ostree cleanup -p",
        "rpm-ostree status --json",
        "rpm-ostree update --install usbguard",
        "rpm-ostree cleanup -p",
    ]));
    assert_eq!(host.inner.calls, want);
    // Everything else is back: the file, the current config; the repo and content are gone.
    assert_eq!(read(&root, "/etc/usbguard/rules.conf"), None);
    assert_eq!(read_current(&root).unwrap().name(), "");
    assert_eq!(read(&root, EXTENSIONS_REPO), None);
    assert!(!host_path(&root, CONTENT).exists());
}

#[test]
fn extensions_missing_from_the_staged_deployment_roll_back() {
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    host.inner
        .respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None))
        .respond(
            "rpm-ostree status --json",
            &status(IMAGE_A, &[], &[], Some(&["krb5-workstation"])),
        );
    let old = os_mc(
        "r1",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE}),
    );
    let new = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE, "extensions": ["kerberos"]}),
    );
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Degraded);
    assert!(
        out.status.reason.starts_with(
            "the following extension packages are missing from the staged deployment: [libkadm5]"
        ),
        "{}",
        out.status.reason
    );
    assert_eq!(
        host.inner.calls.last().map(String::as_str),
        Some("rpm-ostree cleanup -p")
    );
    assert!(!host.inner.calls.contains(&"reboot".to_string()));
}

#[test]
fn a_failing_extensions_image_pull_stops_before_rpm_ostree() {
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    host.inner.fail_on.push("podman pull".into());
    let old = os_mc(
        "r1",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE}),
    );
    let new = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE, "extensions": ["sysstat"]}),
    );
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Degraded);
    assert!(
        out.status.reason.starts_with(&format!(
            "error pulling extensions image {EXT_IMAGE}: podman pull"
        )),
        "{}",
        out.status.reason
    );
    assert_eq!(
        host.inner.calls,
        vec![
            format!("podman images --format=json --filter reference={EXT_IMAGE}"),
            format!("podman pull -q --authfile /var/lib/kubelet/config.json {EXT_IMAGE}"),
            "rpm-ostree cleanup -p".into(),
        ]
    );
}

const BUILT: &str = "image-registry.example.com/mco/os-worker@sha256:1234";

/// The configs of a realtime node with an extension, on its base image (r1) and on r2, which
/// changes a file and the SSH keys as well.
fn realtime_pair() -> (DesiredConfig, DesiredConfig) {
    let spec = json!({"osImageURL": IMAGE_A, "baseOSExtensionsContainerImage": EXT_IMAGE,
                      "kernelType": "realtime", "extensions": ["sysstat"]});
    let old = os_mc("r1", spec.clone());
    let mut new_spec = spec;
    new_spec["kernelArguments"] = json!(["nosmt"]);
    new_spec["config"] = json!({"ignition": {"version": "3.4.0"},
        "storage": {"files": [file("/etc/motd", "hi\n")]},
        "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA core"]}]}});
    (old, os_mc("r2", new_spec))
}

#[test]
fn a_layered_image_is_rebased_to_with_kernel_and_extensions_left_to_it() {
    // Upstream's applyLayeredOSChanges with oclEnabled: no extensions image, no kernel
    // overrides, no extension packages; the rebase to the built image and the kernel
    // arguments only. The files and SSH keys are written as for any update.
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    host.inner
        .respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None));
    let (old, new) = realtime_pair();
    let layered = new.with_image(BUILT);
    let out = update(&root, &mut host, &old, &layered);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(
        host.inner.calls,
        strings(&[
            "rpm-ostree cleanup -p",
            "rpm-ostree status --json",
            &format!("rpm-ostree rebase --experimental ostree-unverified-registry:{BUILT}"),
            "rpm-ostree kargs --append=nosmt",
            "reboot",
        ])
    );
    let link = std::fs::read_link(host_path(&root, OSTREE_AUTH_FILE)).unwrap();
    assert_eq!(link, std::path::Path::new("/var/lib/kubelet/config.json"));
    assert_eq!(read(&root, "/etc/motd").as_deref(), Some("hi\n"));
    assert!(read(&root, "/home/core/.ssh/authorized_keys.d/ignition")
        .is_some_and(|k| k.contains("ssh-ed25519 AAAA core")));
    let on_disk = read_current(&root).unwrap();
    assert_eq!((on_disk.name(), on_disk.image()), ("r2", BUILT));
}

#[test]
fn leaving_layering_rebases_back_and_reapplies_kernel_and_extensions() {
    // The plain r1 after the built image: its own osImageURL, and its realtime kernel and
    // extension over it (the built image carried them, the base image does not).
    let (_d, root) = setup();
    let mut host = Spy::new(&root);
    host.inner
        .respond("rpm-ostree status --json", &status(BUILT, &[], &[], None))
        .respond(
            "rpm-ostree status --json",
            &status(
                IMAGE_A,
                &[],
                &[],
                Some(&[
                    "kernel-rt-core",
                    "kernel-rt-modules",
                    "kernel-rt-modules-extra",
                    "sysstat",
                ]),
            ),
        );
    let (plain, _) = realtime_pair();
    let layered = plain.with_image(BUILT);
    let out = update(&root, &mut host, &layered, &plain);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    // The extraction is named after the config moved to, r1 here.
    let mut want: Vec<String> = extraction(false)
        .into_iter()
        .map(|c| c.replace("-r2", "-r1"))
        .collect();
    want.extend(strings(&[
        "rpm-ostree cleanup -p",
        "rpm-ostree status --json",
        &format!("rpm-ostree rebase --experimental ostree-unverified-registry:{IMAGE_A}"),
        &format!("rpm-ostree override remove {DEFAULT_KERNEL} --install kernel-rt-core --install kernel-rt-modules --install kernel-rt-modules-extra"),
        "rpm-ostree update --install sysstat",
        "rpm-ostree status --json",
        "reboot",
    ]));
    assert_eq!(host.inner.calls, want);
    let on_disk = read_current(&root).unwrap();
    assert_eq!(
        (on_disk.image(), on_disk.input.os_image_url.as_str()),
        ("", IMAGE_A)
    );
    let kept = read(&root, REVERT_FILE).unwrap_or_default();
    assert_eq!(
        DesiredConfig::from_bytes(kept.as_bytes(), REVERT_FILE)
            .map(|c| c.name().to_string())
            .ok()
            .as_deref(),
        Some("r1")
    );
}

#[test]
fn after_leaving_layering_the_files_the_image_held_are_written_again() {
    let (_d, root) = setup();
    let (_, plain) = realtime_pair();
    let layered = plain.with_image(BUILT);
    // The simulated rpm-ostree answers the status, the staged packages included.
    let mut host = RecordingHost::new();
    host.respond("podman images", "[]");
    // The built image holds the files: nothing of r2 is on this root yet.
    let opts = ApplyOptions {
        check_drift: false,
        ..ApplyOptions::default()
    };
    let out = run_update(&root, &mut host, &layered, &plain, opts, None);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert!(read(&root, REVERT_FILE).is_some());
    // The reboot into the base image: /etc/motd was the built image's and is gone.
    std::fs::remove_file(host_path(&root, "/etc/motd")).unwrap();
    let mut after = RecordingHost::new();
    let done = revert::finish(&root, &mut after);
    assert!(matches!(done, revert::Finished::Rewritten(_)), "{done:?}");
    assert_eq!(read(&root, "/etc/motd").as_deref(), Some("hi\n"));
    assert!(read(&root, "/home/core/.ssh/authorized_keys.d/ignition")
        .is_some_and(|k| k.contains("ssh-ed25519 AAAA core")));
    // No OS change, no reboot (the kernel and extensions were staged with the rebase).
    assert!(after.calls.is_empty(), "{:?}", after.calls);
    assert_eq!(read(&root, REVERT_FILE), None);
    assert_eq!(read_current(&root).unwrap().name(), "r2");
    assert_eq!(revert::finish(&root, &mut after), revert::Finished::Nothing);
}

#[test]
fn a_kept_config_that_does_not_decode_is_a_failure_and_stays() {
    let (_d, root) = setup();
    write(&root, REVERT_FILE, "{");
    let done = revert::finish(&root, &mut RecordingHost::new());
    assert!(
        matches!(&done, revert::Finished::Failed(r) if r.contains(REVERT_FILE)),
        "{done:?}"
    );
    assert!(read(&root, REVERT_FILE).is_some());
}

#[test]
fn a_failed_rebase_to_a_layered_image_rolls_back_to_the_plain_config() {
    let (_d, root) = setup();
    let mut host = RecordingHost::failing_on("rpm-ostree rebase");
    host.respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None));
    let (old, new) = realtime_pair();
    // Start on r1 on disk.
    let first = update(
        &root,
        &mut RecordingHost::new(),
        &mco_node::DesiredConfig::empty(),
        &old,
    );
    assert_ne!(
        first.status.state,
        NodeState::Unreconcilable,
        "{:?}",
        first.status
    );
    let layered = new.with_image(BUILT);
    let out = update(&root, &mut host, &old, &layered);
    assert_eq!(out.status.state, NodeState::Degraded, "{:?}", out.status);
    assert!(
        out.status
            .reason
            .starts_with(&format!("failed to update OS to {BUILT}")),
        "{}",
        out.status.reason
    );
    assert!(
        out.status.reason.contains("rolled back to r1"),
        "{}",
        out.status.reason
    );
    // The staged deployment discarded, the file gone, the plain config still on disk.
    assert_eq!(
        host.calls.last().map(String::as_str),
        Some("rpm-ostree cleanup -p")
    );
    assert_eq!(read(&root, "/etc/motd"), None);
    let on_disk = read_current(&root).unwrap();
    assert_eq!((on_disk.name(), on_disk.image()), ("r1", ""));
}

/// `ApplyOutcome::pivot`, which `mcd_pivot_errors_total` follows: a failed rebase is a pivot
/// error, an OS update that goes through clears it, a failure before the rebase (the
/// extensions image) or an update without an OS part says nothing.
#[test]
fn the_outcome_says_whether_the_pivot_failed() {
    let (_d, root) = setup();
    let old = os_mc("r1", json!({"osImageURL": IMAGE_A}));
    let new = os_mc("r2", json!({"osImageURL": IMAGE_B}));

    let mut host = RecordingHost::failing_on("rpm-ostree rebase");
    host.respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None));
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Degraded, "{:?}", out.status);
    assert_eq!(out.pivot, Some(true));

    let mut host = RecordingHost::new();
    host.respond("rpm-ostree status --json", &status(IMAGE_A, &[], &[], None));
    let out = update(&root, &mut host, &old, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(out.pivot, Some(false));

    let mut host = Spy::new(&root);
    host.inner.fail_on.push("podman pull".into());
    let ext_old = os_mc(
        "r2",
        json!({"osImageURL": IMAGE_B, "baseOSExtensionsContainerImage": EXT_IMAGE}),
    );
    let ext_new = os_mc(
        "r3",
        json!({"osImageURL": IMAGE_B, "baseOSExtensionsContainerImage": EXT_IMAGE, "extensions": ["sysstat"]}),
    );
    let out = update(&root, &mut host, &ext_old, &ext_new);
    assert_eq!(out.status.state, NodeState::Degraded, "{:?}", out.status);
    assert_eq!(out.pivot, None);

    let files_only = os_mc(
        "r4",
        json!({"osImageURL": IMAGE_B, "config": {"ignition": {"version": "3.4.0"},
               "storage": {"files": [file("/etc/motd", "hi\n")]}}}),
    );
    let out = update(&root, &mut RecordingHost::new(), &new, &files_only);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(out.pivot, None);
}
