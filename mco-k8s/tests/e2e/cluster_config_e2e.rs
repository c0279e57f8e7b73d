//! End to end: a mirror added through an ImageDigestMirrorSet goes through the whole cluster.
//! machine-config-controller's cluster-config controller writes `99-worker-generated-registries`
//! (equal to what `mco_render::controllers::generate::cluster_config::sync_all` gives for what
//! the server holds), the render controller makes a new rendered config for the worker pool,
//! and the node's plan between the old and new rendered configs neither drains nor reboots. A
//! pass with nothing to do writes nothing; deleting the mirror set updates the MachineConfig.
// The test API server's write closures return its Status error by value.
#![allow(clippy::result_large_err)]

use crate::support;
use crate::support::cluster::{generating_options, repo, start_all_controllers};

use crate::support::apiserver::{resource, ApiServer};
use crate::support::yaml_docs;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::Api;
use mco_k8s::controller::cluster_config::{image_resources, ClusterConfigs};
use mco_k8s::controller::generators::Caches;
use mco_k8s::controller::writes::comparable;
use mco_render::api::{MachineConfig, MachineConfigPool};
use mco_render::controllers::generate::cluster_config::{sync_all, ClusterConfigInput};
use mco_render::controllers::generate::upstream_json;
use mco_render::plan::input::rendered_input;
use mco_render::plan::{compute, ActionType};
use serde_json::{json, Value};
use std::time::Duration;

const LIMIT: Duration = support::PATIENCE;
const REGISTRIES_MC: &str = "99-worker-generated-registries";
const MIRROR: &str = "mirror.lab.example.net/release";

/// Polls `check` until it returns `Some`, for at most [`LIMIT`].
async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let run = async {
        loop {
            if let Some(v) = check() {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    match tokio::time::timeout(LIMIT, run).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// Creates `obj`, then writes its status (a create leaves a custom resource's status out).
fn seed(server: &ApiServer, plural: &str, obj: Value) {
    let def = resource(plural).unwrap_or_else(|| panic!("{plural} not served"));
    let status = obj.get("status").cloned();
    let name = obj["metadata"]["name"].as_str().unwrap().to_string();
    server.store.create(def, "", obj).unwrap();
    if let Some(status) = status {
        server
            .store
            .write(def, "", &name, true, |o| {
                let mut o = o.clone();
                o["status"] = status;
                Ok(o)
            })
            .unwrap();
    }
}

/// The contents of `path` in a MachineConfig's Ignition config.
/// The example cluster's master and worker pools, labelled as the operator's built-in pools,
/// its ControllerConfig, and a ClusterVersion naming the release image.
fn seed_cluster(server: &ApiServer) {
    for mut p in yaml_docs(&repo("examples/cluster/00-pools.yaml")) {
        let name = p["metadata"]["name"].as_str().unwrap_or("").to_string();
        if name == "infra" {
            continue;
        }
        p["metadata"]["labels"] = json!({
            format!("pools.operator.machineconfiguration.openshift.io/{name}"): "",
            "machineconfiguration.openshift.io/mco-built-in": "",
        });
        seed(server, "machineconfigpools", p);
    }
    for cc in yaml_docs(&repo("examples/cluster/01-controllerconfig.yaml")) {
        seed(server, "controllerconfigs", cc);
    }
    seed(
        server,
        "clusterversions",
        json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
            "metadata": {"name": "version"},
            "status": {"desired": {"image": "registry.example.net/release/ocp@sha256:1111111111111111111111111111111111111111111111111111111111111111"}}}),
    );
}

fn file(mc: &Value, path: &str) -> Option<String> {
    let files = mc.pointer("/spec/config/storage/files")?.as_array()?;
    let f = files.iter().find(|f| f["path"] == path)?;
    let source = f.pointer("/contents/source")?.as_str()?;
    let bytes = mco_ignition::dataurl::decode_contents(
        source,
        f.pointer("/contents/compression").and_then(Value::as_str),
    )
    .ok()?;
    Some(String::from_utf8(bytes).unwrap())
}

/// The worker pool's rendered config name and its source MachineConfig names.
fn worker_config(server: &ApiServer) -> Option<(String, Vec<String>)> {
    let p = server.store.get("machineconfigpools", "", "worker")?;
    let name = p["spec"]["configuration"]["name"].as_str()?.to_string();
    let sources = p["spec"]["configuration"]["source"]
        .as_array()?
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_string))
        .collect();
    Some((name, sources))
}

fn machine_config(v: Value) -> MachineConfig {
    serde_json::from_value(v).unwrap()
}

/// Where the server differs from what the pure function wants, given everything the server
/// holds now: the writes whose result is not stored already. (The pure function compares
/// configs byte for byte as upstream does, so it may ask again for a MachineConfig equal to the
/// stored one; the controller's `ensure` skips those.)
fn pure_writes(server: &ApiServer) -> Vec<String> {
    let list = |plural: &str| server.store.list(plural);
    let mcs: Vec<MachineConfig> = list("machineconfigs")
        .into_iter()
        .map(machine_config)
        .collect();
    let mcs: Vec<Value> = mcs.iter().map(upstream_json).collect();
    let input = ClusterConfigInput {
        image: server.store.get("images", "", "cluster"),
        cluster_version: server.store.get("clusterversions", "", "version"),
        image_content_source_policies: list("imagecontentsourcepolicies"),
        image_digest_mirror_sets: list("imagedigestmirrorsets"),
        image_tag_mirror_sets: list("imagetagmirrorsets"),
        pools: list("machineconfigpools")
            .into_iter()
            .map(|p| serde_json::from_value::<MachineConfigPool>(p).unwrap())
            .collect(),
        existing_machine_configs: mcs.clone(),
        base_machine_configs: mcs,
        controller_version: generating_options().render.controller_version,
        ..ClusterConfigInput::default()
    };
    let mut out = Vec::new();
    for (_, o) in sync_all(&input) {
        assert_eq!(o.error, None);
        for w in &o.writes {
            let stored = server
                .store
                .get("machineconfigs", "", w.target())
                .map(machine_config);
            let same = match (w.machine_config(), &stored) {
                (Some(want), Some(have)) => comparable(want) == comparable(have),
                (None, None) => true,
                _ => false,
            };
            if !same {
                out.push(w.describe());
            }
        }
    }
    out
}

/// MachineConfig writes served so far.
fn mc_writes(server: &ApiServer) -> u64 {
    server
        .store
        .request_counts()
        .into_iter()
        .filter(|(k, _)| {
            ["PUT", "PATCH", "POST", "DELETE"]
                .iter()
                .any(|m| k.starts_with(m))
                && k.ends_with(" machineconfigs")
        })
        .map(|(_, n)| n)
        .sum()
}

/// Waits for a spell of `quiet` without any write to MachineConfigs.
async fn settle(server: &ApiServer, quiet: Duration) {
    let started = std::time::Instant::now();
    let mut before = mc_writes(server);
    loop {
        tokio::time::sleep(quiet).await;
        let now = mc_writes(server);
        if now == before {
            return;
        }
        assert!(started.elapsed() < LIMIT, "MachineConfig writes never stop");
        before = now;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_mirror_goes_through_the_cluster_without_drain_or_reboot() {
    let server = ApiServer::start().await.unwrap();
    let client = server.client();
    seed_cluster(&server);
    // The Image names an insecure registry, so registries.conf is generated from the start.
    seed(
        &server,
        "images",
        json!({"apiVersion": "config.openshift.io/v1", "kind": "Image",
            "metadata": {"name": "cluster"},
            "spec": {"registrySources": {"insecureRegistries": ["registry.lab.example.net:5000"]}}}),
    );
    let controller = start_all_controllers(client.clone());

    // The registries MachineConfig, owned by the Image, and the worker pool rendered with it.
    let first = eventually("the registries MachineConfig", || {
        server.store.get("machineconfigs", "", REGISTRIES_MC)
    })
    .await;
    assert_eq!(first["metadata"]["ownerReferences"][0]["kind"], "Image");
    let conf = file(&first, "/etc/containers/registries.conf").unwrap();
    assert!(conf.contains("registry.lab.example.net:5000"), "{conf}");
    assert!(!conf.contains(MIRROR), "{conf}");
    let (old_rendered, _) = eventually("the worker pool rendered with it", || {
        worker_config(&server).filter(|(_, s)| s.iter().any(|n| n == REGISTRIES_MC))
    })
    .await;
    settle(&server, Duration::from_millis(1500)).await;
    assert_eq!(pure_writes(&server), Vec::<String>::new());

    // An ImageDigestMirrorSet adds a mirror.
    let [_, _, idms_resource, ..] = image_resources();
    let idms = Api::<DynamicObject>::all_with(client.clone(), &idms_resource);
    let set: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet",
        "metadata": {"name": "release-mirror"},
        "spec": {"imageDigestMirrors": [
            {"source": "registry.example.net/release", "mirrors": [MIRROR]}
        ]}
    }))
    .unwrap();
    idms.create(&PostParams::default(), &set).await.unwrap();
    let with_mirror = eventually("the mirror in registries.conf", || {
        let mc = server.store.get("machineconfigs", "", REGISTRIES_MC)?;
        file(&mc, "/etc/containers/registries.conf")?
            .contains(MIRROR)
            .then_some(mc)
    })
    .await;
    let conf = file(&with_mirror, "/etc/containers/registries.conf").unwrap();
    assert!(conf.contains("registry.lab.example.net:5000"), "{conf}");
    // A new rendered config for the worker pool includes it.
    let (new_rendered, _) = eventually("a new rendered worker config", || {
        worker_config(&server).filter(|(n, _)| *n != old_rendered)
    })
    .await;
    let rendered = |name: &str| {
        let mc = machine_config(server.store.get("machineconfigs", "", name).unwrap());
        rendered_input(name, &mc.spec).unwrap()
    };
    let (old, new) = (rendered(&old_rendered), rendered(&new_rendered));
    let new_mc = server
        .store
        .get("machineconfigs", "", &new_rendered)
        .unwrap();
    assert!(file(&new_mc, "/etc/containers/registries.conf")
        .unwrap()
        .contains(MIRROR));
    // The node's plan: a mirror-only registries.conf change neither drains nor reboots.
    let plan = compute(&old, &new, None);
    assert_eq!(plan.reconcilable, Ok(()));
    assert_eq!(
        plan.diff.changed_files,
        vec!["/etc/containers/registries.conf".to_string()]
    );
    assert_eq!(plan.drain, Ok(false), "{plan:#?}");
    assert_eq!(plan.legacy_drain, Ok(false), "{plan:#?}");
    assert!(
        !plan
            .node_disruption
            .actions
            .iter()
            .any(|a| matches!(a.kind, ActionType::Reboot | ActionType::Drain)),
        "{plan:#?}"
    );
    assert_ne!(plan.legacy_action, "reboot");

    // Settled, the cluster is what the pure function gives, and a forced pass writes nothing.
    settle(&server, Duration::from_millis(1500)).await;
    assert_eq!(pure_writes(&server), Vec::<String>::new());
    let before = mc_writes(&server);
    let (tx, _rx) = tokio::sync::mpsc::channel(1);
    let caches = Caches::start(&client, &tx);
    assert!(caches.ready().await);
    let pass = ClusterConfigs::new(
        client.clone(),
        &generating_options().render.controller_version,
    )
    .sync(&caches, &mut caches.machine_configs_by_name())
    .await
    .unwrap();
    assert!(!pass.retry);
    assert_eq!(mc_writes(&server), before, "a no-op pass wrote");

    // Deleting the mirror set takes the mirror out again.
    idms.delete("release-mirror", &DeleteParams::default())
        .await
        .unwrap();
    let without = eventually("the mirror gone from registries.conf", || {
        let mc = server.store.get("machineconfigs", "", REGISTRIES_MC)?;
        (!file(&mc, "/etc/containers/registries.conf")?.contains(MIRROR)).then_some(mc)
    })
    .await;
    assert_eq!(
        file(&without, "/etc/containers/registries.conf"),
        file(&first, "/etc/containers/registries.conf")
    );
    controller.abort();
}

const KEY: &str = "LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0KdGVzdAotLS0tLUVORCBQVUJMSUMgS0VZLS0tLS0K";

/// A public-key policy object of `kind` for `scopes`.
fn signature_policy(kind: &str, name: &str, namespace: Option<&str>, scopes: &[&str]) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({"apiVersion": "config.openshift.io/v1", "kind": kind, "metadata": metadata,
        "spec": {"scopes": scopes, "policy": {
            "rootOfTrust": {"policyType": "PublicKey", "publicKey": {"keyData": KEY}}}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_signature_policy_regenerates_the_registries_machine_config() {
    let server = ApiServer::start().await.unwrap();
    let client = server.client();
    seed_cluster(&server);
    seed(
        &server,
        "images",
        json!({"apiVersion": "config.openshift.io/v1", "kind": "Image",
            "metadata": {"name": "cluster"}, "spec": {}}),
    );
    let controller = start_all_controllers(client.clone());

    // Nothing to write yet: the registries MachineConfig holds no file.
    let first = eventually("the registries MachineConfig", || {
        server.store.get("machineconfigs", "", REGISTRIES_MC)
    })
    .await;
    assert_eq!(file(&first, "/etc/containers/policy.json"), None);

    // A ClusterImagePolicy: policy.json requires signatures for its scope, registries.d
    // turns sigstore attachments on for it.
    let [.., cip_resource, ip_resource] = image_resources();
    let cips = Api::<DynamicObject>::all_with(client.clone(), &cip_resource);
    let cip: DynamicObject = serde_json::from_value(signature_policy(
        "ClusterImagePolicy",
        "signed-apps",
        None,
        &["quay.io/signed"],
    ))
    .unwrap();
    cips.create(&PostParams::default(), &cip).await.unwrap();
    let signed = eventually("policy.json with the sigstore requirement", || {
        let mc = server.store.get("machineconfigs", "", REGISTRIES_MC)?;
        file(&mc, "/etc/containers/policy.json")?
            .contains("sigstoreSigned")
            .then_some(mc)
    })
    .await;
    let policy: Value =
        serde_json::from_str(&file(&signed, "/etc/containers/policy.json").unwrap()).unwrap();
    assert_eq!(
        policy["transports"]["docker"]["quay.io/signed"][0]["keyData"],
        KEY
    );
    let attachments = file(
        &signed,
        "/etc/containers/registries.d/sigstore-registries.yaml",
    )
    .unwrap();
    assert_eq!(
        attachments,
        "docker:\n  quay.io/signed:\n    use-sigstore-attachments: true\n"
    );

    // An ImagePolicy in a namespace: CRI-O's policy for that namespace.
    let ips = Api::<DynamicObject>::namespaced_with(client.clone(), "team-a", &ip_resource);
    let ip: DynamicObject = serde_json::from_value(signature_policy(
        "ImagePolicy",
        "team",
        Some("team-a"),
        &["registry.example.net/team-a"],
    ))
    .unwrap();
    ips.create(&PostParams::default(), &ip).await.unwrap();
    let namespaced = eventually("the namespace's CRI-O policy", || {
        let mc = server.store.get("machineconfigs", "", REGISTRIES_MC)?;
        file(&mc, "/etc/crio/policies/team-a.json")
    })
    .await;
    let namespaced: Value = serde_json::from_str(&namespaced).unwrap();
    for scope in ["quay.io/signed", "registry.example.net/team-a"] {
        assert_eq!(
            namespaced["transports"]["docker"][scope][0]["type"], "sigstoreSigned",
            "{namespaced}"
        );
    }
    settle(&server, Duration::from_millis(1500)).await;
    let mc = server
        .store
        .get("machineconfigs", "", REGISTRIES_MC)
        .unwrap();
    let expected = {
        let list = |plural: &str| server.store.list(plural);
        let mcs: Vec<Value> = list("machineconfigs")
            .into_iter()
            .map(machine_config)
            .map(|m| upstream_json(&m))
            .collect();
        let input = ClusterConfigInput {
            image: server.store.get("images", "", "cluster"),
            cluster_version: server.store.get("clusterversions", "", "version"),
            cluster_image_policies: list("clusterimagepolicies"),
            image_policies: list("imagepolicies"),
            pools: list("machineconfigpools")
                .into_iter()
                .map(|p| serde_json::from_value::<MachineConfigPool>(p).unwrap())
                .collect(),
            existing_machine_configs: mcs.clone(),
            base_machine_configs: mcs,
            controller_version: generating_options().render.controller_version,
            ..ClusterConfigInput::default()
        };
        let out = sync_all(&input);
        let (_, o) = out.last().unwrap().clone();
        o.cluster
            .into_iter()
            .find(|m| m["metadata"]["name"] == REGISTRIES_MC)
            .unwrap()
    };
    assert_eq!(
        file(&mc, "/etc/crio/policies/team-a.json"),
        file(&expected, "/etc/crio/policies/team-a.json")
    );
    assert_eq!(
        file(&mc, "/etc/containers/policy.json"),
        file(&expected, "/etc/containers/policy.json")
    );

    // Deleting the ClusterImagePolicy takes its scope out again.
    cips.delete("signed-apps", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the cluster scope gone", || {
        let mc = server.store.get("machineconfigs", "", REGISTRIES_MC)?;
        (!file(&mc, "/etc/containers/policy.json")?.contains("quay.io/signed")).then_some(())
    })
    .await;
    controller.abort();
}
