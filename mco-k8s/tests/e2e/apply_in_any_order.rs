//! `kubectl apply -f dir/` with the admission webhook installed, as users apply folders: each
//! example folder (and real-content clusters from ../shared) created one object per request
//! in several orders (file order, where the pools come first; reversed; shuffled), against
//! the in-process API server calling the real webhook over HTTPS through the manifests'
//! ValidatingWebhookConfiguration, with the render and generating controllers running. Every
//! object is admitted and reviewed (never skipped), the controller's own writes are not
//! reviewed (the configuration's matchCondition), and every pool ends on the rendered config
//! the offline render gives (for real content: upstream's rendered name). The mistakes the
//! webhook exists for are still refused, with the webhook's message.

// The test API server's write closures return its Status error by value.
#![allow(clippy::result_large_err)]

use crate::support;

use crate::support::admission::Outcome;
use crate::support::apiserver::{resource, ApiServer, ResourceDef};
use crate::support::cluster::repo;
use crate::support::yaml_docs;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::Api;
use mco_render::api::MachineConfig;
use mco_render::manifests::expand::{expand_manifests, ClusterOptions};
use mco_render::manifests::Manifests;
use mco_render::render::{render_pool, Rendered};
use mco_render::RenderOptions;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

const NAMESPACE: &str = "openshift-machine-config-operator";
const CONTROLLER_USER: &str =
    "system:serviceaccount:openshift-machine-config-operator:machine-config-controller";
const WEBHOOK: &str = "machineconfigs.machineconfiguration.openshift.io";
const LIMIT: Duration = support::PATIENCE;

/// The objects of a folder, in file order.
fn folder(path: &str) -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir(repo(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.iter().flat_map(|f| yaml_docs(f)).collect()
}

fn label(v: &Value) -> String {
    format!(
        "{} {}",
        v["kind"].as_str().unwrap_or(""),
        v["metadata"]["name"].as_str().unwrap_or("")
    )
}

/// A deterministic shuffle (xorshift).
fn shuffled(objects: &[Value], seed: u64) -> Vec<Value> {
    let mut v = objects.to_vec();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = usize::try_from(x % (i as u64 + 1)).unwrap_or(0);
        v.swap(i, j);
    }
    v
}

/// File order, reversed, and two shuffles.
fn orders(objects: &[Value]) -> Vec<Vec<Value>> {
    vec![
        objects.to_vec(),
        objects.iter().rev().cloned().collect(),
        shuffled(objects, 7),
        shuffled(objects, 31),
    ]
}

fn def_of(kind: &str) -> &'static ResourceDef {
    let plural = match kind {
        "MachineConfig" => "machineconfigs",
        "MachineConfigPool" => "machineconfigpools",
        "ControllerConfig" => "controllerconfigs",
        "KubeletConfig" => "kubeletconfigs",
        "ContainerRuntimeConfig" => "containerruntimeconfigs",
        "Image" => "images",
        "ClusterVersion" => "clusterversions",
        "ImageDigestMirrorSet" => "imagedigestmirrorsets",
        "ImageTagMirrorSet" => "imagetagmirrorsets",
        "ImageContentSourcePolicy" => "imagecontentsourcepolicies",
        "Node" => "nodes",
        "RolloutPolicy" => "rolloutpolicies",
        "MachineOSConfig" => "machineosconfigs",
        "PinnedImageSet" => "pinnedimagesets",
        "Secret" => "secrets",
        "ConfigMap" => "configmaps",
        other => panic!("no resource for kind {other}"),
    };
    resource(plural).unwrap_or_else(|| panic!("{plural} not served"))
}

fn api(client: &kube::Client, def: &ResourceDef) -> Api<DynamicObject> {
    api_in(client, def, None)
}

/// The API of `def`'s objects, in `namespace` when it has one.
fn api_in(client: &kube::Client, def: &ResourceDef, namespace: Option<&str>) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: def.group.to_string(),
        version: def.version.to_string(),
        api_version: def.api_version(),
        kind: def.kind.to_string(),
        plural: def.plural.to_string(),
    };
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// Each pool rendered, as `mco-render render` renders these objects.
fn offline_rendered(objects: &[Value]) -> BTreeMap<String, Rendered> {
    let mut m = Manifests::default();
    let text = serde_json::to_string(objects).unwrap_or_else(|e| panic!("{e}"));
    m.add_file("folder.json", &text)
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = RenderOptions::default();
    let errors = expand_manifests(
        &mut m,
        &ClusterOptions {
            controller_version: opts.controller_version.clone(),
            templates: None,
            release: opts.release,
        },
    );
    assert!(errors.is_empty(), "{errors:?}");
    let cc = m
        .controller_config
        .as_ref()
        .map(|(_, c)| c.spec.clone())
        .unwrap_or_default();
    let opts = m.render_options(&opts);
    let mcs: Vec<MachineConfig> = m.machine_configs.iter().map(|(_, mc)| mc.clone()).collect();
    m.pools
        .iter()
        .map(|(_, p)| {
            let r = render_pool(p, &mcs, &cc, &opts)
                .unwrap_or_else(|e| panic!("pool {}: {e}", p.name()));
            (p.name().to_string(), r)
        })
        .collect()
}

/// The rendered config of each pool, as `mco-render render` gives it for these objects.
fn offline(objects: &[Value]) -> BTreeMap<String, MachineConfig> {
    offline_rendered(objects)
        .into_iter()
        .map(|(pool, r)| (pool, r.machine_config))
        .collect()
}

/// Each pool's rendered config name.
fn names(rendered: &BTreeMap<String, MachineConfig>) -> BTreeMap<String, String> {
    rendered
        .iter()
        .map(|(pool, mc)| (pool.clone(), mc.name().to_string()))
        .collect()
}

/// A cluster as installed: the API server, the controller's webhook behind the manifests'
/// Service and ValidatingWebhookConfiguration, and the controllers, all as the controller's
/// service account.
struct Cluster {
    server: ApiServer,
    webhook: Option<support::admission::InstalledWebhook>,
    controllers: tokio::task::JoinHandle<()>,
}

impl Cluster {
    async fn install() -> Cluster {
        let server = ApiServer::start().await.expect("apiserver");
        let webhook = support::admission::install_webhook(&server, LIMIT).await;
        let client = server.client_for(CONTROLLER_USER, "machine-config-controller");
        let opts = mco_k8s::controller::Options {
            debounce: Duration::from_millis(20),
            resync: Duration::from_secs(1),
            gc_keep: None,
            ..mco_k8s::controller::Options::default()
        };
        let controllers = tokio::spawn(async move {
            let generators = mco_k8s::controller::generators::run(client.clone(), opts.clone());
            tokio::select! {
                r = mco_k8s::controller::run(client, opts) => {
                    if let Err(e) = r {
                        panic!("controller stopped: {e}");
                    }
                }
                () = generators => {}
            }
        });
        Cluster {
            server,
            webhook: Some(webhook),
            controllers,
        }
    }

    /// Creates `objects` in this order, one request each, as kubectl's admin; every one must
    /// be admitted. Returns the warnings each got.
    async fn apply(&self, what: &str, objects: &[Value]) -> BTreeMap<String, Vec<String>> {
        let admin = self.server.client();
        for obj in objects {
            let def = def_of(obj["kind"].as_str().unwrap_or(""));
            let mut o = obj.clone();
            // A status is not the client's to set (a create drops it): a pool's is the
            // controller's, the others' (ClusterVersion's release image) their operators'.
            let status = o.as_object_mut().and_then(|m| m.remove("status"));
            let d: DynamicObject = serde_json::from_value(o).expect("object");
            let api = api_in(&admin, def, obj["metadata"]["namespace"].as_str());
            if let Err(e) = api.create(&PostParams::default(), &d).await {
                panic!(
                    "{what}: {} refused: {e}\norder: {:?}",
                    label(obj),
                    objects.iter().map(label).collect::<Vec<_>>()
                );
            }
            if let Some(status) = status.filter(|_| obj["kind"] != "MachineConfigPool") {
                let name = obj["metadata"]["name"].as_str().unwrap_or("");
                self.server
                    .store
                    .write(def, "", name, true, |o| {
                        let mut o = o.clone();
                        o["status"] = status.clone();
                        Ok(o)
                    })
                    .unwrap_or_else(|e| panic!("{what}: {}: status: {e:?}", label(obj)));
            }
        }
        let mut warnings = BTreeMap::new();
        for call in self.server.store.admission_calls() {
            assert_eq!(call.webhook, WEBHOOK);
            match call.outcome {
                Outcome::Allowed(w) => {
                    warnings.insert(format!("{} {}", call.kind, call.name), w);
                }
                other => panic!("{what}: {} {}: {other:?}", call.kind, call.name),
            }
        }
        // Every reviewed kind was reviewed (the policy is Ignore: a webhook that was never
        // reached would admit everything silently).
        for obj in objects {
            let reviewed = matches!(
                obj["kind"].as_str(),
                Some(
                    "MachineConfig"
                        | "MachineConfigPool"
                        | "KubeletConfig"
                        | "ContainerRuntimeConfig"
                        | "RolloutPolicy"
                )
            );
            assert_eq!(
                warnings.contains_key(&label(obj)),
                reviewed,
                "{what}: {} reviewed?",
                label(obj)
            );
        }
        warnings
    }

    /// Waits until every pool is on `expected`'s rendered config (name and spec).
    async fn settles_on(&self, what: &str, expected: &BTreeMap<String, String>) {
        let store = &self.server.store;
        let settled = || {
            expected.iter().all(|(pool, name)| {
                store.get("machineconfigpools", "", pool).is_some_and(|p| {
                    p["spec"]["configuration"]["name"] == json!(name)
                        && p["status"]["configuration"]["name"] == json!(name)
                }) && store.get("machineconfigs", "", name).is_some()
            })
        };
        let deadline = tokio::time::Instant::now() + LIMIT;
        while !settled() {
            if tokio::time::Instant::now() > deadline {
                let pools: Vec<Value> = store
                    .list("machineconfigpools")
                    .into_iter()
                    .map(|p| json!({"name": p["metadata"]["name"], "spec": p["spec"]["configuration"], "status": p["status"]}))
                    .collect();
                let mcs: Vec<Value> = store
                    .list("machineconfigs")
                    .into_iter()
                    .map(|m| m["metadata"]["name"].clone())
                    .collect();
                panic!("{what}: the pools never rendered {expected:#?}\npools: {pools:#?}\nmachine configs: {mcs:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The controller's writes (rendered configs, pool status) were not reviewed.
        assert!(
            store
                .admission_calls()
                .iter()
                .all(|c| !c.name.starts_with("rendered-")),
            "{what}: a rendered config was reviewed"
        );
    }

    async fn stop(mut self) {
        self.controllers.abort();
        if let Some(h) = self.webhook.take().map(|w| w.hook) {
            h.stop().await;
        }
    }
}

/// A folder's objects, with a ControllerConfig where it has none (the operator creates it).
fn with_controller_config(mut objects: Vec<Value>) -> Vec<Value> {
    if !objects.iter().any(|o| o["kind"] == "ControllerConfig") {
        objects.push(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "ControllerConfig",
            "metadata": {"name": "machine-config-controller"}, "spec": {}
        }));
    }
    objects
}

/// Applies `objects` ([`with_controller_config`]) in every order of [`orders`] to a new
/// cluster each time.
async fn any_order(what: &str, objects: Vec<Value>) {
    any_order_then(what, objects, &[], |_, _| Box::pin(async {})).await;
}

/// What a test checks on each settled cluster (given the order's label).
type Then = for<'c> fn(&'c Cluster, &'c str) -> Pin<Box<dyn Future<Output = ()> + 'c>>;

/// [`any_order`] on clusters that already hold `installed` (what the operator and the
/// installer made), then `then` on each settled cluster.
async fn any_order_then(what: &str, objects: Vec<Value>, installed: &[Value], then: Then) {
    let objects = with_controller_config(objects);
    let rendered = offline(&objects);
    let expected = names(&rendered);
    for (i, order) in orders(&objects).into_iter().enumerate() {
        let what = format!("{what} (order {i})");
        let cluster = Cluster::install().await;
        for obj in installed {
            let def = def_of(obj["kind"].as_str().unwrap_or(""));
            let ns = obj["metadata"]["namespace"].as_str().unwrap_or("");
            cluster
                .server
                .store
                .create(def, ns, obj.clone())
                .unwrap_or_else(|e| panic!("{what}: installed {}: {e:?}", label(obj)));
        }
        let warnings = cluster.apply(&what, &order).await;
        if i == 0
            && order
                .first()
                .is_some_and(|o| o["kind"] == "MachineConfigPool")
        {
            // File order: the first pool arrives before any config, admitted with a warning.
            let first = label(&order[0]);
            assert!(
                warnings[&first]
                    .iter()
                    .any(|w| w.contains("no MachineConfigs found matching selector")),
                "{what}: {first}: {:?}",
                warnings[&first]
            );
        }
        cluster.settles_on(&what, &expected).await;
        let stored: MachineConfig = support::cluster::decode(
            &cluster
                .server
                .store
                .get("machineconfigs", "", &expected["worker"])
                .expect("rendered worker"),
        );
        assert_eq!(stored.spec, rendered["worker"].spec, "{what}");
        then(&cluster, &what).await;
        cluster.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_cluster_applies_in_any_order_and_a_broken_config_is_still_refused() {
    any_order("examples/cluster", folder("examples/cluster")).await;
    // A cluster as applied, then the mistake the webhook exists for.
    let cluster = Cluster::install().await;
    let objects = folder("examples/cluster");
    cluster.apply("examples/cluster", &objects).await;
    let expected = names(&offline(&objects));
    cluster.settles_on("examples/cluster", &expected).await;
    let broken = folder("examples/invalid").remove(0);
    let d: DynamicObject = serde_json::from_value(broken).expect("object");
    let err = api(&cluster.server.client(), def_of("MachineConfig"))
        .create(&PostParams::default(), &d)
        .await
        .expect_err("refused");
    let kube::Error::Api(status) = err else {
        panic!("{err}");
    };
    assert_eq!(status.code, 422, "{status:?}");
    assert!(
        status.message.starts_with(&format!(
            "admission webhook \"{WEBHOOK}\" denied the request: 99-worker-broken: "
        )),
        "{}",
        status.message
    );
    assert!(cluster
        .server
        .store
        .get("machineconfigs", "", "99-worker-broken")
        .is_none());
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_example_cluster_applies_in_any_order() {
    any_order("examples/cluster-next", folder("examples/cluster-next")).await;
}

/// A dump with Nodes and a RolloutPolicy: the policy may come before its pool (admitted,
/// pending), and the pools settle on their renders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rollout_example_applies_in_any_order() {
    any_order(
        "examples/rollout/cluster",
        folder("examples/rollout/cluster"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_config_example_applies_in_any_order() {
    any_order("examples/cluster-config", folder("examples/cluster-config")).await;
}

/// The webhook's refusal of a pool whose selector matches no MachineConfig.
const NOTHING_SELECTED: &str = "no MachineConfigs found matching selector";

/// The admission example's dump, and then its changes: the pool edit that selects nothing
/// and the broken config are refused, the others admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admission_example_applies_in_any_order_and_its_bad_changes_are_refused() {
    any_order(
        "examples/admission/cluster",
        folder("examples/admission/cluster"),
    )
    .await;
    let cluster = Cluster::install().await;
    let objects = with_controller_config(folder("examples/admission/cluster"));
    cluster.apply("examples/admission/cluster", &objects).await;
    let expected = names(&offline(&objects));
    cluster
        .settles_on("examples/admission/cluster", &expected)
        .await;
    let client = cluster.server.client();
    // The webhook reviews against its watch caches, a moment behind the API server: wait
    // until a server-side dry run of the pool edit sees the pool rendering (refused).
    let edit = folder("examples/admission/changes")
        .into_iter()
        .find(|c| c["kind"] == "MachineConfigPool")
        .expect("the pool edit");
    let pools = api(&client, def_of("MachineConfigPool"));
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let mut d: DynamicObject = serde_json::from_value(edit.clone()).expect("object");
        let stored = pools.get("master").await.expect("master");
        d.metadata.resource_version = stored.metadata.resource_version;
        let dry = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        // Only the webhook's refusal ends the wait: a conflict with the controller's own
        // status write (the stored version moved between the read and the dry run) says
        // nothing about the webhook's view.
        match pools.replace("master", &dry, &d).await {
            Err(e) if e.to_string().contains(NOTHING_SELECTED) => break,
            _ => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the webhook's view never caught up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut refused = Vec::new();
    for change in folder("examples/admission/changes") {
        let def = def_of(change["kind"].as_str().unwrap_or(""));
        let name = change["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let api = api(&client, def);
        let mut d: DynamicObject = serde_json::from_value(change.clone()).expect("object");
        // The controller writes the pool's status meanwhile: a replace that conflicts with
        // it is read and tried again, as `kubectl apply` does.
        let result = loop {
            let result = match api.get_opt(&name).await.expect("get") {
                Some(stored) => {
                    d.metadata.resource_version = stored.metadata.resource_version;
                    api.replace(&name, &PostParams::default(), &d).await
                }
                None => api.create(&PostParams::default(), &d).await,
            };
            match result {
                Err(kube::Error::Api(ref r)) if r.code == 409 => continue,
                result => break result,
            }
        };
        if let Err(e) = result {
            refused.push(format!("{name}: {e}"));
        }
    }
    refused.sort();
    assert_eq!(refused.len(), 2, "{refused:#?}");
    assert!(refused[0].starts_with("99-worker-broken: "), "{refused:#?}");
    assert!(
        refused[1].starts_with("master: ")
            && refused[1].contains(&format!("pool master: {NOTHING_SELECTED}")),
        "{refused:#?}"
    );
    cluster.stop().await;
}

/// Real-content clusters (upstream's template MachineConfigs and example configs, from
/// ../shared): each pool ends on upstream's rendered name whatever the order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_content_clusters_apply_in_any_order() {
    let Some(dir) = ["../../shared", "../../../shared"]
        .iter()
        .map(|up| repo(up).join("conformance/real"))
        .find(|p| p.is_dir())
    else {
        eprintln!(
            "SKIP: ../shared/conformance/real not present; real-content clusters not applied"
        );
        return;
    };
    for name in ["real-aws-worker", "real-none-sno-infra"] {
        let path = dir.join(format!("{name}.json.gz"));
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(file), &mut text)
            .expect("gunzip");
        let case: Value = serde_json::from_str(&text).expect("case");
        let mut objects = vec![case["pool"].clone()];
        objects.extend(
            case["machineConfigs"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
        objects.push(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "ControllerConfig",
            "metadata": {"name": "machine-config-controller"}, "spec": case["controllerConfig"]
        }));
        let pool = case["pool"]["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let upstream = case["expected"]["renderedName"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} renders upstream"))
            .to_string();
        let expected = BTreeMap::from([(pool, upstream)]);
        for (i, order) in [objects.clone(), shuffled(&objects, 3)]
            .into_iter()
            .enumerate()
        {
            let what = format!("{name} (order {i})");
            let cluster = Cluster::install().await;
            cluster.apply(&what, &order).await;
            cluster.settles_on(&what, &expected).await;
            cluster.stop().await;
        }
    }
}

/// On-cluster layering and pinned images as an administrator applies them (the MachineOSConfig
/// and its push secret, a PinnedImageSet), on a cluster holding what the operator made
/// (`examples/layering/installed`): whatever arrives first, the pools render, the worker pool
/// names the set, and the worker's build starts: its MachineOSBuild is the one
/// `mco-render build-request` previews, its Job created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layering_example_applies_in_any_order_and_its_build_starts() {
    any_order_then(
        "examples/layering/cluster",
        folder("examples/layering/cluster"),
        &folder("examples/layering/installed"),
        |cluster, what| Box::pin(the_build_starts(cluster, what)),
    )
    .await;
}

/// The MachineOSBuild of the example's worker, as the build request computes it offline.
fn expected_build() -> String {
    use mco_render::api::{ControllerConfig, MachineConfigPool, MachineOSConfig};
    use mco_render::controllers::build::{build_request, RequestInputs};
    let objects = with_controller_config(folder("examples/layering/cluster"));
    let rendered = offline_rendered(&objects);
    let of = |kind: &str| {
        objects
            .iter()
            .find(|o| {
                o["kind"] == kind
                    && (kind != "MachineConfigPool" || o["metadata"]["name"] == "worker")
            })
            .cloned()
            .unwrap_or_else(|| panic!("no {kind}"))
    };
    let mosc: MachineOSConfig = serde_json::from_value(of("MachineOSConfig")).expect("mosc");
    let mut pool: MachineConfigPool =
        serde_json::from_value(of("MachineConfigPool")).expect("pool");
    pool.spec.configuration = rendered["worker"].configuration.clone();
    let cc: ControllerConfig = serde_json::from_value(of("ControllerConfig")).expect("cc");
    let mut secrets = folder("examples/layering/installed");
    secrets.extend(objects.iter().filter(|o| o["kind"] == "Secret").cloned());
    let out = build_request(&RequestInputs {
        mosc: &mosc,
        pool: &pool,
        rendered: &rendered["worker"].machine_config,
        rendered_source: None,
        controller_config: &cc,
        objects: &secrets,
    });
    assert!(out.error.is_none(), "{:?}", out.error);
    out.machine_os_build
        .expect("a MachineOSBuild")
        .metadata
        .name
}

async fn the_build_starts(cluster: &Cluster, what: &str) {
    let build = expected_build();
    let store = &cluster.server.store;
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let pool = store
            .get("machineconfigpools", "", "worker")
            .unwrap_or_default();
        let pinned = pool["spec"]["pinnedImageSets"] == json!([{"name": "worker-pinned"}]);
        let started = store.get("machineosbuilds", "", &build).is_some()
            && store
                .get("jobs", NAMESPACE, &format!("build-{build}"))
                .is_some();
        if pinned && started {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            let names = |plural: &str| -> Vec<Value> {
                store
                    .list(plural)
                    .iter()
                    .map(|o| o["metadata"]["name"].clone())
                    .collect()
            };
            panic!(
                "{what}: the worker pool never named its PinnedImageSet and started build {build}\npool: {pool:#}\nMachineOSBuilds: {:?}\nJobs: {:?}\nMachineOSConfigs: {:#?}",
                names("machineosbuilds"),
                names("jobs"),
                store.list("machineosconfigs"),
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The master pool names no set (the set's role label selects the worker's configs only).
    assert!(store
        .get("machineconfigpools", "", "master")
        .is_some_and(|p| p["spec"].get("pinnedImageSets").is_none_or(Value::is_null)));
}
