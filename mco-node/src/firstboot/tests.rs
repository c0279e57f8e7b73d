use super::*;
use crate::host::RecordingHost;
use crate::state::read_current;
use serde_json::{json, Value};

/// A plain root: not an rpm-ostree host.
fn root() -> (tempfile::TempDir, HostRoot) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let root = HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("root: {e}"));
    (dir, root)
}

/// The root of an rpm-ostree host (`/run/ostree-booted`), where the first boot applies the OS.
fn rpm_ostree_root() -> (tempfile::TempDir, HostRoot) {
    let (dir, root) = root();
    put(&root, crate::rpm_ostree::OSTREE_BOOTED, b"");
    (dir, root)
}

fn put(root: &HostRoot, path: &str, data: &[u8]) {
    let mut dirty = BTreeSet::new();
    root.write_atomic(path, data, 0o644, None, 0o755, false, &mut dirty)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
}

fn exists(root: &HostRoot, path: &str) -> bool {
    root.exists(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The encapsulated MachineConfig the server appends: the rendered spec, an empty config.
fn encapsulated(spec: Value) -> Vec<u8> {
    let mut spec = spec;
    spec["config"] = json!({"ignition": {"version": "3.4.0"}});
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "rendered-worker-abc"},
        "spec": spec,
    })
    .to_string()
    .into_bytes()
}

#[test]
fn without_the_encapsulated_config_the_first_boot_is_complete() {
    let (_d, root) = root();
    let mut host = RecordingHost::new();
    let out = complete_machine_config(&root, &mut host, Some("quay.io/os@sha256:1"));
    assert_eq!(out.ok(), Some(Firstboot::AlreadyComplete));
    assert!(host.calls.is_empty());
}

#[test]
fn a_boot_image_that_already_matches_only_loses_the_file() {
    let (_d, root) = rpm_ostree_root();
    put(
        &root,
        PROC_CMDLINE,
        b"BOOT_IMAGE=/vmlinuz root=UUID=1 nosmt rw\n",
    );
    put(
        &root,
        ENCAPSULATED_PATH,
        &encapsulated(json!({"osImageURL": "quay.io/os@sha256:1", "kernelArguments": ["nosmt"]})),
    );
    let mut host = RecordingHost::new();
    let out = complete_machine_config(&root, &mut host, Some("quay.io/os@sha256:1"));
    assert_eq!(
        out.ok(),
        Some(Firstboot::NoChanges {
            config: "rendered-worker-abc".into()
        })
    );
    assert!(host.calls.is_empty(), "{:?}", host.calls);
    assert!(!exists(&root, ENCAPSULATED_PATH));
    assert!(!exists(&root, ENCAPSULATED_BAK_PATH));
    assert!(!exists(&root, CURRENT_CONFIG));
}

#[test]
fn os_changes_from_the_boot_image_are_applied_then_the_host_reboots() {
    let (_d, root) = rpm_ostree_root();
    put(&root, PROC_CMDLINE, b"root=UUID=1 nosmt rw\n");
    put(
        &root,
        ENCAPSULATED_PATH,
        &encapsulated(json!({
            "osImageURL": "quay.io/os@sha256:2",
            "kernelArguments": ["nosmt", "hugepages=4"],
            "kernelType": "realtime",
        })),
    );
    let mut host = RecordingHost::new();
    let out = complete_machine_config(&root, &mut host, Some("quay.io/os@sha256:1"));
    let Ok(Firstboot::Rebooting { config, .. }) = out else {
        panic!("{out:?}");
    };
    assert_eq!(config, "rendered-worker-abc");
    // The kernel arguments the boot already has are re-ordered as upstream's kargs diff does
    // (delete, then append in the config's order); the host reboots last.
    assert_eq!(
        host.calls,
        [
            "rpm-ostree cleanup -p",
            "rpm-ostree status --json",
            "rpm-ostree rebase --experimental ostree-unverified-registry:quay.io/os@sha256:2",
            "rpm-ostree kargs --delete-if-present=nosmt --append=nosmt --append=hugepages=4",
            "rpm-ostree override remove kernel kernel-core kernel-modules kernel-modules-core \
             kernel-modules-extra --install kernel-rt-core --install kernel-rt-modules \
             --install kernel-rt-modules-extra",
            "reboot",
        ]
    );
    assert!(!exists(&root, ENCAPSULATED_PATH));
    assert!(exists(&root, ENCAPSULATED_BAK_PATH));
    let current = read_current(&root).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(current.name(), "rendered-worker-abc");
}

#[test]
fn off_rpm_ostree_hosts_the_os_part_does_not_apply_and_the_host_does_not_reboot() {
    let (_d, root) = root();
    put(&root, PROC_CMDLINE, b"root=UUID=1 rw\n");
    put(
        &root,
        ENCAPSULATED_PATH,
        &encapsulated(json!({
            "osImageURL": "quay.io/os@sha256:2",
            "kernelArguments": ["nosmt"],
            "extensions": ["usbguard"],
        })),
    );
    let mut host = RecordingHost::new();
    let out = complete_machine_config(&root, &mut host, None);
    assert_eq!(
        out.ok(),
        Some(Firstboot::NotRpmOstree {
            config: "rendered-worker-abc".into()
        })
    );
    assert!(host.calls.is_empty(), "{:?}", host.calls);
    assert!(!exists(&root, ENCAPSULATED_PATH));
    assert!(!exists(&root, CURRENT_CONFIG));
    // Done once: the next boot finds nothing to complete.
    let again = complete_machine_config(&root, &mut host, None);
    assert_eq!(again.ok(), Some(Firstboot::AlreadyComplete));
}

#[test]
fn a_fips_mode_the_machine_was_not_installed_with_is_refused() {
    let (_d, root) = rpm_ostree_root();
    put(&root, FIPS_ENABLED, b"0\n");
    put(
        &root,
        ENCAPSULATED_PATH,
        &encapsulated(json!({"fips": true})),
    );
    let mut host = RecordingHost::new();
    let out = complete_machine_config(&root, &mut host, None);
    let err = out.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("FIPS"), "{err}");
    assert!(host.calls.is_empty());
    assert!(exists(&root, ENCAPSULATED_PATH), "kept for another try");
}

#[test]
fn an_unreadable_encapsulated_config_names_the_file() {
    let (_d, root) = root();
    put(&root, ENCAPSULATED_PATH, b"{not json");
    let err = complete_machine_config(&root, &mut RecordingHost::new(), None)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains(ENCAPSULATED_PATH), "{err}");
}

#[test]
fn the_initial_annotations_are_read_until_the_bootstrap_finishes() {
    let (_d, root) = root();
    assert_eq!(read_initial_annotations(&root).ok(), Some(None));
    let annos = json!({
        "machineconfiguration.openshift.io/currentConfig": "rendered-worker-abc",
        "machineconfiguration.openshift.io/desiredConfig": "rendered-worker-abc",
        "machineconfiguration.openshift.io/state": "Done",
    });
    put(&root, NODE_ANNOTATIONS_PATH, annos.to_string().as_bytes());
    let read = read_initial_annotations(&root)
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_default();
    assert_eq!(read.len(), 3);
    assert_eq!(
        read.get("machineconfiguration.openshift.io/state")
            .map(String::as_str),
        Some("Done")
    );

    let full = DesiredConfig::from_bytes(
        &json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfig",
            "metadata": {"name": "rendered-worker-abc"},
            "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": [
                {"path": "/etc/a", "contents": {"source": "data:,x"}}]}}},
        })
        .to_string()
        .into_bytes(),
        "full",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    finish_bootstrap(&root, &full).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read_initial_annotations(&root).ok(), Some(None));
    assert!(exists(&root, NODE_ANNOTATIONS_BAK_PATH));
    let current = read_current(&root).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(current.input.config.storage.files.len(), 1);
}

#[test]
fn bad_initial_annotations_name_the_file() {
    let (_d, root) = root();
    put(&root, NODE_ANNOTATIONS_PATH, b"[1]");
    let err = read_initial_annotations(&root)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains(NODE_ANNOTATIONS_PATH), "{err}");
}

#[test]
fn the_booted_image_comes_from_rpm_ostree_on_rpm_ostree_hosts() {
    let (_d, root) = root();
    let mut host = RecordingHost::new();
    assert_eq!(read_booted_image(&root, &mut host).ok(), Some(None));
    assert!(
        host.calls.is_empty(),
        "not an rpm-ostree host: no status asked"
    );
    put(&root, crate::rpm_ostree::OSTREE_BOOTED, b"");
    host.respond(
        "rpm-ostree status",
        &json!({"deployments": [{
            "booted": true,
            "container-image-reference": "ostree-unverified-registry:quay.io/os@sha256:1",
            "requested-packages": [], "requested-local-packages": [],
            "base-removals": [], "base-local-replacements": []
        }]})
        .to_string(),
    );
    assert_eq!(
        read_booted_image(&root, &mut host).ok(),
        Some(Some("quay.io/os@sha256:1".to_string()))
    );
    // A host that only prints commands cannot say: no image, and nothing asked of it.
    let printed = read_booted_image(&root, &mut crate::host::PrintHost);
    assert_eq!(printed.ok(), Some(None));
}
