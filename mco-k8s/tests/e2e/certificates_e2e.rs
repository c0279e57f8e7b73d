//! Certificates end to end against the in-process API server: the operator fills the
//! ControllerConfig's CA fields from the ConfigMaps upstream reads and follows their changes
//! through its watches, leaving a field an administrator set where no ConfigMap feeds it,
//! and copies the kube-apiserver's serving CA into `kubeconfig-data` for the daemons;
//! the daemon's certificate writer, on a temporary host root, rewrites the kubelet CA, the
//! cloud CA, `/etc/docker/certs.d` (stale folders pruned) and the kubeconfig's CA, and
//! nothing happens to the Node: no write, no drain request, no Event; the node's update
//! agent then finds nothing to do and runs no host command.

// The test server's write closures return its Status error by value.
#![allow(clippy::result_large_err)]

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Store};
use crate::support::rbac;
use base64::Engine as _;
use mco_k8s::operator::{embedded, Options};
use mco_node::agent::kube_loop::{Agent, AgentOptions, Synced};
use mco_node::apply::{run_update, ApplyOptions};
use mco_node::{DesiredConfig, HostRoot, NodeState, RecordingHost};
use mco_render::api::node::{
    CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN, STATE,
};
use mco_render::controllers::operator::NAMESPACE;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = support::PATIENCE;
const DAEMON: &str = "machine-config-daemon (worker-0)";
const OPERATOR: &str = "machine-config-operator";
const AGENT: &str = "machine-config-daemon update loop (worker-0)";

/// Self-signed test certificates (openssl, P-256).
const KUBE_APISERVER_TO_KUBELET_SIGNER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/certs/kube-apiserver-to-kubelet-signer.pem"
));
const OTHER_SIGNER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/certs/other-signer.pem"
));
const NEW_SIGNER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/certs/new-signer.pem"
));

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn unb64(v: &Value) -> String {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.as_str().unwrap_or(""))
        .unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

fn def(plural: &str) -> &'static support::apiserver::ResourceDef {
    resource(plural).unwrap_or_else(|| panic!("the test server lacks {plural}"))
}

fn configmap(store: &Store, ns: &str, name: &str, data: Value) {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": ns}, "data": data});
    store
        .create(def("configmaps"), ns, cm)
        .unwrap_or_else(|e| panic!("{ns}/{name}: {e:?}"));
}

fn edit_configmap(store: &Store, ns: &str, name: &str, data: Value) {
    store
        .write(def("configmaps"), ns, name, false, |old| {
            let mut n = old.clone();
            n["data"] = data;
            Ok(n)
        })
        .unwrap_or_else(|e| panic!("{ns}/{name}: {e:?}"));
}

fn controller_config(store: &Store) -> Option<Value> {
    store.get("controllerconfigs", "", "machine-config-controller")
}

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path.trim_start_matches('/'))).unwrap_or_default()
}

fn names(dir: &Path) -> Vec<String> {
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

fn kubeconfig_ca(root: &Path) -> String {
    let text = read(root, "/etc/kubernetes/kubeconfig");
    let v: Value = serde_yaml_ng::from_str(&text).unwrap_or_default();
    unb64(&v["clusters"][0]["cluster"]["certificate-authority-data"])
}

/// Puts the host root on `mc`, as the machine booted with it.
fn boot_on(root: &Path, mc: &Value) {
    std::fs::create_dir_all(root.join("etc")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(root.join("etc/passwd"), "root:x:0:0::/root:/bin/sh\n")
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(root.join("etc/group"), "root:x:0:\n").unwrap_or_else(|e| panic!("{e}"));
    let host_root = HostRoot::new(root).unwrap_or_else(|e| panic!("{e}"));
    let bytes = serde_json::to_vec(mc).unwrap_or_default();
    let config =
        DesiredConfig::from_bytes(&bytes, "rendered-worker-1").unwrap_or_else(|e| panic!("{e}"));
    let opts = ApplyOptions {
        check_drift: false,
        reboot: mco_node::apply::RebootMode::Deferred,
        drained: true,
        policies: None,
    };
    let out = run_update(
        &host_root,
        &mut RecordingHost::new(),
        &DesiredConfig::empty(),
        &config,
        opts,
        None,
    );
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.log);
}

async fn eventually<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    support::eventually_within(what, LIMIT, check).await
}

/// The requests `agent` made, as the RBAC check reads them.
fn requests_of(store: &Store, agent: &str) -> BTreeMap<String, u64> {
    store
        .request_counts_by_agent()
        .into_iter()
        .filter(|((a, _), _)| a == agent)
        .map(|((_, what), n)| (what, n))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ca_changes_reach_the_disk_without_an_update() {
    let server = ApiServer::start().await.unwrap_or_else(|e| panic!("{e}"));
    let store = server.store.clone();
    // The cluster's CA ConfigMaps, as OpenShift publishes them.
    configmap(
        &store,
        "kube-system",
        "bootstrap",
        json!({"status": "complete"}),
    );
    configmap(
        &store,
        "openshift-config-managed",
        "kube-apiserver-client-ca",
        json!({"ca-bundle.crt": OTHER_SIGNER}),
    );
    configmap(
        &store,
        "openshift-config-managed",
        "image-registry-ca",
        json!({"registry.example..5000": "registry-ca-1", "mirror.example": "mirror-ca-1"}),
    );
    configmap(
        &store,
        "openshift-config-managed",
        "kube-cloud-config",
        json!({"ca-bundle.pem": "cloud-ca-1", "cloud.conf": ""}),
    );
    configmap(
        &store,
        "openshift-config",
        "user-ca-bundle",
        json!({"ca-bundle.crt": NEW_SIGNER}),
    );
    configmap(
        &store,
        "openshift-config",
        "registry-cas",
        json!({"user.example": "user-ca-1"}),
    );
    let image = json!({"apiVersion": "config.openshift.io/v1", "kind": "Image",
        "metadata": {"name": "cluster"},
        "spec": {"additionalTrustedCA": {"name": "registry-cas"}}});
    store
        .create(def("images"), "", image)
        .unwrap_or_else(|e| panic!("{e:?}"));
    // The kube-apiserver's serving CA, which the operator copies into its namespace
    // (kubeconfig-data) for the daemons' kubeconfigs.
    configmap(
        &store,
        "openshift-config-managed",
        "kube-apiserver-server-ca",
        json!({"ca-bundle.crt": format!("{OTHER_SIGNER}{NEW_SIGNER}")}),
    );
    // A node that is up to date.
    let node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "worker-0",
            "labels": {"node-role.kubernetes.io/worker": ""},
            "annotations": {CURRENT_CONFIG: "rendered-worker-1", DESIRED_CONFIG: "rendered-worker-1",
                            STATE: "Done", DESIRED_DRAIN: "uncordon-rendered-worker-1",
                            LAST_APPLIED_DRAIN: "uncordon-rendered-worker-1"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    store
        .create(def("nodes"), "", node)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let node_before = store.get("nodes", "", "worker-0").unwrap_or_default();

    // Its disk: on the rendered config of the day (which, as real ones do, holds the kubelet
    // CA), a registry folder no bundle names, a plain file, the kubeconfig.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path();
    let rendered = json!({"apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig", "metadata": {"name": "rendered-worker-1"},
        "spec": {"config": {"ignition": {"version": "3.5.0"}, "storage": {"files": [
            {"path": "/etc/kubernetes/kubelet-ca.crt", "mode": 420,
             "contents": {"source": "data:,day-one-ca"}}]}}}});
    store
        .create(def("machineconfigs"), "", rendered.clone())
        .unwrap_or_else(|e| panic!("{e:?}"));
    boot_on(root, &rendered);
    let certs = root.join("etc/docker/certs.d");
    std::fs::create_dir_all(certs.join("stale.example")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(certs.join("stale.example/ca.crt"), "stale").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(certs.join("README"), "not a registry").unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(root.join("etc/kubernetes")).unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: https://api-int.example:6443\n    certificate-authority-data: {}\n",
        b64(OTHER_SIGNER)
    );
    std::fs::write(root.join("etc/kubernetes/kubeconfig"), kubeconfig)
        .unwrap_or_else(|e| panic!("{e}"));

    let opts = Options {
        manifests: embedded::manifests(),
        image: "quay.io/test/mco-rs:1".into(),
        version: "1.0.0".into(),
        resync: Duration::from_secs(3600),
        debounce: Duration::from_millis(20),
    };
    let operator_client = server.client_as(OPERATOR);
    let operator = tokio::spawn(async move {
        let _ = mco_k8s::operator::run(operator_client, opts).await;
    });
    let host_root = HostRoot::new(root).unwrap_or_else(|e| panic!("{e}"));
    let writer = tokio::spawn(mco_node::agent::cert_writer::run(
        server.client_as(DAEMON),
        host_root,
    ));

    // The operator fills the ControllerConfig from the ConfigMaps.
    let cc = eventually("the CA fields in the ControllerConfig", || {
        let cc = controller_config(&store)?;
        cc["spec"].get("imageRegistryBundleUserData")?;
        Some(cc)
    })
    .await;
    let spec = &cc["spec"];
    assert_eq!(unb64(&spec["kubeAPIServerServingCAData"]), OTHER_SIGNER);
    assert_eq!(unb64(&spec["additionalTrustBundle"]), NEW_SIGNER);
    assert_eq!(unb64(&spec["cloudProviderCAData"]), "cloud-ca-1");
    assert_eq!(
        spec["imageRegistryBundleData"],
        json!([{"file": "mirror.example", "data": b64("mirror-ca-1")},
               {"file": "registry.example..5000", "data": b64("registry-ca-1")}])
    );
    assert_eq!(
        spec["imageRegistryBundleUserData"],
        json!([{"file": "user.example", "data": b64("user-ca-1")}])
    );
    // No ConfigMap feeds rootCAData here: the field is the administrator's.
    assert!(spec.get("rootCAData").is_none(), "{spec:#}");
    store
        .write(
            def("controllerconfigs"),
            "",
            "machine-config-controller",
            false,
            |old| {
                let mut n = old.clone();
                n["spec"]["rootCAData"] = json!(b64("administrator's root CA"));
                Ok(n)
            },
        )
        .unwrap_or_else(|e| panic!("{e:?}"));

    // The operator copied the serving CA for the daemons.
    let kubeconfig_data = eventually("the kubeconfig-data ConfigMap", || {
        store.get("configmaps", NAMESPACE, "kubeconfig-data")
    })
    .await;
    assert_eq!(
        unb64(&kubeconfig_data["binaryData"]["ca-bundle.crt"]),
        format!("{OTHER_SIGNER}{NEW_SIGNER}")
    );

    // The daemon writes the files.
    eventually("the CA files on disk", || {
        (read(root, "/etc/docker/certs.d/user.example/ca.crt") == "user-ca-1").then_some(())
    })
    .await;
    assert_eq!(read(root, "/etc/kubernetes/kubelet-ca.crt"), OTHER_SIGNER);
    assert_eq!(
        read(
            root,
            "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem"
        ),
        "cloud-ca-1\n"
    );
    assert_eq!(
        read(root, "/etc/docker/certs.d/registry.example:5000/ca.crt"),
        "registry-ca-1"
    );
    assert_eq!(
        read(root, "/etc/docker/certs.d/mirror.example/ca.crt"),
        "mirror-ca-1"
    );
    assert_eq!(
        names(&certs),
        vec![
            "README",
            "mirror.example",
            "registry.example:5000",
            "user.example"
        ]
    );
    assert_eq!(read(root, "/etc/docker/certs.d/README"), "not a registry");
    eventually("the kubeconfig's CA", || {
        (kubeconfig_ca(root).trim() == format!("{OTHER_SIGNER}{NEW_SIGNER}").trim()).then_some(())
    })
    .await;

    // The CAs change: the kube-apiserver's client CA rotates, a registry goes, another's CA
    // changes, the kube-apiserver's serving CA gains a certificate.
    edit_configmap(
        &store,
        "openshift-config-managed",
        "kube-apiserver-client-ca",
        json!({"ca-bundle.crt": format!("{OTHER_SIGNER}{KUBE_APISERVER_TO_KUBELET_SIGNER}")}),
    );
    edit_configmap(
        &store,
        "openshift-config-managed",
        "image-registry-ca",
        json!({"registry.example..5000": "registry-ca-2"}),
    );
    edit_configmap(
        &store,
        "openshift-config-managed",
        "kube-apiserver-server-ca",
        json!({"ca-bundle.crt": format!(
            "{OTHER_SIGNER}{NEW_SIGNER}{KUBE_APISERVER_TO_KUBELET_SIGNER}"
        )}),
    );

    eventually("the ControllerConfig to follow the ConfigMaps", || {
        let cc = controller_config(&store)?;
        (cc["spec"]["imageRegistryBundleData"].as_array()?.len() == 1).then_some(())
    })
    .await;
    let rotated = format!("{OTHER_SIGNER}{KUBE_APISERVER_TO_KUBELET_SIGNER}");
    let cc = eventually("the new kube-apiserver CA in the ControllerConfig", || {
        let cc = controller_config(&store)?;
        (unb64(&cc["spec"]["kubeAPIServerServingCAData"]) == rotated).then_some(cc)
    })
    .await;
    // The administrator's field is still theirs.
    assert_eq!(unb64(&cc["spec"]["rootCAData"]), "administrator's root CA");

    eventually("the files to follow", || {
        let registry = read(root, "/etc/docker/certs.d/registry.example:5000/ca.crt");
        let kubelet = read(root, "/etc/kubernetes/kubelet-ca.crt");
        (registry == "registry-ca-2"
            && kubelet == format!("{OTHER_SIGNER}{KUBE_APISERVER_TO_KUBELET_SIGNER}")
            && names(&certs) == ["README", "registry.example:5000", "user.example"])
        .then_some(())
    })
    .await;
    eventually("the kubeconfig's new CA", || {
        (kubeconfig_ca(root).trim()
            == format!("{OTHER_SIGNER}{NEW_SIGNER}{KUBE_APISERVER_TO_KUBELET_SIGNER}").trim())
        .then_some(())
    })
    .await;
    // The rest of the kubeconfig is kept.
    assert!(read(root, "/etc/kubernetes/kubeconfig").contains("https://api-int.example:6443"));
    // No temporary file is left behind.
    assert_eq!(
        names(&root.join("etc/kubernetes")),
        vec!["kubeconfig", "kubelet-ca.crt", "static-pod-resources"]
    );

    // The node's update agent, looking at the node now, has nothing to do (the rotated CA is
    // no new config) and runs no host command.
    let mut agent = Agent::new(
        server.client_as(AGENT),
        HostRoot::new(root).unwrap_or_else(|e| panic!("{e}")),
        RecordingHost::new(),
        AgentOptions::new("worker-0"),
    );
    let node: mco_render::api::Node =
        serde_json::from_value(store.get("nodes", "", "worker-0").unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
    let synced = agent.sync(node).await;
    assert!(matches!(synced, Ok(Synced::Idle(_))), "{synced:?}");
    assert!(agent.host().calls.is_empty(), "{:?}", agent.host().calls);

    // Nothing happened to the node: not written (no annotation, no drain request, no
    // cordon), no Event, no eviction; the daemon only read.
    let node_after = store.get("nodes", "", "worker-0").unwrap_or_default();
    assert_eq!(node_after, node_before);
    assert!(
        store.list("events").is_empty(),
        "{:?}",
        store.list("events")
    );
    assert!(store.evictions().is_empty());
    let daemon = requests_of(&store, DAEMON);
    assert!(!daemon.is_empty(), "the daemon made no request");
    let writes: Vec<&String> = daemon
        .keys()
        .filter(|k| !(k.starts_with("GET") || k.starts_with("LIST") || k.starts_with("WATCH")))
        .collect();
    assert!(
        writes.is_empty(),
        "the certificate writer wrote: {writes:?}"
    );
    assert!(daemon.keys().all(|k| !k.contains("nodes")), "{daemon:?}");
    // Every request each made, its ClusterRole in manifests/ grants.
    for (agent, role) in [(DAEMON, "machine-config-daemon"), (OPERATOR, OPERATOR)] {
        let missing = rbac::ungranted_to(&store.requests_scoped(Some(agent)), role);
        assert!(
            missing.is_empty(),
            "{agent}: not granted by manifests/02-rbac.yaml: {missing:?}"
        );
    }
    operator.abort();
    writer.abort();
}
