//! PinnedImageSets end to end against the in-process API server: a pool naming a
//! PinnedImageSet leads the node's pinned image manager (`mco_node::agent::pinned_images`,
//! on a temporary host root with a recording host whose container runtime is simulated) to
//! pull the missing images, pin them in CRI-O's drop-in, reload CRI-O and report the set's
//! generation in the node's MachineConfigNode; a new generation the disk cannot hold degrades
//! the node's pinned images without pulling anything; the daemon's ClusterRole grants every
//! request it made. A failing pull degrades the set, and a manager killed then and started
//! again once the registry answers finishes it.

// The test server's write closures return its Status error by value.
#![allow(clippy::result_large_err)]

use crate::support;

use crate::support::apiserver::{resource, ApiServer, Store};
use crate::support::rbac;
use mco_node::agent::pinned_images::{run, PinnedOptions};
use mco_node::{HostRoot, RecordingHost};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const LIMIT: Duration = support::PATIENCE;
const DAEMON: &str = "machine-config-daemon (worker-0)";

fn def(plural: &str) -> &'static support::apiserver::ResourceDef {
    resource(plural).unwrap_or_else(|| panic!("the test server lacks {plural}"))
}

fn image(name: &str, c: char) -> String {
    format!(
        "quay.io/openshift-release-dev/{name}@sha256:{}",
        std::iter::repeat_n(c, 64).collect::<String>()
    )
}

fn create(store: &Store, plural: &str, obj: Value) {
    store
        .create(def(plural), "", obj)
        .unwrap_or_else(|e| panic!("{plural}: {e:?}"));
}

fn condition(mcn: &Value, type_: &str) -> Option<(String, String, String)> {
    mcn["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("status"), s("reason"), s("message"))
        })
}

/// CRI-O's pinned-images drop-in, under a host root.
const DROP_IN: &str = "etc/crio/crio.conf.d/50-pinned-images";

/// The drop-in under the host root `dir` (empty when absent).
fn drop_in(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join(DROP_IN)).unwrap_or_default()
}

/// worker-0's MachineConfigNode once it reports the set `release` pulled and pinned at
/// generation 1, checked complete and not degraded.
async fn reported_complete(store: &Store) -> Value {
    let mcn = support::eventually_within("the pinned images reported", LIMIT, || {
        let mcn = store.get("machineconfignodes", "", "worker-0")?;
        (mcn["status"]["pinnedImageSets"][0]["currentGeneration"] == 1).then_some(mcn)
    })
    .await;
    assert_eq!(
        mcn["status"]["pinnedImageSets"],
        json!([{"name": "release", "currentGeneration": 1, "desiredGeneration": 1}])
    );
    assert_eq!(
        condition(&mcn, "PinnedImageSetsProgressing"),
        Some((
            "False".into(),
            "AsExpected".into(),
            "All pinned image sets complete".into()
        ))
    );
    assert_eq!(
        condition(&mcn, "PinnedImageSetsDegraded"),
        Some(("False".into(), "AsExpected".into(), "All is good".into()))
    );
    mcn
}

fn locked(h: &Arc<Mutex<RecordingHost>>) -> std::sync::MutexGuard<'_, RecordingHost> {
    h.lock().unwrap_or_else(|e| e.into_inner())
}

/// worker-0 (Ready, 100Gi of ephemeral storage), the worker pool naming the PinnedImageSet
/// `release`, and that set, generation 1, of `images`.
fn seed_worker_with_set(store: &Store, images: &[&str]) {
    create(
        store,
        "nodes",
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-0", "labels": {"node-role.kubernetes.io/worker": ""}},
            "status": {"conditions": [{"type": "Ready", "status": "True"},
                                      {"type": "DiskPressure", "status": "False"}],
                       "allocatable": {"ephemeral-storage": "100Gi"}}}),
    );
    create(
        store,
        "machineconfigpools",
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
            "metadata": {"name": "worker"},
            "spec": {"nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
                     "machineConfigSelector": {"matchLabels":
                         {"machineconfiguration.openshift.io/role": "worker"}},
                     "pinnedImageSets": [{"name": "release"}]}}),
    );
    create(
        store,
        "pinnedimagesets",
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "PinnedImageSet",
            "metadata": {"name": "release",
                         "labels": {"machineconfiguration.openshift.io/role": "worker"}},
            "spec": {"pinnedImages": images.iter().map(|i| json!({"name": i})).collect::<Vec<_>>()}}),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_naming_a_set_gets_its_images_pulled_pinned_and_reported() {
    let server = ApiServer::start().await.unwrap_or_else(|e| panic!("{e}"));
    let store = server.store.clone();
    let (held, missing, huge) = (
        image("held", 'a'),
        image("missing", 'b'),
        image("huge", 'c'),
    );
    seed_worker_with_set(&store, &[&missing, &held]);

    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let mut recording = RecordingHost::new();
    recording.cri.held.insert(held.clone());
    recording.cri.registry.insert(missing.clone(), 1 << 30);
    // Twice 50Gi does not fit in 100Gi with 16Gi kept free.
    recording.cri.registry.insert(huge.clone(), 50 << 30);
    let host = Arc::new(Mutex::new(recording));
    let opts = PinnedOptions {
        pull_delays: vec![Duration::ZERO; 4],
        ..PinnedOptions::new("worker-0")
    };
    let manager = tokio::spawn(run(
        server.client_as(DAEMON),
        root.clone(),
        host.clone(),
        opts,
    ));

    // The node reports the set's generation pulled and pinned.
    let mcn = reported_complete(&store).await;
    assert_eq!(mcn["spec"]["pool"]["name"], "worker");
    assert_eq!(
        condition(&mcn, "Updated").map(|c| c.1),
        Some("NotYetOccurred".to_string())
    );
    {
        let h = locked(&host);
        let pulls: Vec<&String> = h
            .calls
            .iter()
            .filter(|c| c.starts_with("crictl pull"))
            .collect();
        assert_eq!(pulls, [&format!("crictl pull {missing}")]);
        assert_eq!(
            h.calls
                .iter()
                .filter(|c| *c == "systemctl reload crio")
                .count(),
            1
        );
        assert!(h.cri.held.contains(&missing));
    }
    assert_eq!(
        drop_in(dir.path()),
        format!("[crio]\n  [crio.image]\n    pinned_images = [\"{held}\", \"{missing}\"]\n")
    );

    // A new generation with an image the disk cannot hold: degraded, nothing pulled.
    store
        .write(def("pinnedimagesets"), "", "release", false, |old| {
            let mut n = old.clone();
            n["spec"]["pinnedImages"] = json!([{"name": missing}, {"name": held}, {"name": huge}]);
            Ok(n)
        })
        .unwrap_or_else(|e| panic!("{e:?}"));
    let mcn = support::eventually_within("the degraded pinned images", LIMIT, || {
        let mcn = store.get("machineconfignodes", "", "worker-0")?;
        (mcn["status"]["pinnedImageSets"][0]["lastFailedGeneration"] == 2).then_some(mcn)
    })
    .await;
    assert_eq!(
        mcn["status"]["pinnedImageSets"],
        json!([{"name": "release", "desiredGeneration": 2, "lastFailedGeneration": 2,
                "lastFailedGenerationError": "storage available is less than minimum required"}])
    );
    assert_eq!(
        condition(&mcn, "PinnedImageSetsDegraded"),
        Some((
            "True".into(),
            "PrefetchFailed".into(),
            "One or more PinnedImageSet is experiencing an error. See PinnedImageSet list for more details.".into()
        ))
    );
    assert_eq!(
        condition(&mcn, "PinnedImageSetsProgressing").map(|c| c.0),
        Some("True".to_string())
    );
    {
        let h = locked(&host);
        assert!(!h.calls.iter().any(|c| c == &format!("crictl pull {huge}")));
        assert!(!h.cri.held.contains(&huge));
    }
    manager.abort();

    let missing_grants = rbac::ungranted_to(
        &store.requests_scoped(Some(DAEMON)),
        "machine-config-daemon",
    );
    assert!(missing_grants.is_empty(), "{missing_grants:?}");
}

/// A pull failing (the registry unreachable): the set degrades with the runtime's error; the
/// manager killed then (a node rebooted while its pulls fail) and started again once the
/// registry answers pulls the image, pins it and reports the generation, the degradation gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_pull_degrades_and_a_restarted_manager_finishes_the_set() {
    let server = ApiServer::start().await.unwrap_or_else(|e| panic!("{e}"));
    let store = server.store.clone();
    let wanted = image("wanted", 'd');
    seed_worker_with_set(&store, &[&wanted]);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let opts = PinnedOptions {
        pull_delays: vec![Duration::ZERO; 2],
        ..PinnedOptions::new("worker-0")
    };
    let unreachable = "pinging container registry quay.io: dial tcp: i/o timeout";
    let mut failing = RecordingHost::new();
    failing.cri.registry.insert(wanted.clone(), 1 << 30);
    failing
        .cri
        .pull_failures
        .insert(wanted.clone(), unreachable.to_string());
    let failing = Arc::new(Mutex::new(failing));
    let first = tokio::spawn(run(
        server.client_as(DAEMON),
        root.clone(),
        failing.clone(),
        opts.clone(),
    ));
    let mcn = support::eventually_within("the failed pull reported", LIMIT, || {
        let mcn = store.get("machineconfignodes", "", "worker-0")?;
        (mcn["status"]["pinnedImageSets"][0]["lastFailedGeneration"] == 1).then_some(mcn)
    })
    .await;
    let error = mcn["status"]["pinnedImageSets"][0]["lastFailedGenerationError"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(error.contains(unreachable), "{error}");
    assert_eq!(
        condition(&mcn, "PinnedImageSetsDegraded").map(|c| c.0),
        Some("True".to_string())
    );
    assert!(!dir.path().join(DROP_IN).exists());
    first.abort();
    let _ = first.await;

    // Back, the registry answering.
    let mut answering = RecordingHost::new();
    answering.cri.registry.insert(wanted.clone(), 1 << 30);
    let answering = Arc::new(Mutex::new(answering));
    let second = tokio::spawn(run(
        server.client_as(DAEMON),
        root.clone(),
        answering.clone(),
        opts,
    ));
    reported_complete(&store).await;
    assert!(locked(&answering).cri.held.contains(&wanted));
    assert_eq!(
        drop_in(dir.path()),
        format!("[crio]\n  [crio.image]\n    pinned_images = [\"{wanted}\"]\n")
    );
    second.abort();
}

const CONTROLLER: &str = "machine-config-controller/pinned-images-e2e";

fn pool(name: &str) -> Value {
    json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": name},
        "spec": {"nodeSelector": {"matchLabels": {format!("node-role.kubernetes.io/{name}"): ""}},
                 "machineConfigSelector": {"matchLabels":
                     {"machineconfiguration.openshift.io/role": name}}}})
}

/// Polls `check` every 20 ms until it returns `Some`, for at most [`LIMIT`].
async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if let Some(t) = check() {
            return t;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_names_a_pools_sets_in_its_spec() {
    let server = ApiServer::start().await.unwrap_or_else(|e| panic!("{e}"));
    let store = server.store.clone();
    create(&store, "machineconfigpools", pool("master"));
    create(&store, "machineconfigpools", pool("worker"));
    let opts = mco_k8s::controller::Options {
        debounce: Duration::from_millis(20),
        resync: Duration::from_secs(1),
        ..Default::default()
    };
    let ctrl = tokio::spawn(mco_k8s::controller::run(server.client_as(CONTROLLER), opts));

    // Fine before any set: the condition False, the field absent.
    let worker = eventually("the worker pool's PinnedImageSetsDegraded", || {
        let p = store.get("machineconfigpools", "", "worker")?;
        condition(&p, "PinnedImageSetsDegraded").map(|c| (p, c))
    })
    .await;
    assert_eq!(worker.1 .0, "False");
    assert!(worker.0["spec"].get("pinnedImageSets").is_none());

    for (name, role) in [
        ("release", "worker"),
        ("extras", "worker"),
        ("etcd", "master"),
    ] {
        create(
            &store,
            "pinnedimagesets",
            json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "PinnedImageSet",
                "metadata": {"name": name,
                             "labels": {"machineconfiguration.openshift.io/role": role}},
                "spec": {"pinnedImages": [{"name": image(name, 'a')}]}}),
        );
    }
    let sets = |pool: &str| {
        store
            .get("machineconfigpools", "", pool)
            .map(|p| p["spec"]["pinnedImageSets"].clone())
    };
    eventually("the worker pool names its sets, sorted", || {
        (sets("worker")? == json!([{"name": "extras"}, {"name": "release"}])).then_some(())
    })
    .await;
    eventually("the master pool names its set", || {
        (sets("master")? == json!([{"name": "etcd"}])).then_some(())
    })
    .await;

    // Deleting the worker's sets empties its field; the master's set stays.
    for name in ["release", "extras"] {
        store
            .delete(def("pinnedimagesets"), "", name, None)
            .unwrap_or_else(|e| panic!("{e:?}"));
    }
    eventually("the worker pool names no set", || {
        sets("worker")?.is_null().then_some(())
    })
    .await;
    assert_eq!(sets("master"), Some(json!([{"name": "etcd"}])));
    let worker = store
        .get("machineconfigpools", "", "worker")
        .unwrap_or_default();
    assert_eq!(
        condition(&worker, "PinnedImageSetsDegraded").map(|c| c.0),
        Some("False".to_string())
    );
    ctrl.abort();

    // Each pool's spec was patched only when its sets changed: master once, worker at most
    // four times (one or two sets, then one or none), never while idle.
    let requests = store.requests_named(Some(CONTROLLER));
    let patched = requests
        .get("PATCH machineconfigpools")
        .cloned()
        .unwrap_or_default();
    let counts = store.request_counts_by_agent();
    let spec_patches = counts
        .get(&(
            CONTROLLER.to_string(),
            "PATCH machineconfigpools".to_string(),
        ))
        .copied()
        .unwrap_or(0);
    assert!(
        (3..=5).contains(&spec_patches),
        "{spec_patches} spec patches, of {patched:?}"
    );

    let missing_grants = rbac::ungranted_to(
        &store.requests_scoped(Some(CONTROLLER)),
        "machine-config-controller",
    );
    assert!(missing_grants.is_empty(), "{missing_grants:?}");
}
