//! What `status` reads of a cluster, typed: the MCO's objects and the few core objects a stuck
//! rollout is explained by (Pods, PodDisruptionBudgets, Events, Jobs). [`Cluster::from_manifests`]
//! builds it from a dump (`oc get ... -o yaml` outputs read by `load`); a live view builds the
//! same value from watch caches.

use crate::api::job::JobView;
use crate::api::meta::OwnerReference;
use crate::api::rollout_policy::RolloutPolicy;
use crate::api::value_at::str_at;
use crate::api::{
    ControllerConfig, LabelSelector, MachineConfig, MachineConfigNode, MachineConfigPool,
    MachineOSBuild, MachineOSConfig, Node, PinnedImageSet,
};
use crate::controllers::drain::Pod;
use crate::manifests::Manifests;
use crate::plan::MachineConfiguration;
use jiff::Timestamp;
use serde_json::Value;
use std::collections::BTreeMap;

/// A pod, as far as a drain is concerned: the drain controller's view of it, the node it runs
/// on and its labels (what PodDisruptionBudgets select).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodView {
    /// What the drain controller reads.
    pub pod: Pod,
    /// `spec.nodeName`.
    pub node: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
}

impl PodView {
    /// The pod from its Kubernetes JSON, or why it does not decode.
    pub fn from_json(v: &Value) -> Result<PodView, String> {
        let pod: Pod = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
        Ok(PodView {
            pod,
            node: str_at(v, "/spec/nodeName").to_string(),
            labels: string_map(v.pointer("/metadata/labels")),
        })
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.pod.metadata.namespace, self.pod.metadata.name)
    }

    /// The pod's controlling owner as `Kind/name` (`ReplicaSet/web-5d9c`), if any.
    pub fn owner(&self) -> Option<&OwnerReference> {
        let owners = &self.pod.metadata.owner_references;
        owners
            .iter()
            .find(|o| o.controller == Some(true))
            .or(owners.first())
    }
}

/// A `policy/v1` PodDisruptionBudget: what it selects, what it asks for and what it allows now.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DisruptionBudget {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `spec.selector` (absent selects no pod).
    pub selector: Option<LabelSelector>,
    /// `spec.minAvailable` as written (`2`, `50%`).
    pub min_available: Option<String>,
    /// `spec.maxUnavailable` as written.
    pub max_unavailable: Option<String>,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i64,
    /// `status.currentHealthy`.
    pub current_healthy: i64,
    /// `status.desiredHealthy`.
    pub desired_healthy: i64,
    /// `status.expectedPods`.
    pub expected_pods: i64,
}

impl DisruptionBudget {
    /// The budget from its Kubernetes JSON, or why its selector does not decode.
    pub fn from_json(v: &Value) -> Result<DisruptionBudget, String> {
        let selector = match v.pointer("/spec/selector") {
            None | Some(Value::Null) => None,
            Some(s) => Some(
                serde_json::from_value::<LabelSelector>(s.clone())
                    .map_err(|e| format!("spec.selector: {e}"))?,
            ),
        };
        let int = |p: &str| v.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        let int_or_string = |p: &str| match v.pointer(p) {
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        Ok(DisruptionBudget {
            namespace: str_at(v, "/metadata/namespace").to_string(),
            name: str_at(v, "/metadata/name").to_string(),
            selector,
            min_available: int_or_string("/spec/minAvailable"),
            max_unavailable: int_or_string("/spec/maxUnavailable"),
            disruptions_allowed: int("/status/disruptionsAllowed"),
            current_healthy: int("/status/currentHealthy"),
            desired_healthy: int("/status/desiredHealthy"),
            expected_pods: int("/status/expectedPods"),
        })
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether the budget covers `pod` (same namespace, selector matching its labels). A
    /// selector that does not compile covers nothing.
    pub fn covers(&self, pod: &PodView) -> bool {
        if pod.pod.metadata.namespace != self.namespace {
            return false;
        }
        let Some(sel) = &self.selector else {
            return false;
        };
        sel.compile().is_ok_and(|s| s.matches(&pod.labels))
    }
}

/// An Event, from `v1` (`oc get events`) or `events.k8s.io/v1`: the object it is about, its
/// reason and text, and when it happened first and last.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EventView {
    /// The kind of the object it regards (`Node`, `MachineConfigPool`).
    pub kind: String,
    /// That object's name.
    pub name: String,
    /// `reason`.
    pub reason: String,
    /// `message` (v1) or `note` (events.k8s.io/v1).
    pub message: String,
    /// Type `Warning`.
    pub warning: bool,
    /// When it first happened.
    pub first: Option<Timestamp>,
    /// When it last happened.
    pub last: Option<Timestamp>,
    /// How many times (at least 1).
    pub count: i64,
}

fn time_at(v: &Value, ptr: &str) -> Option<Timestamp> {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
}

impl EventView {
    /// The Event from its JSON, either API.
    pub fn from_json(v: &Value) -> EventView {
        let regarding = if v.get("regarding").is_some_and(Value::is_object) {
            "/regarding"
        } else {
            "/involvedObject"
        };
        let text = match str_at(v, "/message") {
            "" => str_at(v, "/note"),
            m => m,
        };
        let first = time_at(v, "/firstTimestamp")
            .or_else(|| time_at(v, "/deprecatedFirstTimestamp"))
            .or_else(|| time_at(v, "/eventTime"))
            .or_else(|| time_at(v, "/metadata/creationTimestamp"));
        let last = time_at(v, "/series/lastObservedTime")
            .or_else(|| time_at(v, "/lastTimestamp"))
            .or_else(|| time_at(v, "/deprecatedLastTimestamp"))
            .or_else(|| time_at(v, "/eventTime"))
            .or(first);
        let count = ["/series/count", "/count", "/deprecatedCount"]
            .iter()
            .find_map(|p| v.pointer(p).and_then(Value::as_i64))
            .unwrap_or(1)
            .max(1);
        EventView {
            kind: str_at(v, &format!("{regarding}/kind")).to_string(),
            name: str_at(v, &format!("{regarding}/name")).to_string(),
            reason: str_at(v, "/reason").to_string(),
            message: text.to_string(),
            warning: str_at(v, "/type") == "Warning",
            first,
            last,
            count,
        }
    }
}

/// Everything `status` reads, typed. Absent kinds are empty: every reason that needs them is
/// simply not found.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// MachineConfigPools, in the dump's order.
    pub pools: Vec<MachineConfigPool>,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// MachineConfigs (the rendered ones name versions and give the disruption).
    pub machine_configs: Vec<MachineConfig>,
    /// MachineConfigNodes.
    pub machine_config_nodes: Vec<MachineConfigNode>,
    /// Pods.
    pub pods: Vec<PodView>,
    /// PodDisruptionBudgets.
    pub disruption_budgets: Vec<DisruptionBudget>,
    /// Events.
    pub events: Vec<EventView>,
    /// RolloutPolicies.
    pub rollout_policies: Vec<RolloutPolicy>,
    /// MachineOSConfigs.
    pub machine_os_configs: Vec<MachineOSConfig>,
    /// MachineOSBuilds.
    pub machine_os_builds: Vec<MachineOSBuild>,
    /// Jobs.
    pub jobs: Vec<JobView>,
    /// PinnedImageSets.
    pub pinned_image_sets: Vec<PinnedImageSet>,
    /// The ControllerConfig.
    pub controller_config: Option<ControllerConfig>,
    /// The MachineConfiguration `cluster` (user node disruption policies).
    pub machine_configuration: Option<MachineConfiguration>,
    /// The release the cluster updates to: the ClusterVersion `version`'s newest
    /// `status.history` entry. With it, as `oc adm upgrade status` does, a node is updated
    /// only once its config carries that release too.
    pub release_target: Option<String>,
    /// Objects left out because they do not decode, each naming its file, kind and name.
    pub skipped: Vec<String>,
    /// Kinds a live view could not read, each with why and what the view misses
    /// ([`super::sources::unread_note`]).
    pub unread: Vec<String>,
}

fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

impl Cluster {
    /// The cluster a dump holds. Lists of any kind (`PodList`, `List`) are unpacked; objects of
    /// the kinds read here that do not decode are left out and named in [`Cluster::skipped`].
    pub fn from_manifests(m: Manifests) -> Cluster {
        let machine_configuration = crate::report::policies(&m);
        let mut c = Cluster {
            pools: m.pools.into_iter().map(|(_, p)| p).collect(),
            nodes: m.nodes.into_iter().map(|(_, n)| n).collect(),
            machine_configs: m.machine_configs.into_iter().map(|(_, mc)| mc).collect(),
            rollout_policies: m.rollout_policies.into_iter().map(|(_, p)| p).collect(),
            machine_os_configs: m.machine_os_configs.into_iter().map(|(_, c)| c).collect(),
            controller_config: m.controller_config.map(|(_, c)| c),
            machine_configuration,
            ..Cluster::default()
        };
        let mut queue: Vec<(String, Value)> = m.others;
        queue.reverse();
        while let Some((file, v)) = queue.pop() {
            let kind = str_at(&v, "/kind").to_string();
            if kind.ends_with("List") {
                if let Some(items) = v.get("items").and_then(Value::as_array) {
                    for item in items.iter().rev() {
                        queue.push((file.clone(), item.clone()));
                    }
                }
                continue;
            }
            c.add(&file, &kind, v);
        }
        c
    }

    fn add(&mut self, file: &str, kind: &str, v: Value) {
        let name = str_at(&v, "/metadata/name").to_string();
        let mut skip = |e: String| {
            self.skipped
                .push(format!("{file}: {kind} {name:?}: {e}; left out"));
        };
        match kind {
            "MachineConfigNode" => match serde_json::from_value(v) {
                Ok(x) => self.machine_config_nodes.push(x),
                Err(e) => skip(e.to_string()),
            },
            "Pod" => match PodView::from_json(&v) {
                Ok(x) => self.pods.push(x),
                Err(e) => skip(e),
            },
            "PodDisruptionBudget" => match DisruptionBudget::from_json(&v) {
                Ok(x) => self.disruption_budgets.push(x),
                Err(e) => skip(e),
            },
            "Event" => self.events.push(EventView::from_json(&v)),
            "ClusterVersion" => self.add_cluster_version(&v),
            "MachineOSBuild" => match serde_json::from_value(v) {
                Ok(x) => self.machine_os_builds.push(x),
                Err(e) => skip(e.to_string()),
            },
            "Job" => self.jobs.push(JobView::from_json(&v)),
            "PinnedImageSet" => match serde_json::from_value(v) {
                Ok(x) => self.pinned_image_sets.push(x),
                Err(e) => skip(e.to_string()),
            },
            _ => {}
        }
    }

    /// Takes the release target from the ClusterVersion `version` (the cluster's only one).
    pub(super) fn add_cluster_version(&mut self, v: &Value) {
        if str_at(v, "/metadata/name") != "version" {
            return;
        }
        self.release_target = v
            .pointer("/status/history/0/version")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
    }

    /// The MachineConfigNode of a node.
    pub fn machine_config_node(&self, node: &str) -> Option<&MachineConfigNode> {
        self.machine_config_nodes
            .iter()
            .find(|m| m.spec.node.name == node || m.metadata.name == node)
    }

    /// A MachineConfig by name.
    pub fn machine_config(&self, name: &str) -> Option<&MachineConfig> {
        self.machine_configs.iter().find(|m| m.name() == name)
    }

    /// The RolloutPolicy of a pool (same name).
    pub fn rollout_policy(&self, pool: &str) -> Option<&RolloutPolicy> {
        self.rollout_policies.iter().find(|p| p.name() == pool)
    }

    /// The Events about one object, oldest first.
    pub fn events_about<'a>(&'a self, kind: &str, name: &str) -> Vec<&'a EventView> {
        let mut v: Vec<&EventView> = self
            .events
            .iter()
            .filter(|e| e.kind == kind && e.name == name)
            .collect();
        v.sort_by_key(|e| e.first);
        v
    }
}
