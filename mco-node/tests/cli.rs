//! The binary's `once-from --dry-run`, `try` and `certs-from` modes on temporary roots.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_machine-config-daemon");

fn setup(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let root = dir.join("root");
    common::seed_users(&root);
    let write = |name: &str, contents: &str| {
        let ign = json!({"ignition": {"version": "3.2.0"},
            "storage": {"files": [common::file("/etc/containers/policy.json", contents)]}});
        let p = dir.join(name);
        std::fs::write(&p, ign.to_string()).unwrap();
        p
    };
    (root.clone(), write("a.ign", "old"), write("b.ign", "new"))
}

fn run(args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn dry_run_lists_every_file_and_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (root, a, _) = setup(d.path());
    let r = root.to_str().unwrap();
    let (ok, out) = run(&["once-from", a.to_str().unwrap(), "--root", r, "--dry-run"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("would write /etc/containers/policy.json (3 bytes, mode 0644, owner 0:0)"),
        "{out}"
    );
    assert!(
        out.contains("would write /etc/machine-config-daemon/currentconfig"),
        "{out}"
    );
    assert!(out.contains("\"step\":\"writeFile\""), "{out}");
    assert!(out.contains("then systemctl reload crio.service"), "{out}");
    assert!(!root.join("etc/containers").exists());
    assert!(!root.join("etc/machine-config-daemon").exists());
}

#[test]
fn try_reverts_when_the_health_command_fails_and_keeps_when_it_passes() {
    let d = tempfile::tempdir().unwrap();
    let (root, a, b) = setup(d.path());
    let r = root.to_str().unwrap();
    let policy = root.join("etc/containers/policy.json");
    let (ok, out) = run(&["once-from", a.to_str().unwrap(), "--root", r]);
    assert!(ok, "{out}");
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), "old");

    let check = "test \"$(cat \"$MCD_ROOT/etc/containers/policy.json\")\" = new && exit 3";
    let (ok, out) = run(&[
        "try",
        b.to_str().unwrap(),
        "--root",
        r,
        "--health-cmd",
        check,
        "--timeout",
        "10",
    ]);
    assert!(!ok, "{out}");
    assert!(out.contains("state: Degraded"), "{out}");
    assert!(out.contains("health check failed"), "{out}");
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), "old");

    let (ok, out) = run(&[
        "try",
        b.to_str().unwrap(),
        "--root",
        r,
        "--health-cmd",
        "true",
        "--timeout",
        "10",
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("state: Done"), "{out}");
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), "new");

    let (ok, out) = run(&[
        "try",
        a.to_str().unwrap(),
        "--root",
        r,
        "--health-cmd",
        "sleep 5",
        "--timeout",
        "1",
    ]);
    assert!(!ok, "{out}");
    assert!(out.contains("timed out"), "{out}");
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), "new");
}

#[test]
fn cluster_mode_needs_a_node_name() {
    let d = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["cluster", "--root", d.path().to_str().unwrap()])
        .env_remove("NODE_NAME")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--node-name or NODE_NAME"), "{err}");
}

#[test]
fn policies_file_changes_the_planned_action() {
    let d = tempfile::tempdir().unwrap();
    let (root, a, b) = setup(d.path());
    let r = root.to_str().unwrap();
    let (ok, out) = run(&["once-from", a.to_str().unwrap(), "--root", r]);
    assert!(ok, "{out}");
    let policies = d.path().join("machineconfiguration.yaml");
    std::fs::write(
        &policies,
        "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  name: cluster\n\
         spec:\n  nodeDisruptionPolicy:\n    files:\n    - path: /etc/containers/policy.json\n      \
         actions:\n      - type: Restart\n        restart:\n          serviceName: podman.socket\n",
    )
    .unwrap();
    let b = b.to_str().unwrap();
    let (ok, out) = run(&["once-from", b, "--root", r, "--dry-run"]);
    assert!(ok, "{out}");
    assert!(out.contains("then systemctl reload crio.service"), "{out}");
    let p = policies.to_str().unwrap();
    let (ok, out) = run(&["once-from", b, "--root", r, "--dry-run", "--policies", p]);
    assert!(ok, "{out}");
    assert!(
        out.contains("then systemctl restart podman.socket"),
        "{out}"
    );
    assert!(!out.contains("crio.service"), "{out}");
    // Anything but a MachineConfiguration is refused before touching the root.
    let (ok, _) = run(&["once-from", b, "--root", r, "--policies", b]);
    assert!(!ok);
}

/// The DaemonSet in manifests/ runs the agent with arguments it accepts.
#[test]
fn daemonset_command_is_accepted() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests/05-daemon.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let ds: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
    let cmd: Vec<&str> = ds
        .pointer("/spec/template/spec/containers/0/command")
        .and_then(|c| c.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(cmd.first(), Some(&"machine-config-daemon"), "{cmd:?}");
    // Without NODE_NAME the agent stops before touching anything, after parsing.
    let out = Command::new(BIN)
        .args(&cmd[1..])
        .env_remove("NODE_NAME")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!err.contains("Usage:"), "{cmd:?}: {err}");
    assert!(err.contains("NODE_NAME"), "{cmd:?}: {err}");
}

/// The arguments the first-boot unit template passes after the image name.
fn firstboot_unit_args() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../templates/common/_base/units/machine-config-daemon-firstboot.service.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("ExecStart="))
        .unwrap();
    let after = line
        .split("firstboot-complete-machineconfig")
        .nth(1)
        .unwrap();
    std::iter::once("firstboot-complete-machineconfig".to_string())
        .chain(after.split_whitespace().map(str::to_string))
        .collect()
}

#[test]
fn the_first_boot_unit_applies_the_encapsulated_config_and_reboots() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    common::seed_users(&root);
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::write(root.join("proc/cmdline"), "root=UUID=1 rw\n").unwrap();
    // An rpm-ostree host's root.
    std::fs::create_dir_all(root.join("run")).unwrap();
    std::fs::write(root.join("run/ostree-booted"), "").unwrap();
    let mc = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": "rendered-worker-1"},
        "spec": {"config": {"ignition": {"version": "3.4.0"}}, "kernelArguments": ["nosmt"]}
    });
    std::fs::write(
        root.join("etc/ignition-machine-config-encapsulated.json"),
        mc.to_string(),
    )
    .unwrap();
    // The unit's own arguments, with the root and a printing host for the test.
    let mut args = firstboot_unit_args();
    assert_eq!(
        args[1..],
        ["--root", "/rootfs", "--host", "nsenter"],
        "{args:?}"
    );
    args[2] = root.to_str().unwrap().into();
    args[4] = "print".into();
    let out = Command::new(BIN).args(&args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("rebooting"), "{stdout}");
    // The printing host runs nothing: the OS steps are printed, not asked of it.
    assert!(
        stdout.contains("not run (the host only prints commands): rpm-ostree kargs --append=nosmt"),
        "{stdout}"
    );
    assert!(stderr.contains("host (not run): reboot"), "{stderr}");
    assert!(root
        .join("etc/ignition-machine-config-encapsulated.json.bak")
        .exists());
    // Run again (the unit's condition would skip it): nothing left to do.
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("already complete"));
}

/// The example cluster's rendered worker config (OS image, kernel arguments, extensions,
/// files, SSH keys), rendered as `mco-render render --pool worker examples/cluster` renders
/// it, written to `dir`.
fn example_rendered_worker(dir: &Path) -> std::path::PathBuf {
    use mco_render::manifests::expand::{expand_manifests, ClusterOptions};
    let cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/cluster");
    let mut m = mco_render::load::read_manifests(&[cluster]).unwrap();
    assert!(expand_manifests(&mut m, &ClusterOptions::default()).is_empty());
    let pool = m
        .pools
        .iter()
        .map(|(_, p)| p)
        .find(|p| p.name() == "worker")
        .unwrap();
    let cc = m.controller_config.as_ref().unwrap().1.spec.clone();
    let rendered = mco_render::render_pool(pool, &m.configs(), &cc, &Default::default()).unwrap();
    let mc = &rendered.machine_config;
    assert!(!mc.spec.os_image_url.is_empty());
    assert!(!mc.spec.kernel_arguments.is_empty() && !mc.spec.extensions.is_empty());
    let path = dir.join("rendered-worker.yaml");
    std::fs::write(&path, serde_yaml_ng::to_string(mc).unwrap()).unwrap();
    path
}

#[test]
fn once_from_under_another_root_applies_the_files_and_skips_the_os_part() {
    let d = tempfile::tempdir().unwrap();
    let config = example_rendered_worker(d.path());
    // An empty root but for the users the SSH keys belong to.
    let root = d.path().join("root");
    common::seed_users(&root);
    let r = root.to_str().unwrap();
    let (ok, planned) = run(&[
        "once-from",
        config.to_str().unwrap(),
        "--root",
        r,
        "--dry-run",
    ]);
    assert!(ok, "{planned}");
    assert!(
        planned.contains("would skip the OS part (Upgrading OS; Installing extensions; Changing kernel arguments): not an rpm-ostree host (no /run/ostree-booted)"),
        "{planned}"
    );
    let out = Command::new(BIN)
        .args(["once-from", config.to_str().unwrap(), "--root", r])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("state: Done"), "{stdout}");
    assert!(
        stdout.contains("not an rpm-ostree host (no /run/ostree-booted): the OS part of the update is skipped (Upgrading OS; Installing extensions; Changing kernel arguments)"),
        "{stdout}"
    );
    assert!(root.join("etc/chrony.conf").is_file());
    assert!(root
        .join("home/core/.ssh/authorized_keys.d/ignition")
        .is_file());
    let current = std::fs::read_to_string(root.join("etc/machine-config-daemon/currentconfig"));
    assert!(current.unwrap().contains("rendered-worker-"));
    // Host commands were printed, none of rpm-ostree or podman.
    assert!(stderr.contains("host (not run): reboot"), "{stderr}");
    assert!(
        !stderr.contains("rpm-ostree") && !stderr.contains("podman"),
        "{stderr}"
    );
}

/// The README's command into a folder holding nothing at all (no user database: the SSH
/// keys keep the agent's owner) exits 0 with the config's files in place.
#[test]
fn once_from_into_an_empty_root_exits_0() {
    let d = tempfile::tempdir().unwrap();
    let config = example_rendered_worker(d.path());
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let (ok, out) = run(&[
        "once-from",
        config.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("state: Done"), "{out}");
    let keys = root.join("home/core/.ssh/authorized_keys.d/ignition");
    assert!(std::fs::read_to_string(keys).unwrap().starts_with("ssh-"));
    assert!(root.join("etc/chrony.conf").is_file());
}

#[test]
fn once_from_under_an_rpm_ostree_root_prints_the_os_steps_and_goes_on() {
    let d = tempfile::tempdir().unwrap();
    let config = example_rendered_worker(d.path());
    let root = d.path().join("root");
    common::seed_users(&root);
    std::fs::create_dir_all(root.join("run")).unwrap();
    std::fs::write(root.join("run/ostree-booted"), "").unwrap();
    let r = root.to_str().unwrap();
    let (ok, out) = run(&["once-from", config.to_str().unwrap(), "--root", r]);
    assert!(ok, "{out}");
    assert!(out.contains("state: Done"), "{out}");
    let not_run = "not run (the host only prints commands): ";
    for step in [
        "rpm-ostree cleanup -p",
        "rpm-ostree rebase --experimental ostree-unverified-registry:registry.example.net/os/coreos@sha256:",
        "rpm-ostree update <extension packages of [usbguard] not yet layered>, then verify them staged",
    ] {
        assert!(out.contains(&format!("{not_run}{step}")), "{step}: {out}");
    }
    assert!(root.join("etc/chrony.conf").is_file());
    assert!(!root.join("run/ostree/auth.json").exists());
}

#[test]
fn certs_from_writes_the_ca_files_and_names_a_bad_file() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let r = root.to_str().unwrap();
    let b64 = |s: &str| mco_render::gocompat::base64::std_encode(s.as_bytes());
    let cc = d.path().join("cc.yaml");
    std::fs::write(
        &cc,
        format!(
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: ControllerConfig\nmetadata:\n  name: machine-config-controller\nspec:\n  kubeAPIServerServingCAData: {}\n  imageRegistryBundleData:\n  - file: registry.example..5000\n    data: {}\n",
            b64("kube-ca"),
            b64("registry-ca")
        ),
    )
    .unwrap();
    let (ok, out) = run(&["certs-from", cc.to_str().unwrap(), "--root", r]);
    assert!(ok, "{out}");
    assert!(
        out.contains("wrote /etc/kubernetes/kubelet-ca.crt"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("etc/docker/certs.d/registry.example:5000/ca.crt"))
            .unwrap(),
        "registry-ca"
    );
    // A second pass changes nothing.
    let (ok, out) = run(&["certs-from", cc.to_str().unwrap(), "--root", r]);
    assert!(ok && !out.contains("wrote"), "{out}");

    std::fs::write(&cc, "spec:\n  kubeAPIServerServingCAData: 7\n").unwrap();
    let out = Command::new(BIN)
        .args(["certs-from", cc.to_str().unwrap(), "--root", r])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cc.yaml") && err.contains("kubeAPIServerServingCAData"),
        "{err}"
    );
}

#[test]
fn version_names_the_releases_the_default_and_butane() {
    let (ok, out) = run(&["--version"]);
    assert!(ok, "{out}");
    assert_eq!(
        out,
        format!(
            "machine-config-daemon {}\n",
            mco_render::about::long_version()
        )
    );
    assert!(
        out.contains("releases reproduced: 4.14, 4.15, 4.16, 4.17, 4.18, 4.19, 4.20, 4.21, 4.22 (default 4.22)\n")
            && out.contains("Butane matched: v0.29.0-3-gcb34e120"),
        "{out}"
    );
}

#[test]
fn help_says_what_the_daemon_is_and_its_modes() {
    let (ok, out) = run(&["--help"]);
    assert!(ok, "{out}");
    assert!(
        out.starts_with("The machine-config-daemon: applies a rendered MachineConfig"),
        "{out}"
    );
    for mode in ["`cluster` is the node agent", "`once-from`", "`try`"] {
        assert!(out.contains(mode), "{mode}: {out}");
    }
}
