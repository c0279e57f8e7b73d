//! Applying configs to temporary roots through the recording host.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use common::*;
use mco_node::apply::{run_update, ApplyOptions};
use mco_node::drift::DriftKind;
use mco_node::root::RootError;
use mco_node::state::read_current;
use mco_node::{DesiredConfig, NodeState, RecordingHost};
use serde_json::json;

fn apply(
    root: &mco_node::HostRoot,
    host: &mut RecordingHost,
    new: &DesiredConfig,
) -> mco_node::ApplyOutcome {
    let old = read_current(root).expect("current");
    run_update(root, host, &old, new, ApplyOptions::default(), None)
}

#[test]
fn first_apply_writes_files_units_and_keys() {
    let (_d, root) = temp_root();
    let mut host = RecordingHost::new();
    let mut f = file("/etc/app/app.conf", "a=1\n");
    f["mode"] = json!(0o600);
    let new = mc_with(
        "rendered-a",
        json!({
            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 K1", "ssh-ed25519 K2"]}]},
            "storage": {"files": [f]},
            "systemd": {"units": [
                {"name": "app.service", "enabled": true, "contents": "[Unit]\nDescription=app\n"},
                {"name": "bad.service", "mask": true},
                {"name": "crio.service", "dropins": [{"name": "10-a.conf", "contents": "[Service]\n"}]},
                {"name": "other.service", "enabled": false, "contents": "[Unit]\n"}
            ]}
        }),
    );
    let out = apply(&root, &mut host, &new);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(read(&root, "/etc/app/app.conf").as_deref(), Some("a=1\n"));
    let meta = std::fs::metadata(host_path(&root, "/etc/app/app.conf")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
    let dir = std::fs::metadata(host_path(&root, "/etc/app")).unwrap();
    assert_eq!(dir.permissions().mode() & 0o777, 0o755);
    assert_eq!(
        std::fs::read_link(host_path(&root, "/etc/systemd/system/bad.service")).unwrap(),
        std::path::Path::new("/dev/null")
    );
    assert_eq!(
        read(&root, "/etc/systemd/system/crio.service.d/10-a.conf").as_deref(),
        Some("[Service]\n")
    );
    let key = "/home/core/.ssh/authorized_keys.d/ignition";
    assert_eq!(
        read(&root, key).as_deref(),
        Some("ssh-ed25519 K1\nssh-ed25519 K2\n")
    );
    let km = std::fs::metadata(host_path(&root, key)).unwrap();
    assert_eq!((km.mode() & 0o777, km.uid(), km.gid()), (0o600, 1000, 1000));
    let kd = std::fs::metadata(host_path(&root, "/home/core/.ssh")).unwrap();
    assert_eq!(kd.mode() & 0o777, 0o700);
    assert!(host
        .calls
        .contains(&"systemctl enable app.service".to_string()));
    assert!(host
        .calls
        .contains(&"systemctl disable other.service".to_string()));
    assert!(host
        .calls
        .contains(&"systemctl preset crio.service".to_string()));
    assert_eq!(host.calls.last().map(String::as_str), Some("reboot"));
    assert_eq!(read_current(&root).unwrap().name(), "rendered-a");
    // The no-original stamp records that the file did not exist before.
    assert!(read(
        &root,
        "/etc/machine-config-daemon/noorig/etc/app/app.conf.mcdnoorig"
    )
    .is_some());
    assert!(!host_path(&root, "/etc/machine-config-daemon/txn").exists());
}

#[test]
fn update_changes_only_what_differs_and_runs_policy_actions() {
    let (_d, root) = temp_root();
    let mut host = RecordingHost::new();
    let a = mc(
        "rendered-a",
        vec![
            file("/etc/containers/policy.json", "{}"),
            file("/etc/keep", "same\n"),
        ],
        vec![],
    );
    assert_eq!(apply(&root, &mut host, &a).status.state, NodeState::Done);
    let b = mc(
        "rendered-b",
        vec![
            file("/etc/containers/policy.json", "{\"default\":[]}"),
            file("/etc/keep", "same\n"),
        ],
        vec![],
    );
    let mut host = RecordingHost::new();
    let out = apply(&root, &mut host, &b);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(
        read(&root, "/etc/containers/policy.json").as_deref(),
        Some("{\"default\":[]}")
    );
    assert!(!out.log.iter().any(|l| l.contains("write /etc/keep ")));
    assert_eq!(
        host.calls,
        vec!["systemctl reload crio.service".to_string()]
    );
    assert_eq!(read_current(&root).unwrap().name(), "rendered-b");
}

#[test]
fn failing_step_rolls_back_files_units_and_keys() {
    let (_d, root) = temp_root();
    write(
        &root,
        "/etc/shadow",
        "root:!::0:::::\ncore:*:19000:0:99999:7:::\n",
    );
    let mut host = RecordingHost::new();
    let a = mc_with(
        "rendered-a",
        json!({
            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["old-key"], "passwordHash": "$6$a$old"}]},
            "storage": {"files": [file("/etc/one", "old one\n")]},
            "systemd": {"units": [{"name": "x.service", "contents": "old\n", "enabled": true}]}
        }),
    );
    assert_eq!(apply(&root, &mut host, &a).status.state, NodeState::Done);
    let shadow_a = "root:!::0:::::\ncore:$6$a$old:19000:0:99999:7:::\n";
    assert_eq!(read(&root, "/etc/shadow").as_deref(), Some(shadow_a));
    let b = mc_with(
        "rendered-b",
        json!({
            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["new-key"], "passwordHash": "$6$b$new"}]},
            "storage": {"files": [file("/etc/one", "new one\n"), file("/etc/two/new", "two\n")]},
            "systemd": {"units": [
                {"name": "x.service", "contents": "new\n", "enabled": true},
                {"name": "y.service", "contents": "y\n", "enabled": true}
            ]}
        }),
    );
    let mut host = RecordingHost::failing_on("enable");
    let out = apply(&root, &mut host, &b);
    assert_eq!(out.status.state, NodeState::Degraded);
    assert!(
        out.status.reason.contains("systemctl enable"),
        "{}",
        out.status.reason
    );
    assert!(
        out.status.reason.contains("rolled back to rendered-a"),
        "{}",
        out.status.reason
    );
    assert_eq!(read(&root, "/etc/one").as_deref(), Some("old one\n"));
    assert_eq!(read(&root, "/etc/two/new"), None);
    assert!(
        !host_path(&root, "/etc/two").exists(),
        "created directory left behind"
    );
    assert_eq!(
        read(&root, "/etc/systemd/system/x.service").as_deref(),
        Some("old\n")
    );
    assert_eq!(read(&root, "/etc/systemd/system/y.service"), None);
    assert_eq!(
        read(&root, "/home/core/.ssh/authorized_keys.d/ignition").as_deref(),
        Some("old-key\n")
    );
    assert_eq!(read(&root, "/etc/shadow").as_deref(), Some(shadow_a));
    assert_eq!(read_current(&root).unwrap().name(), "rendered-a");
    assert!(!host_path(&root, "/etc/machine-config-daemon/txn").exists());
    // The undo calls put the unit enablement back.
    assert!(host.calls.iter().any(|c| c == "systemctl daemon-reload"));
}

#[test]
fn undecodable_file_degrades_naming_the_file_and_touches_nothing() {
    let (_d, root) = temp_root();
    let mut host = RecordingHost::new();
    let mut bad = file("/etc/bad", "x");
    // Valid data URL, but not a gzip stream.
    bad["contents"]["compression"] = json!("gzip");
    let new = mc("rendered-a", vec![file("/etc/good", "g"), bad], vec![]);
    let out = apply(&root, &mut host, &new);
    assert_eq!(out.status.state, NodeState::Degraded);
    assert!(
        out.status.reason.contains("/etc/bad"),
        "{}",
        out.status.reason
    );
    assert!(
        out.status.reason.contains("could not decode"),
        "{}",
        out.status.reason
    );
    assert_eq!(read(&root, "/etc/good"), None);
}

#[test]
fn removal_restores_the_saved_original() {
    let (_d, root) = temp_root();
    write(&root, "/etc/chrony.conf", "pool vendor\n");
    let mut host = RecordingHost::new();
    let a = mc(
        "rendered-a",
        vec![
            file("/etc/chrony.conf", "pool ours\n"),
            file("/etc/new", "n"),
        ],
        vec![],
    );
    assert_eq!(apply(&root, &mut host, &a).status.state, NodeState::Done);
    assert_eq!(
        read(&root, "/etc/chrony.conf").as_deref(),
        Some("pool ours\n")
    );
    assert_eq!(
        read(
            &root,
            "/etc/machine-config-daemon/orig/etc/chrony.conf.mcdorig"
        )
        .as_deref(),
        Some("pool vendor\n")
    );
    let empty = mc("rendered-b", vec![], vec![]);
    let out = apply(&root, &mut host, &empty);
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    assert_eq!(
        read(&root, "/etc/chrony.conf").as_deref(),
        Some("pool vendor\n")
    );
    assert_eq!(
        read(
            &root,
            "/etc/machine-config-daemon/orig/etc/chrony.conf.mcdorig"
        ),
        None
    );
    assert_eq!(read(&root, "/etc/new"), None);
    assert_eq!(
        read(&root, "/etc/machine-config-daemon/noorig/etc/new.mcdnoorig"),
        None
    );
}

#[test]
fn drift_is_reported_with_expected_and_actual_lines() {
    let (_d, root) = temp_root();
    let mut host = RecordingHost::new();
    let a = mc(
        "rendered-a",
        vec![file("/etc/app.conf", "one\ntwo\nthree\n")],
        vec![],
    );
    assert_eq!(apply(&root, &mut host, &a).status.state, NodeState::Done);
    write(&root, "/etc/app.conf", "one\nTWO\nthree\n");
    let b = mc("rendered-b", vec![file("/etc/app.conf", "four\n")], vec![]);
    let out = apply(&root, &mut host, &b);
    assert_eq!(out.status.state, NodeState::Degraded);
    assert_eq!(out.drift.len(), 1);
    assert_eq!(out.drift[0].path, "/etc/app.conf");
    assert_eq!(
        out.drift[0].kind,
        DriftKind::Content {
            line: 2,
            expected: "two".into(),
            actual: "TWO".into()
        }
    );
    assert!(
        out.status
            .reason
            .contains("line 2: expected \"two\", found \"TWO\""),
        "{}",
        out.status.reason
    );
    assert_eq!(
        read(&root, "/etc/app.conf").as_deref(),
        Some("one\nTWO\nthree\n")
    );
    assert_eq!(read_current(&root).unwrap().name(), "rendered-a");
}

#[test]
fn owner_resolves_by_name_in_the_root() {
    let (_d, root) = temp_root();
    let mut host = RecordingHost::new();
    let mut f = file("/etc/builder.conf", "b");
    f["user"] = json!({"name": "builder"});
    f["group"] = json!({"name": "builders"});
    let mut g = file("/etc/byid.conf", "c");
    g["user"] = json!({"id": 77});
    let out = apply(&root, &mut host, &mc("rendered-a", vec![f, g], vec![]));
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.status);
    let m = std::fs::metadata(host_path(&root, "/etc/builder.conf")).unwrap();
    assert_eq!((m.uid(), m.gid()), (4242, 4243));
    let m = std::fs::metadata(host_path(&root, "/etc/byid.conf")).unwrap();
    assert_eq!((m.uid(), m.gid()), (77, 0));

    let mut h = file("/etc/ghost.conf", "g");
    h["user"] = json!({"name": "ghost"});
    let out = apply(&root, &mut host, &mc("rendered-b", vec![h], vec![]));
    assert_eq!(out.status.state, NodeState::Degraded);
    assert!(
        out.status
            .reason
            .contains("failed to retrieve UserID for username: ghost"),
        "{}",
        out.status.reason
    );
}

#[test]
fn paths_escaping_the_root_are_refused() {
    let (_d, root) = temp_root();
    assert!(matches!(
        root.resolve("/etc/../../x"),
        Err(RootError::DotDot(_))
    ));
    assert!(matches!(
        root.resolve("etc/x"),
        Err(RootError::NotAbsolute(_))
    ));
    // Ignition validation rejects relative paths, so `..` cannot reach the writer through a
    // config; the resolver refuses it all the same.
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), host_path(&root, "/etc/escape")).unwrap();
    let err = root.resolve("/etc/escape/file").unwrap_err();
    assert!(matches!(err, RootError::SymlinkEscape { .. }), "{err}");
    std::os::unix::fs::symlink("../../..", host_path(&root, "/etc/up")).unwrap();
    assert!(matches!(
        root.resolve("/etc/up/x"),
        Err(RootError::SymlinkEscape { .. })
    ));
    // A symlink that stays inside the root is followed.
    std::fs::create_dir_all(host_path(&root, "/var/home")).unwrap();
    std::os::unix::fs::symlink("var/home", host_path(&root, "/home")).unwrap();
    assert_eq!(
        root.resolve("/home/core/x").unwrap(),
        root.base().join("var/home/core/x")
    );

    let mut host = RecordingHost::new();
    let out = apply(
        &root,
        &mut host,
        &mc("rendered-a", vec![file("/etc/escape/file", "x")], vec![]),
    );
    assert_eq!(out.status.state, NodeState::Degraded);
    assert!(
        out.status.reason.contains("points outside the root"),
        "{}",
        out.status.reason
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn symlink_at_a_file_path_is_not_followed() {
    let (_d, root) = temp_root();
    let victim = host_path(&root, "/etc/victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, host_path(&root, "/etc/link.conf")).unwrap();
    let mut host = RecordingHost::new();
    let out = apply(
        &root,
        &mut host,
        &mc("rendered-a", vec![file("/etc/link.conf", "evil\n")], vec![]),
    );
    assert_eq!(out.status.state, NodeState::Degraded);
    assert!(
        out.status.reason.contains("/etc/link.conf"),
        "{}",
        out.status.reason
    );
    assert!(
        out.status.reason.contains("symlink"),
        "{}",
        out.status.reason
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(
        std::fs::symlink_metadata(host_path(&root, "/etc/link.conf"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn unreconcilable_change_touches_nothing() {
    let (_d, root) = temp_root();
    let mut host = RecordingHost::new();
    let a = mc("rendered-a", vec![], vec![]);
    assert_eq!(apply(&root, &mut host, &a).status.state, NodeState::Done);
    let b = mc_with(
        "rendered-b",
        json!({"storage": {"files": [file("/etc/x", "x")], "disks": [{"device": "/dev/sdb", "wipeTable": true}]}}),
    );
    let out = apply(&root, &mut host, &b);
    assert_eq!(out.status.state, NodeState::Unreconcilable);
    assert!(
        out.status.reason.contains("disks section contains changes"),
        "{}",
        out.status.reason
    );
    assert_eq!(read(&root, "/etc/x"), None);
}

#[test]
fn failed_health_check_reverts() {
    let (_d, root) = temp_root();
    let mut host = RecordingHost::new();
    let a = mc(
        "rendered-a",
        vec![file("/etc/containers/policy.json", "old")],
        vec![],
    );
    assert_eq!(apply(&root, &mut host, &a).status.state, NodeState::Done);
    let b = mc(
        "rendered-b",
        vec![file("/etc/containers/policy.json", "new")],
        vec![],
    );
    let old = read_current(&root).unwrap();
    let mut seen = String::new();
    let mut check = || {
        seen = read(&root, "/etc/containers/policy.json").unwrap_or_default();
        Err("service unhealthy".to_string())
    };
    let mut host = RecordingHost::new();
    let out = run_update(
        &root,
        &mut host,
        &old,
        &b,
        ApplyOptions::default(),
        Some(&mut check),
    );
    assert_eq!(seen, "new");
    assert_eq!(out.status.state, NodeState::Degraded);
    assert!(out
        .status
        .reason
        .contains("health check failed: service unhealthy"));
    assert_eq!(
        read(&root, "/etc/containers/policy.json").as_deref(),
        Some("old")
    );
    assert_eq!(read_current(&root).unwrap().name(), "rendered-a");
    // Reloaded once for the new config, once for the restored one.
    assert_eq!(
        host.calls
            .iter()
            .filter(|c| *c == "systemctl reload crio.service")
            .count(),
        2
    );
}

#[test]
fn password_hash_is_set_in_shadow_keeping_its_mode() {
    let (_d, root) = temp_root();
    write(
        &root,
        "/etc/shadow",
        "root:!::0:::::\ncore:*:19000:0:99999:7:::\n",
    );
    std::fs::set_permissions(
        host_path(&root, "/etc/shadow"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let mut host = RecordingHost::new();
    let a = mc_with(
        "rendered-a",
        json!({"passwd": {"users": [{"name": "core", "passwordHash": "$6$s$h"}]}}),
    );
    assert_eq!(apply(&root, &mut host, &a).status.state, NodeState::Done);
    assert_eq!(
        read(&root, "/etc/shadow").as_deref(),
        Some("root:!::0:::::\ncore:$6$s$h:19000:0:99999:7:::\n")
    );
    let mode = std::fs::metadata(host_path(&root, "/etc/shadow"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o640);
    // Dropping the user clears the hash, as upstream's daemon does.
    let b = mc_with("rendered-b", json!({}));
    assert_eq!(apply(&root, &mut host, &b).status.state, NodeState::Done);
    assert_eq!(
        read(&root, "/etc/shadow").as_deref(),
        Some("root:!::0:::::\ncore::19000:0:99999:7:::\n")
    );
    // No host command was needed.
    assert!(!host.calls.iter().any(|c| c.contains("usermod")));
}

/// A crash while the state file was being written leaves its temp file; recovery removes it
/// and keeps the state file (found by the crash trials, `tests/crash_trials.rs`).
#[test]
fn recovery_removes_the_temp_file_of_an_interrupted_state_write() {
    let (dir, root) = temp_root();
    write(&root, "/etc/machine-config-daemon/state.json", "{}");
    let temp = dir
        .path()
        .join("etc/machine-config-daemon/.state.json.mcd-tmp");
    std::fs::write(&temp, "{\"sta").unwrap();
    let mut host = RecordingHost::new();
    let r = mco_node::journal::recover(&root, &mut host).unwrap();
    assert!(r.is_none());
    assert!(!temp.exists(), "temp state file left behind");
    assert_eq!(
        read(&root, "/etc/machine-config-daemon/state.json").as_deref(),
        Some("{}")
    );
    assert!(host.calls.is_empty());
}
