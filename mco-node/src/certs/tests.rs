//! Tests of the certificate files: planning, pruning, the kubeconfig CA and the writes under a
//! temporary root.

use super::*;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

/// Self-signed test certificates (openssl, P-256).
const OTHER_SIGNER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/certs/other-signer.pem"
));
const NEW_SIGNER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/certs/new-signer.pem"
));

fn b64(s: &str) -> String {
    std_encode(s.as_bytes())
}

fn spec(v: Value) -> ControllerConfigSpec {
    serde_json::from_value(v).unwrap_or_default()
}

fn full_spec() -> ControllerConfigSpec {
    spec(json!({
        "kubeAPIServerServingCAData": b64("kube-ca"),
        "cloudProviderCAData": b64("cloud-ca\n"),
        "imageRegistryBundleData": [
            {"file": "registry.example..5000", "data": b64("registry-ca")},
            {"file": "mirror.example", "data": b64("mirror-ca")}],
        "imageRegistryBundleUserData": [
            {"file": "mirror.example", "data": b64("user-mirror-ca")}],
    }))
}

#[test]
fn registry_folders_read_double_dots_as_ports() {
    assert_eq!(
        registry_folder("registry.example..5000"),
        "registry.example:5000"
    );
    assert_eq!(registry_folder("registry.example"), "registry.example");
    assert_eq!(registry_folder("a..1..2"), "a:1:2");
}

#[test]
fn the_plan_follows_the_spec() {
    let p = plan(&full_spec()).unwrap_or_default();
    let files: Vec<(&str, &[u8])> = p
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.data.as_slice()))
        .collect();
    assert_eq!(
        files,
        vec![
            // CA bundles end with a newline; registry CAs are written as they are.
            (KUBELET_CA_PATH, &b"kube-ca\n"[..]),
            (CLOUD_CA_PATH, &b"cloud-ca\n"[..]),
            (
                "/etc/docker/certs.d/registry.example:5000/ca.crt",
                &b"registry-ca"[..]
            ),
            (
                "/etc/docker/certs.d/mirror.example/ca.crt",
                &b"mirror-ca"[..]
            ),
            (
                "/etc/docker/certs.d/mirror.example/ca.crt",
                &b"user-mirror-ca"[..]
            ),
        ]
    );
    assert!(p.warnings.is_empty());
    // No CA data: nothing to write over the files the node has.
    assert_eq!(
        plan(&spec(json!({}))).unwrap_or_default(),
        CertPlan::default()
    );
    let p = plan(&spec(json!({"kubeAPIServerServingCAData": ""}))).unwrap_or_default();
    assert!(p.files.is_empty());
    // A bundle whose name is no folder is refused, not written outside certs.d.
    let p = plan(&spec(
        json!({"imageRegistryBundleData": [{"file": ".", "data": ""}]}),
    ))
    .unwrap_or_default();
    assert!(p.files.is_empty());
    assert_eq!(p.warnings.len(), 1);
    assert!(plan(&spec(json!({"rootCAData": 1, "cloudProviderCAData": "%"}))).is_err());
}

#[test]
fn only_folders_no_bundle_names_are_stale() {
    let p = plan(&full_spec()).unwrap_or_default();
    let entries: Vec<(String, bool)> = [
        ("registry.example:5000", true),
        ("mirror.example", true),
        ("old.example", true),
        ("old.example:443", true),
        ("README", false),
    ]
    .iter()
    .map(|(n, d)| (n.to_string(), *d))
    .collect();
    assert_eq!(
        stale_registry_folders(&entries, &p),
        vec!["old.example".to_string(), "old.example:443".to_string()]
    );
    // Without bundles every folder is stale, files still are not.
    assert_eq!(
        stale_registry_folders(&entries, &CertPlan::default()).len(),
        4
    );
}

fn kubeconfig(ca: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: https://api-int.example:6443\n    certificate-authority-data: {}\nusers:\n- name: kubelet\n  user:\n    token: t\n",
        b64(ca)
    )
}

fn ca_of(kc: &[u8]) -> String {
    let v: Value = serde_yaml_ng::from_slice(kc).unwrap_or_default();
    let s = v
        .pointer("/clusters/0/cluster/certificate-authority-data")
        .and_then(Value::as_str)
        .unwrap_or("");
    String::from_utf8(std_decode(s).unwrap_or_default()).unwrap_or_default()
}

#[test]
fn the_kubeconfig_gets_the_certificates_it_lacks() {
    let kc = kubeconfig(OTHER_SIGNER);
    let both = format!("{OTHER_SIGNER}{NEW_SIGNER}");
    let new = kubeconfig_with_ca(kc.as_bytes(), both.as_bytes())
        .ok()
        .flatten()
        .unwrap_or_default();
    assert_eq!(ca_of(&new).trim(), both.trim());
    // The rest of the kubeconfig is kept.
    let v: Value = serde_yaml_ng::from_slice(&new).unwrap_or_default();
    assert_eq!(
        v["clusters"][0]["cluster"]["server"],
        "https://api-int.example:6443"
    );
    assert_eq!(v["users"][0]["user"]["token"], "t");
    // Already trusted (the same bundle, or a subset of it): nothing to write.
    assert!(matches!(
        kubeconfig_with_ca(kc.as_bytes(), OTHER_SIGNER.as_bytes()),
        Ok(None)
    ));
    let kc_both = kubeconfig(&both);
    assert!(matches!(
        kubeconfig_with_ca(kc_both.as_bytes(), NEW_SIGNER.as_bytes()),
        Ok(None)
    ));
    // Text that is no certificate is left out.
    let junk = format!("{NEW_SIGNER}garbage");
    let new = kubeconfig_with_ca(kc.as_bytes(), junk.as_bytes())
        .ok()
        .flatten()
        .unwrap_or_default();
    assert_eq!(ca_of(&new).trim(), NEW_SIGNER.trim());
    assert!(kubeconfig_with_ca(b"kind: Config\n", NEW_SIGNER.as_bytes()).is_err());
}

fn root() -> (tempfile::TempDir, HostRoot) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    (dir, root)
}

fn read(dir: &tempfile::TempDir, path: &str) -> String {
    std::fs::read_to_string(dir.path().join(path.trim_start_matches('/'))).unwrap_or_default()
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn sync_writes_the_files_prunes_stale_folders_and_leaves_the_rest() {
    let (dir, root) = root();
    let certs = dir.path().join("etc/docker/certs.d");
    std::fs::create_dir_all(certs.join("old.example:443")).unwrap_or_default();
    std::fs::write(certs.join("old.example:443/ca.crt"), "old").unwrap_or_default();
    std::fs::write(certs.join("README"), "keep me").unwrap_or_default();
    let kubelet_ca = dir.path().join("etc/kubernetes/kubelet-ca.crt");
    std::fs::create_dir_all(dir.path().join("etc/kubernetes")).unwrap_or_default();
    std::fs::write(&kubelet_ca, "stale").unwrap_or_default();
    std::fs::set_permissions(&kubelet_ca, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_default();
    std::fs::write(
        dir.path().join("etc/kubernetes/kubeconfig"),
        kubeconfig(OTHER_SIGNER),
    )
    .unwrap_or_default();
    let ca = format!("{OTHER_SIGNER}{NEW_SIGNER}");

    let r = sync(&root, &full_spec(), Some(ca.as_bytes())).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read(&dir, KUBELET_CA_PATH), "kube-ca\n");
    // An existing file keeps its mode; a new one is 0644.
    let mode = |p: &std::path::Path| {
        std::fs::metadata(p)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0)
    };
    assert_eq!(mode(&kubelet_ca), 0o600);
    assert_eq!(read(&dir, CLOUD_CA_PATH), "cloud-ca\n");
    assert_eq!(
        mode(&dir.path().join(CLOUD_CA_PATH.trim_start_matches('/'))),
        0o644
    );
    assert_eq!(
        read(&dir, "/etc/docker/certs.d/registry.example:5000/ca.crt"),
        "registry-ca"
    );
    // The administrator's bundle for the same registry wins.
    assert_eq!(
        read(&dir, "/etc/docker/certs.d/mirror.example/ca.crt"),
        "user-mirror-ca"
    );
    // The stale folder is gone, the plain file stays, no temporary file is left.
    assert_eq!(
        names(&certs),
        vec!["README", "mirror.example", "registry.example:5000"]
    );
    assert_eq!(read(&dir, "/etc/docker/certs.d/README"), "keep me");
    assert_eq!(names(&certs.join("mirror.example")), vec!["ca.crt"]);
    assert_eq!(
        names(&dir.path().join("etc/kubernetes")),
        vec!["kubeconfig", "kubelet-ca.crt", "static-pod-resources"]
    );
    assert_eq!(
        ca_of(read(&dir, KUBECONFIG_PATH).as_bytes()).trim(),
        ca.trim()
    );
    assert_eq!(
        r.removed,
        vec!["/etc/docker/certs.d/old.example:443".to_string()]
    );
    assert_eq!(r.written.len(), 5, "{r:?}");

    // Again: the disk already holds it all, nothing is written.
    let again = sync(&root, &full_spec(), Some(ca.as_bytes())).unwrap_or_else(|e| panic!("{e}"));
    assert!(!again.changed(), "{again:?}");

    // A registry goes away, another CA changes: only those change on disk.
    let less = spec(json!({
        "kubeAPIServerServingCAData": b64("kube-ca-2"),
        "imageRegistryBundleData": [{"file": "registry.example..5000", "data": b64("registry-ca")}],
    }));
    let r = sync(&root, &less, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.written, vec![KUBELET_CA_PATH.to_string()]);
    assert_eq!(
        r.removed,
        vec!["/etc/docker/certs.d/mirror.example".to_string()]
    );
    assert_eq!(read(&dir, KUBELET_CA_PATH), "kube-ca-2\n");
    // Fields the spec no longer has leave their files alone.
    assert_eq!(read(&dir, CLOUD_CA_PATH), "cloud-ca\n");
    assert_eq!(names(&certs), vec!["README", "registry.example:5000"]);
}

#[test]
fn sync_creates_the_registry_folder_and_skips_a_missing_kubeconfig() {
    let (dir, root) = root();
    let r =
        sync(&root, &full_spec(), Some(NEW_SIGNER.as_bytes())).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.written.iter().all(|p| p != KUBECONFIG_PATH));
    assert_eq!(r.warnings.len(), 1, "{r:?}");
    assert!(!dir.path().join("etc/kubernetes/kubeconfig").exists());
    assert_eq!(
        read(&dir, "/etc/docker/certs.d/mirror.example/ca.crt"),
        "user-mirror-ca"
    );
}

#[test]
fn sync_refuses_a_symlink_out_of_the_root() {
    let (dir, root) = root();
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(dir.path().join("etc")).unwrap_or_default();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("etc/kubernetes"))
        .unwrap_or_default();
    assert!(sync(&root, &full_spec(), None).is_err());
    assert!(names(outside.path()).is_empty());
}

/// A pass killed mid-write leaves a temp file next to the file it was writing; the next pass
/// removes it even when the file already holds what that pass wants (the spec went back).
/// Found by the crash trials (`mco-node/tests/crash_trials.rs`).
#[test]
fn sync_removes_the_temp_files_of_an_interrupted_pass() {
    let (dir, root) = root();
    std::fs::create_dir_all(dir.path().join("etc/kubernetes")).unwrap_or_default();
    std::fs::write(
        dir.path().join("etc/kubernetes/kubeconfig"),
        kubeconfig(NEW_SIGNER),
    )
    .unwrap_or_default();
    sync(&root, &full_spec(), Some(NEW_SIGNER.as_bytes())).unwrap_or_else(|e| panic!("{e}"));
    let temps = [
        "etc/kubernetes/.kubelet-ca.crt.mcd-tmp",
        "etc/docker/certs.d/registry.example:5000/.ca.crt.mcd-tmp",
        "etc/kubernetes/.kubeconfig.mcd-tmp",
    ];
    for t in temps {
        std::fs::write(dir.path().join(t), "half a certif").unwrap_or_default();
    }
    let r =
        sync(&root, &full_spec(), Some(NEW_SIGNER.as_bytes())).unwrap_or_else(|e| panic!("{e}"));
    assert!(!r.changed(), "{r:?}");
    for t in temps {
        assert!(!dir.path().join(t).exists(), "{t} left behind");
    }
    assert_eq!(read(&dir, KUBELET_CA_PATH), "kube-ca\n");
}
