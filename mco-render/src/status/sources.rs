//! What `status` reads of a live cluster, kind by kind ([`Source`]): where each kind is served
//! (group, version, resource, namespace), which kinds the view cannot do without, and what
//! a view without one of the others misses. [`Cluster::insert`] decodes one listed object of a
//! kind into the [`Cluster`] the offline view reads from a dump, so the live view and the
//! offline one compute and print the same thing.
//!
//! Not read: the ControllerConfig and the PinnedImageSets themselves (the findings read the
//! MachineConfigNodes' pinned-image status), KubeletConfigs and the like (the pools' rendered
//! configs already hold what they generate).

use super::input::{Cluster, DisruptionBudget, EventView, PodView};
use crate::api::job::JobView;
use crate::controllers::operator::NAMESPACE;
use serde_json::Value;

/// A kind `status` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// MachineConfigPools.
    Pools,
    /// Nodes.
    Nodes,
    /// MachineConfigs (the pools' sources, and their rendered configs).
    MachineConfigs,
    /// MachineConfigNodes.
    MachineConfigNodes,
    /// RolloutPolicies.
    RolloutPolicies,
    /// MachineOSConfigs.
    MachineOSConfigs,
    /// MachineOSBuilds.
    MachineOSBuilds,
    /// The build Jobs (in the operator's namespace).
    Jobs,
    /// Pods (every namespace: what a drain evicts).
    Pods,
    /// PodDisruptionBudgets.
    DisruptionBudgets,
    /// Events (`events.k8s.io/v1`, which serves the `v1` ones too).
    Events,
    /// The MachineConfiguration (node disruption policies).
    MachineConfigurations,
    /// The ClusterVersion (the release the cluster updates to).
    ClusterVersions,
}

/// Where a kind is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    /// The API group (`""` for the core group).
    pub group: &'static str,
    /// The version.
    pub version: &'static str,
    /// The kind.
    pub kind: &'static str,
    /// The resource (plural).
    pub plural: &'static str,
    /// The namespace listed, for a namespaced kind read in one namespace only.
    pub namespace: Option<&'static str>,
    /// Whether the kind is namespaced.
    pub namespaced: bool,
}

impl Served {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group`, as `kubectl get` names the resource.
    pub fn resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

const MCO: &str = "machineconfiguration.openshift.io";

impl Source {
    /// Every kind read, in the order they are listed.
    pub const ALL: [Source; 13] = [
        Source::Pools,
        Source::Nodes,
        Source::MachineConfigs,
        Source::MachineConfigNodes,
        Source::RolloutPolicies,
        Source::MachineOSConfigs,
        Source::MachineOSBuilds,
        Source::Jobs,
        Source::Pods,
        Source::DisruptionBudgets,
        Source::Events,
        Source::MachineConfigurations,
        Source::ClusterVersions,
    ];

    /// Where the kind is served.
    pub fn served(self) -> Served {
        let s = |group, version, kind, plural, namespaced| Served {
            group,
            version,
            kind,
            plural,
            namespace: None,
            namespaced,
        };
        match self {
            Source::Pools => s(MCO, "v1", "MachineConfigPool", "machineconfigpools", false),
            Source::Nodes => s("", "v1", "Node", "nodes", false),
            Source::MachineConfigs => s(MCO, "v1", "MachineConfig", "machineconfigs", false),
            Source::MachineConfigNodes => {
                s(MCO, "v1", "MachineConfigNode", "machineconfignodes", false)
            }
            Source::RolloutPolicies => s(
                crate::api::rollout_policy::GROUP,
                crate::api::rollout_policy::VERSION,
                crate::api::rollout_policy::KIND,
                "rolloutpolicies",
                false,
            ),
            Source::MachineOSConfigs => s(MCO, "v1", "MachineOSConfig", "machineosconfigs", false),
            Source::MachineOSBuilds => s(MCO, "v1", "MachineOSBuild", "machineosbuilds", false),
            Source::Jobs => Served {
                namespace: Some(NAMESPACE),
                ..s("batch", "v1", "Job", "jobs", true)
            },
            Source::Pods => s("", "v1", "Pod", "pods", true),
            Source::DisruptionBudgets => s(
                "policy",
                "v1",
                "PodDisruptionBudget",
                "poddisruptionbudgets",
                true,
            ),
            Source::Events => s("events.k8s.io", "v1", "Event", "events", true),
            Source::MachineConfigurations => s(
                "operator.openshift.io",
                "v1",
                "MachineConfiguration",
                "machineconfigurations",
                false,
            ),
            Source::ClusterVersions => s(
                "config.openshift.io",
                "v1",
                "ClusterVersion",
                "clusterversions",
                false,
            ),
        }
    }

    /// Whether the view means nothing without the kind (pools, Nodes, MachineConfigs).
    pub fn required(self) -> bool {
        matches!(self, Source::Pools | Source::Nodes | Source::MachineConfigs)
    }

    /// The kind's name in the plural, for people.
    pub fn label(self) -> &'static str {
        match self {
            Source::Pools => "MachineConfigPools",
            Source::Nodes => "Nodes",
            Source::MachineConfigs => "MachineConfigs",
            Source::MachineConfigNodes => "MachineConfigNodes",
            Source::RolloutPolicies => "RolloutPolicies",
            Source::MachineOSConfigs => "MachineOSConfigs",
            Source::MachineOSBuilds => "MachineOSBuilds",
            Source::Jobs => "Jobs",
            Source::Pods => "Pods",
            Source::DisruptionBudgets => "PodDisruptionBudgets",
            Source::Events => "Events",
            Source::MachineConfigurations => "MachineConfigurations",
            Source::ClusterVersions => "ClusterVersions",
        }
    }

    /// What the view misses without the kind.
    pub fn without(self) -> &'static str {
        match self {
            Source::Pools => "no pool can be shown",
            Source::Nodes => "no node can be shown",
            Source::MachineConfigs => "versions and disruptions are not shown",
            Source::MachineConfigNodes => {
                "draining and rebooting are not told apart, pinned images are not checked"
            }
            Source::RolloutPolicies => "RolloutPolicy pauses, rollbacks and windows are not seen",
            Source::MachineOSConfigs | Source::MachineOSBuilds => {
                "layered pools' builds are not seen"
            }
            Source::Jobs => "failed image builds are not explained",
            Source::Pods | Source::DisruptionBudgets => {
                "blocked drains are explained without the budgets and pods in their way"
            }
            Source::Events => "durations from Events and FailedToDrain reports are not seen",
            Source::MachineConfigurations => {
                "disruptions are computed with the built-in node disruption policies"
            }
            Source::ClusterVersions => {
                "nodes are measured by their config alone, not by the release the cluster updates to"
            }
        }
    }
}

/// Why a kind could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// The API server does not serve it (its CRD is not installed).
    NotServed,
    /// The caller may not list it.
    Forbidden,
    /// Any other failure.
    Failed(String),
}

/// The note for a kind that could not be read: which, why, and what the view misses.
pub fn unread_note(source: Source, why: &Unread) -> String {
    let s = source.served();
    let what = format!("{} ({})", source.label(), s.resource());
    let why = match why {
        Unread::NotServed => "not served by the API server".to_string(),
        Unread::Forbidden => match s.namespace {
            Some(ns) => format!("listing them in namespace {ns} is forbidden"),
            None => "listing them is forbidden".to_string(),
        },
        Unread::Failed(e) => format!("cannot be listed: {e}"),
    };
    format!("{what} {why}: {}", source.without())
}

impl Cluster {
    /// Adds one object of `source`'s kind, as the API server serves it. An object that does
    /// not decode is left out and named in [`Cluster::skipped`] (with `origin`, the resource
    /// it was listed from). Only the MachineConfiguration named `cluster` is kept.
    pub fn insert(&mut self, source: Source, origin: &str, v: Value) {
        let name = v
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind = source.served().kind;
        let mut skip = |e: String| {
            self.skipped
                .push(format!("{origin}: {kind} {name:?}: {e}; left out"));
        };
        fn decode<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, String> {
            serde_json::from_value(v).map_err(|e| e.to_string())
        }
        match source {
            Source::Pools => match decode(v) {
                Ok(x) => self.pools.push(x),
                Err(e) => skip(e),
            },
            Source::Nodes => match decode(v) {
                Ok(x) => self.nodes.push(x),
                Err(e) => skip(e),
            },
            Source::MachineConfigs => {
                // The Ignition config is kept as the tree it already is.
                let mut v = v;
                let config = v
                    .get_mut("spec")
                    .and_then(Value::as_object_mut)
                    .and_then(|spec| spec.get_mut("config"))
                    .map(Value::take)
                    .filter(|c| !c.is_null());
                match decode::<crate::api::MachineConfig>(v) {
                    Ok(mut mc) => {
                        if config.is_some() {
                            mc.spec.config = config;
                        }
                        self.machine_configs.push(mc)
                    }
                    Err(e) => skip(e),
                }
            }
            Source::MachineConfigNodes => match decode(v) {
                Ok(x) => self.machine_config_nodes.push(x),
                Err(e) => skip(e),
            },
            Source::RolloutPolicies => match decode(v) {
                Ok(x) => self.rollout_policies.push(x),
                Err(e) => skip(e),
            },
            Source::MachineOSConfigs => match decode(v) {
                Ok(x) => self.machine_os_configs.push(x),
                Err(e) => skip(e),
            },
            Source::MachineOSBuilds => match decode(v) {
                Ok(x) => self.machine_os_builds.push(x),
                Err(e) => skip(e),
            },
            Source::Jobs => self.jobs.push(JobView::from_json(&v)),
            Source::Pods => match PodView::from_json(&v) {
                Ok(x) => self.pods.push(x),
                Err(e) => skip(e),
            },
            Source::DisruptionBudgets => match DisruptionBudget::from_json(&v) {
                Ok(x) => self.disruption_budgets.push(x),
                Err(e) => skip(e),
            },
            Source::Events => self.events.push(EventView::from_json(&v)),
            Source::MachineConfigurations if name == "cluster" => match decode(v) {
                Ok(x) => self.machine_configuration = Some(x),
                Err(e) => skip(e),
            },
            Source::MachineConfigurations => {}
            Source::ClusterVersions => self.add_cluster_version(&v),
        }
    }

    /// Records that `source` could not be read ([`Cluster::unread`]).
    pub fn mark_unread(&mut self, source: Source, why: &Unread) {
        self.unread.push(unread_note(source, why));
    }

    /// The cluster from each kind's objects, as listed, in [`Source::ALL`]'s order; the
    /// objects of each kind keep the order given (the API server's: by name).
    pub fn from_sources(objects: impl IntoIterator<Item = (Source, Vec<Value>)>) -> Cluster {
        let mut c = Cluster::default();
        for (source, items) in objects {
            let origin = source.served().resource();
            for v in items {
                c.insert(source, &origin, v);
            }
        }
        c
    }
}
