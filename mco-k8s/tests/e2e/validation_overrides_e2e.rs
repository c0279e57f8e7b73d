//! The render controller and `irreconcilableValidationOverrides`: a `storage.disks` change
//! leaves the pool RenderDegraded on its rendered config until the MachineConfiguration
//! `cluster` exempts disks; then the pool renders and targets the new config. A FeatureGate
//! `cluster` that leaves `IrreconcilableMachineConfig` off turns the overrides off again.

use crate::support;
use crate::support::apiserver::ApiServer;
use crate::support::cluster::examples;
use crate::support::yaml_docs;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mco_k8s::controller::{self, Options};
use mco_k8s::crd;
use serde_json::{json, Value};
use std::time::Duration;

fn dynamic(client: &Client, ar: &ApiResource) -> Api<DynamicObject> {
    Api::all_with(client.clone(), ar)
}

fn object(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

fn operator_resource(kind: &str, plural: &str, group: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn worker_mc(name: &str, storage: Value) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": storage}}
    })
}

fn worker(server: &ApiServer) -> Value {
    server
        .store
        .get("machineconfigpools", "", "worker")
        .unwrap()
}

fn render_degraded(pool: &Value) -> (String, String) {
    let c = pool["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "RenderDegraded"))
        .cloned()
        .unwrap_or(Value::Null);
    (
        c["status"].as_str().unwrap_or("").to_string(),
        c["message"].as_str().unwrap_or("").to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_override_lets_a_disk_change_render() {
    let limit = support::PATIENCE;
    let server = ApiServer::start().await.unwrap();
    server.store.install("machineconfigurations");
    let client = server.client();
    let pp = PostParams::default();
    let pools = dynamic(&client, &crd::MACHINE_CONFIG_POOL.api_resource());
    for p in yaml_docs(&examples().join("00-pools.yaml")) {
        if p["metadata"]["name"] == "worker" {
            pools.create(&pp, &object(p)).await.unwrap();
        }
    }
    let ccs = dynamic(&client, &crd::CONTROLLER_CONFIG.api_resource());
    for cc in yaml_docs(&examples().join("01-controllerconfig.yaml")) {
        ccs.create(&pp, &object(cc)).await.unwrap();
    }
    let mcs = dynamic(&client, &crd::MACHINE_CONFIG.api_resource());
    mcs.create(&pp, &object(worker_mc("00-worker", json!({}))))
        .await
        .unwrap();
    let opts = Options {
        debounce: Duration::from_millis(20),
        resync: Duration::from_secs(1),
        ..Options::default()
    };
    let run = tokio::spawn(controller::run(client.clone(), opts));

    let first = support::poll_until(
        "the worker pool renders",
        limit,
        || async {
            worker(&server)["spec"]["configuration"]["name"]
                .as_str()
                .map(str::to_string)
        },
        || worker(&server).to_string(),
    )
    .await;

    let disk = json!({"disks": [{"device": "/dev/vdb", "wipeTable": true}]});
    mcs.create(&pp, &object(worker_mc("99-worker-disk", disk)))
        .await
        .unwrap();
    let message = support::poll_until(
        "the disk change is RenderDegraded",
        limit,
        || async {
            let (status, message) = render_degraded(&worker(&server));
            (status == "True").then_some(message)
        },
        || worker(&server).to_string(),
    )
    .await;
    assert!(
        message
            .ends_with("base config \"99-worker-disk\": ignition disks section contains changes"),
        "{message}"
    );
    assert_eq!(
        worker(&server)["spec"]["configuration"]["name"],
        first.as_str()
    );

    // The MachineConfiguration `cluster` exempts disks: the pool renders and moves.
    let machine_configurations = dynamic(
        &client,
        &operator_resource(
            "MachineConfiguration",
            "machineconfigurations",
            "operator.openshift.io",
        ),
    );
    machine_configurations
        .create(
            &pp,
            &object(json!({
                "apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
                "metadata": {"name": "cluster"},
                "spec": {"managementState": "Managed",
                         "irreconcilableValidationOverrides": {"storage": ["Disks"]}}
            })),
        )
        .await
        .unwrap();
    let second = support::poll_until(
        "the pool renders with the override",
        limit,
        || async {
            let p = worker(&server);
            let name = p["spec"]["configuration"]["name"].as_str()?.to_string();
            (name != first && render_degraded(&p).0 == "False").then_some(name)
        },
        || worker(&server).to_string(),
    )
    .await;
    let rendered = server.store.get("machineconfigs", "", &second).unwrap();
    assert_eq!(
        rendered["spec"]["config"]["storage"]["disks"][0]["device"],
        "/dev/vdb"
    );

    // A FeatureGate that leaves the gate off: the next disk change is refused again.
    let feature_gates = dynamic(
        &client,
        &operator_resource("FeatureGate", "featuregates", "config.openshift.io"),
    );
    feature_gates
        .create(
            &pp,
            &object(json!({
                "apiVersion": "config.openshift.io/v1", "kind": "FeatureGate",
                "metadata": {"name": "cluster"}, "spec": {}
            })),
        )
        .await
        .unwrap();
    let status = json!({"status": {"featureGates": [{"version": "4.22.0", "enabled": [],
        "disabled": [{"name": "IrreconcilableMachineConfig"}]}]}});
    feature_gates
        .patch_status("cluster", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let disk2 = json!({"disks": [{"device": "/dev/vdc", "wipeTable": true}]});
    mcs.create(&pp, &object(worker_mc("99-worker-disk2", disk2)))
        .await
        .unwrap();
    support::poll_until(
        "the gate off refuses the second disk change",
        limit,
        || async { (render_degraded(&worker(&server)).0 == "True").then_some(()) },
        || worker(&server).to_string(),
    )
    .await;
    assert_eq!(
        worker(&server)["spec"]["configuration"]["name"],
        second.as_str()
    );
    run.abort();
}
