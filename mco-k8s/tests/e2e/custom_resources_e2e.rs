//! End to end: the template, KubeletConfig and ContainerRuntimeConfig controllers against
//! the in-process API server. What they write must equal what the pure functions
//! (`mco_render::controllers::templates`, `mco_render::controllers::generate`) give on the same inputs.

use crate::support;
use crate::support::cluster::{repo, start_all_controllers};

use crate::support::apiserver::ApiServer;
use crate::support::yaml_docs;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::{Api, Client};
use mco_k8s::controller::templates::read_tree;
use mco_k8s::controller::writes::comparable;
use mco_k8s::crd;
use mco_render::api::ControllerConfig;
use mco_render::api::{CustomResource, MachineConfig};
use mco_render::controllers::generate::{generate, GenerateInput, GenerateOutcome};
use mco_render::controllers::templates::{generate_template_machine_configs, TemplateOptions};
use serde_json::{json, Value};
use std::time::Duration;

const LIMIT: Duration = support::PATIENCE;
const POOL_LABEL: &str = "pools.operator.machineconfiguration.openshift.io/worker";

fn dynamic(client: &Client, kind: crd::Kind) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &kind.api_resource())
}

fn to_dynamic(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

/// Polls `check` until it returns `Some`, for at most [`LIMIT`].
async fn eventually<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    support::eventually_within(what, LIMIT, check).await
}

/// An object without what the server sets.
fn strip(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["resourceVersion", "uid", "creationTimestamp", "generation"] {
            md.remove(k);
        }
    }
    v
}

fn conditions(v: &Value) -> Vec<(String, String, String)> {
    v["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("type"), s("status"), s("message"))
        })
        .collect()
}

fn expected_conditions(o: &GenerateOutcome) -> Vec<(String, String, String)> {
    o.object_after
        .conditions
        .iter()
        .map(|c| (c.type_.clone(), c.status.clone(), c.message().to_string()))
        .collect()
}

/// Stored objects in the core's model.
fn typed<T: serde::de::DeserializeOwned>(v: Vec<Value>) -> Vec<T> {
    v.into_iter()
        .map(|o| serde_json::from_value(o).unwrap())
        .collect()
}

/// A stored KubeletConfig or ContainerRuntimeConfig in the core's model.
fn resource(v: Value) -> CustomResource {
    CustomResource::from_json(v).unwrap().unwrap()
}

/// A stored MachineConfig in the core's model.
fn machine_config(v: Value) -> MachineConfig {
    serde_json::from_value(v).unwrap()
}

/// The pure sync of `object` (as the server stored it) against the server's state now.
fn expected(server: &ApiServer, object: &Value, others: &[Value]) -> GenerateOutcome {
    let mcs: Vec<MachineConfig> = typed(server.store.list("machineconfigs"));
    generate(&GenerateInput {
        object: resource(object.clone()),
        other_objects: others.iter().cloned().map(resource).collect(),
        existing_machine_configs: mcs.clone(),
        pools: typed(server.store.list("machineconfigpools")),
        base_machine_configs: mcs,
        controller_version: mco_render::CONTROLLER_VERSION.to_string(),
        ..GenerateInput::default()
    })
}

async fn create(api: &Api<DynamicObject>, v: Value) -> Value {
    let o = api
        .create(&PostParams::default(), &to_dynamic(v))
        .await
        .unwrap();
    serde_json::to_value(o).unwrap()
}

fn kubelet_config(name: &str, kubelet: Value) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "KubeletConfig",
        "metadata": {"name": name},
        "spec": {
            "machineConfigPoolSelector": {"matchLabels": {POOL_LABEL: ""}},
            "kubeletConfig": kubelet,
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_and_templates_become_machine_configs() {
    let server = ApiServer::start().await.unwrap();
    let client = server.client();
    let pools = dynamic(&client, crd::MACHINE_CONFIG_POOL);
    let ccs = dynamic(&client, crd::CONTROLLER_CONFIG);
    let kcs = dynamic(&client, crd::KUBELET_CONFIG);
    let ctrcfgs = dynamic(&client, crd::CONTAINER_RUNTIME_CONFIG);
    for mut p in yaml_docs(&repo("examples/cluster/00-pools.yaml")) {
        let name = p["metadata"]["name"].as_str().unwrap_or("").to_string();
        if name == "infra" {
            continue;
        }
        p["metadata"]["labels"] = json!({
            format!("pools.operator.machineconfiguration.openshift.io/{name}"): ""
        });
        create(&pools, p).await;
    }
    for cc in yaml_docs(&repo("examples/cluster/01-controllerconfig.yaml")) {
        create(&ccs, cc).await;
    }
    let controller = start_all_controllers(client.clone());

    // Templates: the role MachineConfigs appear, equal to the pure rendering.
    let cc: ControllerConfig = serde_json::from_value(
        server
            .store
            .get("controllerconfigs", "", "machine-config-controller")
            .unwrap(),
    )
    .unwrap();
    let tree = read_tree(&repo("templates")).unwrap();
    let want = generate_template_machine_configs(&tree, &cc, &TemplateOptions::default()).unwrap();
    for name in [
        "00-worker",
        "01-worker-kubelet",
        "01-worker-container-runtime",
    ] {
        let want = want.iter().find(|m| m.name() == name).unwrap();
        let got = eventually(name, || server.store.get("machineconfigs", "", name)).await;
        assert_eq!(strip(&got), serde_json::to_value(want).unwrap(), "{name}");
        assert_eq!(
            got["metadata"]["ownerReferences"][0]["kind"],
            "ControllerConfig"
        );
    }
    // The render controller renders the worker pool from them.
    eventually("worker pool rendered from the templates", || {
        let p = server.store.get("machineconfigpools", "", "worker")?;
        let sources: Vec<&str> = p["spec"]["configuration"]["source"]
            .as_array()?
            .iter()
            .filter_map(|s| s["name"].as_str())
            .collect();
        [
            "00-worker",
            "01-worker-kubelet",
            "01-worker-container-runtime",
        ]
        .iter()
        .all(|n| sources.contains(n))
        .then_some(())
    })
    .await;

    // A KubeletConfig for the worker pool.
    let kc = create(&kcs, kubelet_config("max-pods", json!({"maxPods": 100}))).await;
    let want = expected(&server, &kc, &[]);
    assert_eq!(want.error, None);
    assert_eq!(want.machine_configs().len(), 1);
    let mc_name = want.machine_configs()[0].name().to_string();
    assert_eq!(mc_name, "99-worker-generated-kubelet");
    let got = eventually("kubelet MachineConfig", || {
        server.store.get("machineconfigs", "", &mc_name)
    })
    .await;
    assert_eq!(
        comparable(&machine_config(got)),
        comparable(want.machine_configs()[0])
    );
    let kc_after = eventually("KubeletConfig status", || {
        let o = server.store.get("kubeletconfigs", "", "max-pods")?;
        (!conditions(&o).is_empty()).then_some(o)
    })
    .await;
    assert_eq!(conditions(&kc_after), expected_conditions(&want));
    assert_eq!(kc_after["metadata"]["finalizers"], json!([mc_name]));
    assert_eq!(
        kc_after["metadata"]["annotations"],
        serde_json::to_value(&want.object_after.annotations).unwrap()
    );
    assert_eq!(
        kc_after["status"]["observedGeneration"],
        kc_after["metadata"]["generation"]
    );

    // A ContainerRuntimeConfig for the worker pool.
    let ctr = create(
        &ctrcfgs,
        json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "ContainerRuntimeConfig",
            "metadata": {"name": "runtime"},
            "spec": {
                "machineConfigPoolSelector": {"matchLabels": {POOL_LABEL: ""}},
                "containerRuntimeConfig": {"pidsLimit": 2048, "logLevel": "debug", "overlaySize": "10G"},
            },
        }),
    )
    .await;
    let want_ctr = expected(&server, &ctr, &[]);
    assert_eq!(want_ctr.error, None);
    let ctr_mc = want_ctr.machine_configs()[0].name().to_string();
    assert_eq!(ctr_mc, "99-worker-generated-containerruntime");
    let got = eventually("runtime MachineConfig", || {
        server.store.get("machineconfigs", "", &ctr_mc)
    })
    .await;
    assert_eq!(
        comparable(&machine_config(got)),
        comparable(want_ctr.machine_configs()[0])
    );
    let ctr_after = eventually("ContainerRuntimeConfig status", || {
        let o = server.store.get("containerruntimeconfigs", "", "runtime")?;
        (!conditions(&o).is_empty()).then_some(o)
    })
    .await;
    assert_eq!(conditions(&ctr_after), expected_conditions(&want_ctr));
    assert_eq!(ctr_after["metadata"]["finalizers"], json!([ctr_mc]));

    // Both land in the worker pool's next rendered config.
    eventually("worker pool rendered with the generated configs", || {
        let p = server.store.get("machineconfigpools", "", "worker")?;
        let sources: Vec<&str> = p["spec"]["configuration"]["source"]
            .as_array()?
            .iter()
            .filter_map(|s| s["name"].as_str())
            .collect();
        (sources.contains(&mc_name.as_str()) && sources.contains(&ctr_mc.as_str())).then_some(())
    })
    .await;

    // An invalid KubeletConfig: a Failure condition naming the field, no MachineConfig.
    create(
        &kcs,
        kubelet_config("bad", json!({"clusterDomain": "example.org"})),
    )
    .await;
    let bad = eventually("Failure condition", || {
        let o = server.store.get("kubeletconfigs", "", "bad")?;
        conditions(&o)
            .into_iter()
            .find(|c| c.0 == "Failure")
            .map(|c| c.2)
    })
    .await;
    assert!(bad.contains("clusterDomain"), "{bad}");
    let bad_obj = server.store.get("kubeletconfigs", "", "bad").unwrap();
    assert!(bad_obj["metadata"]["finalizers"].is_null());

    // A second valid KubeletConfig on the same pool takes the `-1` name.
    create(
        &kcs,
        kubelet_config("second", json!({"podPidsLimit": 4096})),
    )
    .await;
    let second_mc = "99-worker-generated-kubelet-1";
    let got = eventually("second kubelet MachineConfig", || {
        server.store.get("machineconfigs", "", second_mc)
    })
    .await;
    let second = eventually("second KubeletConfig finalizer", || {
        let o = server.store.get("kubeletconfigs", "", "second")?;
        (o["metadata"]["finalizers"] == json!([second_mc])).then_some(o)
    })
    .await;
    assert_eq!(
        got["metadata"]["ownerReferences"][0]["uid"],
        second["metadata"]["uid"]
    );
    assert_eq!(
        second["metadata"]["annotations"]["machineconfiguration.openshift.io/mc-name-suffix"],
        "1"
    );
    // The first one's MachineConfig is untouched.
    assert!(server.store.get("machineconfigs", "", &mc_name).is_some());

    // Deleting it: the API server marks it (its finalizer holds it); the controller deletes
    // its MachineConfig and removes the finalizer, and the KubeletConfig goes.
    let marked = kcs
        .delete("second", &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let marked = marked
        .left()
        .expect("held by its finalizer, not deleted at once");
    assert!(marked.metadata.deletion_timestamp.is_some());
    eventually(
        "second MachineConfig deleted, then its KubeletConfig",
        || {
            let kc_gone = server.store.get("kubeletconfigs", "", "second").is_none();
            let mc_gone = server.store.get("machineconfigs", "", second_mc).is_none();
            (kc_gone && mc_gone).then_some(())
        },
    )
    .await;
    assert!(server.store.get("machineconfigs", "", &mc_name).is_some());

    // Settles: within the limit there comes a quiet spell of 1.5 s (several resync passes)
    // with no write at all. The render controller may still be re-rendering the pool after
    // the deletion when this starts, so a busy machine gets time to finish that first.
    let started = std::time::Instant::now();
    let mut rv = server.store.resource_version();
    loop {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let now = server.store.resource_version();
        if now == rv {
            break;
        }
        let writes: Vec<String> = server
            .store
            .request_counts()
            .into_iter()
            .filter(|(k, _)| {
                k.starts_with("PUT") || k.starts_with("PATCH") || k.starts_with("POST")
            })
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still writing after 20 s: {writes:?}"
        );
        rv = now;
    }
    controller.abort();
}

/// A MachineConfig write against a stale copy reports a conflict instead of failing, and the
/// next attempt with the fresh copy goes through; an equal object is not written again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_config_writes_survive_conflicts_and_skip_no_ops() {
    use mco_k8s::controller::writes::{ensure, Written};
    let server = ApiServer::start().await.unwrap();
    let client = server.client();
    let mcs = mco_k8s::objects::api::<MachineConfig>(&client);
    let mc = |text: &str| {
        machine_config(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfig",
            "metadata": {"name": "99-worker-generated-kubelet",
                "labels": {"machineconfiguration.openshift.io/role": "worker"}},
            "spec": {"config": {"ignition": {"version": "3.5.0"}}, "kernelType": text,
                "kernelArguments": null},
        }))
    };
    let w = ensure(&mcs, None, &mc("")).await.unwrap();
    assert_eq!(w, Written::Created);
    let stale = machine_config(
        server
            .store
            .get("machineconfigs", "", "99-worker-generated-kubelet")
            .unwrap(),
    );
    // Nulls and server-set metadata do not count as a change.
    assert_eq!(
        ensure(&mcs, Some(&stale), &mc("")).await.unwrap(),
        Written::Unchanged
    );
    // Someone else writes it in between.
    let mut other = stale.clone();
    other.spec.kernel_type = "default".into();
    ensure(&mcs, Some(&stale), &other).await.unwrap();
    let w = ensure(&mcs, Some(&stale), &mc("realtime")).await.unwrap();
    assert_eq!(w, Written::Conflict);
    let fresh = server
        .store
        .get("machineconfigs", "", "99-worker-generated-kubelet")
        .unwrap();
    assert_eq!(fresh["spec"]["kernelType"], "default");
    let w = ensure(&mcs, Some(&machine_config(fresh)), &mc("realtime"))
        .await
        .unwrap();
    assert_eq!(w, Written::Updated);
    let after = server
        .store
        .get("machineconfigs", "", "99-worker-generated-kubelet")
        .unwrap();
    assert_eq!(after["spec"]["kernelType"], "realtime");
}
