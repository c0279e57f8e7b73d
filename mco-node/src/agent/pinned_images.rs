//! The pinned image manager: pulls the images of the PinnedImageSets the node's pools name,
//! pins them in CRI-O's drop-in and reports progress in the node's MachineConfigNode, as
//! upstream's daemon does in `pkg/daemon/pinned_image_set.go` (`PinnedImageSetManager`).
//!
//! Every decision is [`mco_render::plan::pinned_images`]'s; here the host is asked through the
//! [`Host`] trait (`crictl images -o json`, `crictl pull`, `podman manifest inspect` for the
//! sizes, `systemctl reload crio`) and the drop-in is written through the [`HostRoot`]. The
//! loop runs beside the update loop, watching the node, the pools and the PinnedImageSets; it
//! writes only the MachineConfigNode's pinned-image conditions and `status.pinnedImageSets`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::api::machine_config_node::NOT_YET_SET;
use mco_render::api::node::Node;
use mco_render::api::{MachineConfigNodeStatus, MachineConfigPool, PinnedImageSet};
use mco_render::controllers::node_pool::pools_for_node;
use mco_render::plan::pinned_images::{
    check_storage, crio_config_action, is_no_space, manifest_size, missing_images, node_storage,
    parse_crictl_images, phase_conditions, pull_error, set_generations, sets_for_pools,
    unique_sorted_images, CrioConfigAction, PinError, PinPhase, CRIO_PINNED_IMAGES_PATH,
    CRIO_SERVICE, KUBELET_AUTH_FILE, MIN_FREE_STORAGE_AFTER_PREFETCH, PULL_ATTEMPTS,
};
use serde_json::json;
use tokio::sync::watch;

use super::watches::{follow, Crd, Seen, WatchOptions};
use crate::host::Host;
use crate::root::{Entry, HostRoot};

/// How the manager runs.
#[derive(Debug, Clone)]
pub struct PinnedOptions {
    /// The node this agent manages.
    pub node_name: String,
    /// The disk that must stay free after the pulls (upstream: 16Gi).
    pub min_free_bytes: i64,
    /// The waits between the tries of a pull (upstream: 1s, 2s, 4s, 8s for 5 tries).
    pub pull_delays: Vec<Duration>,
    /// How the manager's watches run.
    pub watch: WatchOptions,
}

impl PinnedOptions {
    /// Upstream's settings for `node_name`.
    pub fn new(node_name: &str) -> Self {
        PinnedOptions {
            node_name: node_name.to_string(),
            min_free_bytes: MIN_FREE_STORAGE_AFTER_PREFETCH,
            pull_delays: (0..PULL_ATTEMPTS - 1)
                .map(|i| Duration::from_secs(1 << i))
                .collect(),
            watch: WatchOptions::for_node(node_name),
        }
    }
}

/// What a pass did on the host.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PinReport {
    /// The images pulled, in order.
    pub pulled: Vec<String>,
    /// The images the drop-in pins.
    pub pinned: Vec<String>,
    /// Whether the drop-in was written or removed (and CRI-O reloaded).
    pub reloaded: bool,
}

fn words(ws: &[&str]) -> Vec<String> {
    ws.iter().map(|w| w.to_string()).collect()
}

/// What the container runtime holds.
fn runtime_images<H: Host + ?Sized>(
    host: &mut H,
) -> Result<Vec<mco_render::plan::pinned_images::CriImage>, String> {
    let out = host
        .crictl(&words(&["images", "-o", "json"]))
        .map_err(|e| e.to_string())?;
    parse_crictl_images(&out)
}

/// Pulls `image`, retrying as upstream's backoff does; a full disk stops at once.
fn pull<H: Host + ?Sized>(
    host: &mut H,
    image: &str,
    delays: &[Duration],
    sleep: &mut dyn FnMut(Duration),
) -> Result<(), String> {
    let mut tries = 0u32;
    loop {
        tries += 1;
        let last = match host.crictl(&words(&["pull", image])) {
            Ok(_) => return Ok(()),
            Err(e) => e.message,
        };
        if is_no_space(&last) {
            return Err(pull_error(image, tries, &last));
        }
        match delays.get(tries as usize - 1) {
            Some(d) => sleep(*d),
            None => return Err(pull_error(image, tries, &last)),
        }
    }
}

/// One pass on the host, as upstream's `syncMachineConfigPools`: for each of the node's pools,
/// each named set checked for room (the node Ready, its allocatable ephemeral storage against
/// the missing images' sizes) before the pool's missing images are pulled; then every image
/// checked present, and CRI-O's drop-in brought to the sorted images (removed when there are
/// none), CRI-O reloaded when it changed.
pub fn pin<H: Host + ?Sized>(
    host: &mut H,
    root: &HostRoot,
    node: &Node,
    pools: &[&MachineConfigPool],
    sets: &[PinnedImageSet],
    opts: &PinnedOptions,
    sleep: &mut dyn FnMut(Duration),
) -> Result<PinReport, String> {
    let mut report = PinReport::default();
    let mut all: Vec<&PinnedImageSet> = Vec::new();
    for pool in pools {
        let pool_sets = sets_for_pools(&[*pool], sets).map_err(|e| e.to_string())?;
        let held = runtime_images(host)?;
        let mut seen_layers = BTreeSet::new();
        let mut to_pull: Vec<String> = Vec::new();
        for set in &pool_sets {
            let capacity = node_storage(node).map_err(|e| e.to_string())?;
            if capacity < opts.min_free_bytes {
                return Err(check_storage(capacity, opts.min_free_bytes, &[])
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default());
            }
            let images = unique_sorted_images(&[*set]);
            let missing: Vec<String> = missing_images(&images, &held)
                .into_iter()
                .map(str::to_string)
                .collect();
            let mut sizes = Vec::new();
            for image in &missing {
                let manifest = host
                    .podman(&words(&[
                        "manifest",
                        "--log-level",
                        "error",
                        "inspect",
                        "--authfile",
                        KUBELET_AUTH_FILE,
                        image,
                    ]))
                    .map_err(|e| {
                        format!("failed to execute podman manifest inspect for {image:?}: {e}")
                    })?;
                sizes.push(
                    manifest_size(&manifest, &mut seen_layers)
                        .map_err(|e| format!("failed to unmarshal manifest for {image:?}: {e}"))?,
                );
            }
            check_storage(capacity, opts.min_free_bytes, &sizes).map_err(|e| e.to_string())?;
            for m in missing {
                if !to_pull.contains(&m) {
                    to_pull.push(m);
                }
            }
        }
        for image in &to_pull {
            pull(host, image, &opts.pull_delays, sleep)?;
            report.pulled.push(image.clone());
        }
        all.extend(pool_sets);
    }
    let images = unique_sorted_images(&all);
    let held = runtime_images(host)?;
    if let Some(gone) = missing_images(&images, &held).first() {
        return Err(PinError::ImageRemoved(gone.to_string()).to_string());
    }
    let existing = match root
        .entry(CRIO_PINNED_IMAGES_PATH)
        .map_err(|e| e.to_string())?
    {
        Entry::File { data, .. } => Some(String::from_utf8_lossy(&data).into_owned()),
        Entry::Absent => None,
        _ => Some(String::new()),
    };
    let mut dirty = BTreeSet::new();
    match crio_config_action(existing.as_deref(), &images) {
        CrioConfigAction::Keep => {}
        CrioConfigAction::Write(text) => {
            root.write_atomic(
                CRIO_PINNED_IMAGES_PATH,
                text.as_bytes(),
                0o644,
                None,
                0o755,
                false,
                &mut dirty,
            )
            .map_err(|e| format!("failed to write CRIO config file: {e}"))?;
            report.reloaded = true;
        }
        CrioConfigAction::Remove => {
            root.remove(CRIO_PINNED_IMAGES_PATH, &mut dirty)
                .map_err(|e| format!("failed to remove CRI-O config file: {e}"))?;
            report.reloaded = true;
        }
    }
    let _ = crate::root::sync_dirs(&dirty);
    if report.reloaded {
        host.systemctl(&words(&["reload", CRIO_SERVICE]))
            .map_err(|e| {
                format!("could not apply update: reloading {CRIO_SERVICE} configuration failed. Error: {e}")
            })?;
    }
    report.pinned = images;
    Ok(report)
}

/// The PinnedImageSet resource (cluster-scoped, `machineconfiguration.openshift.io/v1`).
pub fn pinned_image_set_resource() -> ApiResource {
    mco_resource("PinnedImageSet", "pinnedimagesets")
}

fn mco_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "machineconfiguration.openshift.io".into(),
        version: "v1".into(),
        api_version: "machineconfiguration.openshift.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn node_resource() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "Node".into(),
        plural: "nodes".into(),
    }
}

/// The objects of a watch by name: `None` until the first list is in. Errors are retried
/// with backoff; while the server does not serve the API the kind reads as having no
/// objects, and its CRD is watched for it to come (see [`super::watches`]). A new map is sent
/// only when an object's resourceVersion changed.
fn watch_all(
    api: Api<DynamicObject>,
    crd: Option<Crd>,
    cfg: watcher::Config,
    opts: WatchOptions,
    what: &'static str,
) -> watch::Receiver<Option<BTreeMap<String, DynamicObject>>> {
    let (tx, rx) = watch::channel(None);
    tokio::spawn(async move {
        let mut current: BTreeMap<String, DynamicObject> = BTreeMap::new();
        let mut pending: BTreeMap<String, DynamicObject> = BTreeMap::new();
        let name = |o: &DynamicObject| o.metadata.name.clone().unwrap_or_default();
        follow(api, crd, cfg, opts, what, |seen| {
            match seen {
                Seen::Event(watcher::Event::Init) => {
                    pending.clear();
                    return true;
                }
                Seen::Event(watcher::Event::InitApply(o)) => {
                    pending.insert(name(&o), o);
                    return true;
                }
                Seen::Event(watcher::Event::InitDone) => current = std::mem::take(&mut pending),
                Seen::Event(watcher::Event::Apply(o)) => {
                    current.insert(name(&o), o);
                }
                Seen::Event(watcher::Event::Delete(o)) => {
                    current.remove(&name(&o));
                }
                Seen::Absent => current.clear(),
            }
            tx.send_if_modified(|held: &mut Option<BTreeMap<String, DynamicObject>>| {
                let same = held.as_ref().is_some_and(|held| {
                    held.len() == current.len()
                        && held.iter().zip(&current).all(|((a, x), (b, y))| {
                            a == b && x.metadata.resource_version == y.metadata.resource_version
                        })
                });
                if !same {
                    *held = Some(current.clone());
                }
                !same
            });
            !tx.is_closed()
        })
        .await;
    });
    rx
}

fn decode<T: serde::de::DeserializeOwned>(o: &DynamicObject) -> Result<T, String> {
    let v = serde_json::to_value(o).map_err(|e| e.to_string())?;
    serde_json::from_value(v).map_err(|e| {
        format!(
            "decoding {} {}: {e}",
            o.types
                .as_ref()
                .map(|t| t.kind.as_str())
                .unwrap_or("object"),
            o.metadata.name.as_deref().unwrap_or("")
        )
    })
}

fn decode_all<T: serde::de::DeserializeOwned>(m: &BTreeMap<String, DynamicObject>) -> Vec<T> {
    m.values()
        .filter_map(|o| match decode(o) {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!("{e}");
                None
            }
        })
        .collect()
}

/// Now, as Kubernetes writes times.
fn now_rfc3339() -> String {
    k8s_openapi::jiff::fmt::strtime::format(
        "%Y-%m-%dT%H:%M:%SZ",
        k8s_openapi::jiff::Timestamp::now(),
    )
    .unwrap_or_default()
}

/// Records a phase in the node's MachineConfigNode: the pinned-image conditions and the
/// primary pool's sets' generations, merge-patched on the resourceVersion read (a concurrent
/// write by the update loop makes it read again). A missing MachineConfigNode is created.
async fn report(
    mcns: &Api<DynamicObject>,
    node: &Node,
    pool: &str,
    sets: &[&PinnedImageSet],
    phase: PinPhase<'_>,
) -> Result<(), String> {
    let name = node.name().to_string();
    for _ in 0..5 {
        let stored = match mcns.get_opt(&name).await.map_err(|e| e.to_string())? {
            Some(o) => o,
            None => {
                let desired = match node.desired_config() {
                    "" => NOT_YET_SET,
                    d => d,
                };
                let obj: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "machineconfiguration.openshift.io/v1",
                    "kind": "MachineConfigNode",
                    "metadata": {"name": name, "ownerReferences": [{
                        "apiVersion": "v1", "kind": "Node", "name": name,
                        "uid": node.metadata.uid.clone().unwrap_or_default(),
                    }]},
                    "spec": {"node": {"name": name}, "pool": {"name": pool},
                             "configVersion": {"desired": desired}},
                }))
                .map_err(|e| e.to_string())?;
                match mcns.create(&Default::default(), &obj).await {
                    Ok(o) => o,
                    Err(kube::Error::Api(e)) if e.code == 409 => continue,
                    Err(e) => return Err(e.to_string()),
                }
            }
        };
        let before: MachineConfigNodeStatus = match stored.data.get("status") {
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| format!("MachineConfigNode {name} status: {e}"))?,
            None => MachineConfigNodeStatus::default(),
        };
        let mut status = before.clone();
        let now = now_rfc3339();
        for c in phase_conditions(phase, &name) {
            status.record_singleton(&c, &now);
        }
        status.pinned_image_sets = set_generations(sets, &before.pinned_image_sets, phase);
        if status == before {
            return Ok(());
        }
        let patch = json!({
            "metadata": {"resourceVersion": stored.metadata.resource_version},
            "status": {"conditions": status.conditions,
                       "pinnedImageSets": status.pinned_image_sets},
        });
        match mcns
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Err(format!(
        "MachineConfigNode {name}: conflicting writes, gave up"
    ))
}

/// What a pass depends on: the node's pools, the sets they name and the sets' generations and
/// images. A pass that succeeded is not repeated until this changes.
fn inputs_key(pools: &[&MachineConfigPool], sets: &[PinnedImageSet]) -> String {
    let by_name: BTreeMap<&str, &PinnedImageSet> = sets.iter().map(|s| (s.name(), s)).collect();
    let v: Vec<_> = pools
        .iter()
        .map(|p| {
            let named: Vec<_> = p
                .spec
                .pinned_image_sets
                .iter()
                .map(|r| {
                    let s = by_name.get(r.name.as_str());
                    json!([r.name, s.map(|s| s.generation()), s.map(|s| &s.spec)])
                })
                .collect();
            json!([p.name(), named])
        })
        .collect();
    serde_json::Value::Array(v).to_string()
}

/// Runs the manager until the watches end (never, while the client works): on a change of
/// the node's pools or the PinnedImageSets they name (and once at start), reports
/// `PinnedImageSetsProgressing`, pulls and pins on the host (a blocking task), and reports
/// completion or `PinnedImageSetsDegraded` with the error in the set's `lastFailedGeneration`.
/// A failed pass is retried with backoff.
pub async fn run<H: Host + Send + 'static>(
    client: Client,
    root: HostRoot,
    host: Arc<Mutex<H>>,
    opts: PinnedOptions,
) {
    let nodes: Api<DynamicObject> = Api::all_with(client.clone(), &node_resource());
    let w = opts.watch;
    let node_rx = watch_all(nodes, None, w.named(&opts.node_name), w, "Node");
    run_with_node(client, root, host, opts, node_rx).await;
}

/// [`run`] on the Node the agent's own watch hands on (`Agent::share_node`): one process
/// watches its Node once.
pub async fn run_with_node<H: Host + Send + 'static>(
    client: Client,
    root: HostRoot,
    host: Arc<Mutex<H>>,
    opts: PinnedOptions,
    mut node_rx: watch::Receiver<Option<BTreeMap<String, DynamicObject>>>,
) {
    let pools_api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &mco_resource("MachineConfigPool", "machineconfigpools"),
    );
    let sets_api: Api<DynamicObject> = Api::all_with(client.clone(), &pinned_image_set_resource());
    let mcns: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &mco_resource("MachineConfigNode", "machineconfignodes"),
    );
    let w = opts.watch;
    let mut pools_rx = watch_all(
        pools_api,
        Crd::of(
            &client,
            &mco_resource("MachineConfigPool", "machineconfigpools"),
        ),
        w.config(),
        w,
        "MachineConfigPool",
    );
    let mut sets_rx = watch_all(
        sets_api,
        Crd::of(&client, &pinned_image_set_resource()),
        w.config(),
        w,
        "PinnedImageSet",
    );
    let mut done: Option<String> = None;
    let mut failed: Option<String> = None;
    let mut failures = 0u32;
    let mut retry: Option<Duration> = None;
    // The failure last reported (inputs and error).
    let mut reported: Option<String> = None;
    loop {
        let wait_retry = async {
            match retry {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = node_rx.changed() => if r.is_err() { return },
            r = pools_rx.changed() => if r.is_err() { return },
            r = sets_rx.changed() => if r.is_err() { return },
            _ = wait_retry => { retry = None; done = None; }
        }
        let (Some(node_objs), Some(pool_objs), Some(set_objs)) = (
            node_rx.borrow_and_update().clone(),
            pools_rx.borrow_and_update().clone(),
            sets_rx.borrow_and_update().clone(),
        ) else {
            continue;
        };
        let Some(node) = node_objs.get(&opts.node_name) else {
            continue;
        };
        let node: Node = match decode(node) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!("{e}");
                continue;
            }
        };
        let all_pools: Vec<MachineConfigPool> = decode_all(&pool_objs);
        let sets: Vec<PinnedImageSet> = decode_all(&set_objs);
        let pools = match pools_for_node(&node, &all_pools) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("pinned images: {e}");
                continue;
            }
        };
        let Some(primary) = pools.first() else {
            continue;
        };
        let key = inputs_key(&pools, &sets);
        if done.as_ref() == Some(&key) || (retry.is_some() && failed.as_ref() == Some(&key)) {
            continue;
        }
        retry = None;
        // A retry of a failed pass on the same inputs reports nothing new until its outcome
        // differs: a failure that persists costs the API server no request.
        let retrying = failed.as_ref() == Some(&key);
        let status_sets: Vec<&PinnedImageSet> = primary
            .spec
            .pinned_image_sets
            .iter()
            .filter_map(|r| sets.iter().find(|s| s.name() == r.name))
            .collect();
        if !retrying {
            if let Err(e) = report(
                &mcns,
                &node,
                primary.name(),
                &status_sets,
                PinPhase::Prefetching,
            )
            .await
            {
                tracing::warn!("MachineConfigNode not written: {e}");
            }
            reported = None;
        }
        let outcome = {
            let (host, root, opts) = (host.clone(), root.clone(), opts.clone());
            let (node, sets) = (node.clone(), sets.clone());
            let owned: Vec<MachineConfigPool> = pools.iter().map(|p| (*p).clone()).collect();
            tokio::task::spawn_blocking(move || {
                let mut h = host.lock().unwrap_or_else(|e| e.into_inner());
                let refs: Vec<&MachineConfigPool> = owned.iter().collect();
                pin(
                    &mut *h,
                    &root,
                    &node,
                    &refs,
                    &sets,
                    &opts,
                    &mut std::thread::sleep,
                )
            })
            .await
            .unwrap_or_else(|e| Err(format!("pinned image task: {e}")))
        };
        let phase_result = match &outcome {
            Ok(r) => {
                tracing::info!(pulled = ?r.pulled, pinned = r.pinned.len(), "pinned image sets complete");
                failures = 0;
                failed = None;
                done = Some(key);
                report(
                    &mcns,
                    &node,
                    primary.name(),
                    &status_sets,
                    PinPhase::Complete,
                )
                .await
            }
            Err(e) => {
                let delay = opts.watch.transient.delay(failures);
                failures = failures.saturating_add(1);
                tracing::warn!("pinned image sets: {e}; retrying in {delay:?}");
                retry = Some(delay);
                let tag = format!("{key} {e}");
                failed = Some(key);
                if reported.as_ref() == Some(&tag) {
                    Ok(())
                } else {
                    let r = report(
                        &mcns,
                        &node,
                        primary.name(),
                        &status_sets,
                        PinPhase::Failed(e),
                    )
                    .await;
                    if r.is_ok() {
                        reported = Some(tag);
                    }
                    r
                }
            }
        };
        if let Err(e) = phase_result {
            tracing::warn!("MachineConfigNode not written: {e}");
        }
    }
}

#[cfg(test)]
mod tests;
