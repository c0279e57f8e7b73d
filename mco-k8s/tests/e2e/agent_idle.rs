//! Node agents on a cluster where nothing changes ask the API server for nothing but their
//! WATCHes: no LIST, no GET, no write, whether the optional APIs (MachineConfiguration,
//! PinnedImageSet, MachineConfigNode) are installed or not.
//!
//! Each node runs the whole agent as `machine-config-daemon cluster` runs it
//! (`mco_node::agent::cluster::run`: the update loop, the certificate writer, the pinned image
//! manager) on its own host root, against the in-process API server with the controller
//! running. Once the cluster has settled, the requests each agent makes over a quiet period
//! are counted from the server's `request_counts_by_agent`.
//!
//! The quiet period a user would measure is a minute, with the agent's own timers:
//! [`a_minute_of_an_idle_cluster_costs_no_request`]. The other tests watch for 20 s with the
//! agent's timers made short so that each would fire within it many times over: the resync
//! every second, each WATCH ended by the server after 5 s (its reconnect is a WATCH, from the
//! last resourceVersion), and an absent API's recheck delay starting at 1 s — which must
//! never fire either, the agent waiting for a missing API on a watch of its CRD.

// The test server's write closures return its Status error by value.
#![allow(clippy::result_large_err)]

use crate::support;

use crate::support::apiserver::{resource, ApiServer};
use crate::support::cluster::{decode, expected_rendered, seed_examples};
use crate::support::node_host::root_on;
use kube::Client;
use mco_k8s::controller::{self, Options};
use mco_node::agent::kube_loop::AgentOptions;
use mco_node::{HostRoot, RecordingHost};
use mco_render::api::node::{
    CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN, STATE,
};
use mco_render::api::{MachineConfig, Node};
use mco_render::controllers::backoff::Backoff;
use mco_render::RenderOptions;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a wait for an outcome may last before the test fails.
const LIMIT: Duration = Duration::from_secs(300);

/// The quiet period with the agent's timers made short.
const SHORT_QUIET: Duration = Duration::from_secs(20);

/// The quiet period a user would measure, with the agent's own timers.
const MINUTE: Duration = Duration::from_secs(60);

/// The nodes: name and role.
const NODES: &[(&str, &str)] = &[
    ("master-0", "master"),
    ("worker-0", "worker"),
    ("worker-1", "worker"),
    ("worker-2", "worker"),
];

/// The image the workers' PinnedImageSet pins, in the simulated registry.
const PINNED: &str = "quay.io/openshift-release-dev/ocp-release@sha256:\
    1111111111111111111111111111111111111111111111111111111111111111";

/// Whether the optional APIs are installed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Optional {
    /// MachineConfiguration, PinnedImageSet and MachineConfigNode not served.
    Absent,
    /// All served, with a `cluster` MachineConfiguration and a PinnedImageSet for the workers.
    Present,
}

/// Which timers the agents run with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Timers {
    /// The agent's own.
    Default,
    /// Short enough to fire many times in [`SHORT_QUIET`].
    Short,
}

fn user_agent(node: &str) -> String {
    format!("machine-config-daemon ({node})")
}

fn options(node: &str, timers: Timers) -> AgentOptions {
    let mut opts = AgentOptions::new(node);
    // The recording host does not go down on reboot.
    opts.continue_after_reboot = true;
    if timers == Timers::Short {
        opts.resync = Duration::from_secs(1);
        opts.watch.timeout_secs = 5;
        opts.watch.absent = Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(4),
        };
    }
    opts
}

struct Cluster {
    server: ApiServer,
    _roots: Vec<tempfile::TempDir>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn create(server: &ApiServer, plural: &str, obj: Value) {
    let def = resource(plural).unwrap_or_else(|| panic!("the test server lacks {plural}"));
    server
        .store
        .create(def, "", obj)
        .unwrap_or_else(|e| panic!("{plural}: {e:?}"));
}

/// Installs MachineConfiguration (with its `cluster` object), PinnedImageSet (with a set for
/// the workers) and MachineConfigNode.
fn install_optional_apis(server: &ApiServer) {
    for plural in [
        "machineconfigurations",
        "pinnedimagesets",
        "machineconfignodes",
    ] {
        server.store.install(plural);
    }
    create(
        server,
        "machineconfigurations",
        json!({"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
            "metadata": {"name": "cluster"},
            "spec": {"nodeDisruptionPolicy": {"files": [{"path": "/etc/mco-idle",
                "actions": [{"type": "None"}]}]}}}),
    );
    create(
        server,
        "pinnedimagesets",
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "PinnedImageSet",
            "metadata": {"name": "release",
                         "labels": {"machineconfiguration.openshift.io/role": "worker"}},
            "spec": {"pinnedImages": [{"name": PINNED}]}}),
    );
}

/// A node booted on `mc`, idle: Done on it, its last uncordon applied.
fn create_node(server: &ApiServer, name: &str, role: &str, mc: &MachineConfig) {
    let uncordon = format!("uncordon-{}", mc.name());
    create(
        server,
        "nodes",
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                "labels": {format!("node-role.kubernetes.io/{role}"): "",
                           "kubernetes.io/os": "linux"},
                "annotations": {CURRENT_CONFIG: mc.name(), DESIRED_CONFIG: mc.name(),
                    STATE: "Done", DESIRED_DRAIN: uncordon, LAST_APPLIED_DRAIN: uncordon}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "allocatable": {"ephemeral-storage": "100Gi"}}}),
    );
}

/// Starts the cluster: the example pools and configs, the controller, and an agent on each
/// node, then waits until everything has settled.
async fn idle_cluster(optional: Optional, timers: Timers) -> Cluster {
    let server = ApiServer::start().await.unwrap_or_else(|e| panic!("{e}"));
    match optional {
        Optional::Absent => {
            // MachineConfigurations are not served unless installed.
            server.store.uninstall("pinnedimagesets");
            server.store.uninstall("machineconfignodes");
        }
        Optional::Present => install_optional_apis(&server),
    }
    seed_examples(&server);
    let opts = RenderOptions::default();
    let rendered: BTreeMap<&str, MachineConfig> = ["master", "worker"]
        .into_iter()
        .map(|pool| (pool, expected_rendered(&server, pool, &opts)))
        .collect();
    let mut roots = Vec::new();
    let mut tasks = Vec::new();
    for (name, role) in NODES {
        let mc = &rendered[role];
        create_node(&server, name, role, mc);
        let (dir, root) = root_on(mc);
        tasks.push(start_agent(
            server.client_as(&user_agent(name)),
            root,
            options(name, timers),
        ));
        roots.push(dir);
    }
    let client = server.client_as("machine-config-controller");
    tasks.push(tokio::spawn(async move {
        let opts = Options {
            debounce: Duration::from_millis(20),
            ..Options::default()
        };
        let _ = controller::run(client, opts).await;
    }));
    let cluster = Cluster {
        server,
        _roots: roots,
        tasks,
    };
    settle(&cluster, optional, &rendered).await;
    cluster
}

/// The whole agent of one node, as `machine-config-daemon cluster` runs it, its host's
/// simulated registry holding the pinned image.
fn start_agent(client: Client, root: HostRoot, opts: AgentOptions) -> tokio::task::JoinHandle<()> {
    let mut pinned = RecordingHost::new();
    pinned.cri.registry.insert(PINNED.into(), 1 << 20);
    let pinned = Arc::new(Mutex::new(pinned));
    tokio::spawn(async move {
        let node = opts.node_name.clone();
        if let Err(e) =
            mco_node::agent::cluster::run(client, root, RecordingHost::new(), Some(pinned), opts)
                .await
        {
            panic!("the agent of {node} stopped: {e}");
        }
    })
}

/// The requests each agent made so far: (node, what) -> count.
fn agent_requests(server: &ApiServer) -> BTreeMap<(String, String), u64> {
    let by_agent = server.store.request_counts_by_agent();
    NODES
        .iter()
        .flat_map(|(node, _)| {
            let ua = user_agent(node);
            by_agent
                .iter()
                .filter(move |((a, _), _)| *a == ua)
                .map(|((_, what), n)| ((node.to_string(), what.clone()), *n))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The requests made between two counts.
fn since(
    before: &BTreeMap<(String, String), u64>,
    after: &BTreeMap<(String, String), u64>,
) -> BTreeMap<(String, String), u64> {
    after
        .iter()
        .filter_map(|(k, n)| {
            let d = n - before.get(k).copied().unwrap_or(0);
            (d > 0).then(|| (k.clone(), d))
        })
        .collect()
}

fn is_watch(what: &str) -> bool {
    what.starts_with("WATCH ")
}

/// Waits until the pools are updated, every node is Done on its config, the optional
/// objects are reported (each node's MachineConfigNode Updated, each worker's pinned set at
/// its generation) and the agents have made no request for 3 s.
async fn settle(cluster: &Cluster, optional: Optional, rendered: &BTreeMap<&str, MachineConfig>) {
    let server = &cluster.server;
    support::eventually_within("the cluster to settle", LIMIT, || {
        let pools_updated = rendered.iter().all(|(pool, mc)| {
            server
                .store
                .get("machineconfigpools", "", pool)
                .is_some_and(|p| {
                    p["status"]["configuration"]["name"] == mc.name()
                        && p["status"]["updatedMachineCount"] == p["status"]["machineCount"]
                })
        });
        let nodes_done = NODES.iter().all(|(name, role)| {
            server.store.get("nodes", "", name).is_some_and(|n| {
                let n: Node = decode(&n);
                n.is_done_on(rendered[role].name())
            })
        });
        let reported = optional == Optional::Absent
            || NODES.iter().all(|(name, role)| {
                server
                    .store
                    .get("machineconfignodes", "", name)
                    .is_some_and(|m| {
                        let updated = m["status"]["conditions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|c| c["type"] == "Updated" && c["status"] == "True");
                        let pinned = *role != "worker"
                            || m["status"]["pinnedImageSets"][0]["currentGeneration"] == 1;
                        updated && pinned
                    })
            });
        (pools_updated && nodes_done && reported).then_some(())
    })
    .await;
    // And the agents' start-up traffic is over: 3 s without a request but WATCHes, or, for
    // an agent that never falls quiet, 30 s (the quiet period then shows what it does).
    let mut last = agent_requests(server);
    let mut still = Duration::ZERO;
    let mut waited = Duration::ZERO;
    let tick = Duration::from_millis(100);
    while still < Duration::from_secs(3) && waited < Duration::from_secs(30) {
        tokio::time::sleep(tick).await;
        waited += tick;
        let now = agent_requests(server);
        if since(&last, &now).keys().all(|(_, w)| is_watch(w)) {
            still += tick;
        } else {
            still = Duration::ZERO;
        }
        last = now;
    }
}

/// Counts the agents' requests over `quiet` and asserts that none but WATCHes were made;
/// returns the WATCHes per agent.
async fn assert_quiet(cluster: &Cluster, quiet: Duration) -> BTreeMap<String, u64> {
    let before = agent_requests(&cluster.server);
    tokio::time::sleep(quiet).await;
    let made = since(&before, &agent_requests(&cluster.server));
    let others: BTreeMap<_, _> = made.iter().filter(|((_, w), _)| !is_watch(w)).collect();
    assert!(
        others.is_empty(),
        "idle agents made requests besides WATCHes in {quiet:?}: {others:#?}"
    );
    let mut watches: BTreeMap<String, u64> = BTreeMap::new();
    for ((node, _), n) in &made {
        *watches.entry(node.clone()).or_default() += n;
    }
    watches
}

/// The WATCHes each agent holds: the update loop's Node and MachineConfiguration, the
/// certificate writer's ControllerConfig and ConfigMap, the pinned image manager's Node,
/// pools and PinnedImageSets; and while MachineConfigNodes are not served, their CRD.
const WATCHES_PER_AGENT: u64 = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_agents_make_no_request_while_the_optional_apis_are_absent() {
    let cluster = idle_cluster(Optional::Absent, Timers::Short).await;
    let server = &cluster.server;
    // Each absent API was looked for once, then its CRD watched: LIST then WATCH.
    let at_start = agent_requests(server);
    for (node, _) in NODES {
        let count = |what: &str| {
            at_start
                .get(&(node.to_string(), what.to_string()))
                .copied()
                .unwrap_or(0)
        };
        assert_eq!(
            count("GET /apis/operator.openshift.io/v1/machineconfigurations"),
            1,
            "{node}: {at_start:#?}"
        );
        assert_eq!(
            count("GET /apis/machineconfiguration.openshift.io/v1/pinnedimagesets"),
            1,
            "{node}"
        );
        assert_eq!(count("LIST customresourcedefinitions"), 3, "{node}");
    }
    let watches = assert_quiet(&cluster, SHORT_QUIET).await;
    // The WATCHes reconnected (each ends after 5 s) as WATCHes, a few times each.
    for (node, _) in NODES {
        let n = watches.get(*node).copied().unwrap_or(0);
        let most = WATCHES_PER_AGENT * (SHORT_QUIET.as_secs() / 5 + 1);
        assert!(n > 0 && n <= most, "{node}: {n} WATCHes (at most {most})");
    }

    // The APIs installed: every agent follows them at once, not after a delay.
    let before = agent_requests(server);
    install_optional_apis(server);
    support::eventually_within("the MachineConfigNodes written", LIMIT, || {
        NODES
            .iter()
            .all(|(name, _)| {
                server
                    .store
                    .get("machineconfignodes", "", name)
                    .is_some_and(|m| m["status"]["configVersion"]["current"].is_string())
            })
            .then_some(())
    })
    .await;
    support::eventually_within(
        "the MachineConfiguration and the sets listed",
        LIMIT,
        || {
            let made = since(&before, &agent_requests(server));
            NODES
                .iter()
                .all(|(node, _)| {
                    ["LIST machineconfigurations", "LIST pinnedimagesets"]
                        .iter()
                        .all(|w| made.contains_key(&(node.to_string(), w.to_string())))
                })
                .then_some(())
        },
    )
    .await;
    // Every request an agent made is one its ClusterRole grants (the CRD watches by name).
    for (node, _) in NODES {
        let requests = server.store.requests_scoped(Some(&user_agent(node)));
        let missing = support::rbac::ungranted_to(&requests, "machine-config-daemon");
        assert!(missing.is_empty(), "{node}: not granted: {missing:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_agents_make_no_request_with_the_optional_apis_present() {
    let cluster = idle_cluster(Optional::Present, Timers::Short).await;
    let server = &cluster.server;
    // The workers pinned the set's image.
    let pools = server.store.get("machineconfigpools", "", "worker");
    assert_eq!(
        pools.map(|p| p["spec"]["pinnedImageSets"].clone()),
        Some(json!([{"name": "release"}]))
    );
    let watches = assert_quiet(&cluster, SHORT_QUIET).await;
    for (node, _) in NODES {
        let n = watches.get(*node).copied().unwrap_or(0);
        assert!(n > 0, "{node}: no WATCH reconnected in {SHORT_QUIET:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minute_of_an_idle_cluster_costs_no_request() {
    for optional in [Optional::Absent, Optional::Present] {
        let cluster = idle_cluster(optional, Timers::Default).await;
        let watches = assert_quiet(&cluster, MINUTE).await;
        let figures: Vec<String> = NODES
            .iter()
            .map(|(n, _)| format!("{n} 0 requests, {} WATCHes", watches.get(*n).unwrap_or(&0)))
            .collect();
        eprintln!(
            "optional APIs {optional:?}: per agent over {MINUTE:?}: {}",
            figures.join("; ")
        );
    }
}
