//! The `machine-config` ClusterOperator status, from what the cluster shows.
//!
//! The rules follow upstream's operator: the operand version is reported only once a sync
//! completed (every workload rolled out at the version, no failure, no degraded pool);
//! `Progressing` is True ("Working towards V") while the reported version differs from the
//! desired one or a workload is still rolling out, False ("Cluster version is V") otherwise;
//! a failing sync task makes `Degraded` True with the reason `<Task>Failed` ("Unable to apply
//! V: ..." while moving to a version, "Failed to resync V because: ..." at it) and, unless
//! the task is the pools check, `Available` False; `Upgradeable` is False while a pool is
//! degraded or updating. A condition whose status did not change keeps its
//! `lastTransitionTime`.

use super::VERSION_ANNOTATION;
use crate::api::schema::preserve_object;
use crate::api::{Condition, MachineConfigPool};
use crate::gocompat::quote::go_quote;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A ClusterOperator's status.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "What an operator reports.")]
pub struct ClusterOperatorStatus {
    /// Available, Progressing, Degraded, Upgradeable (and any others written before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        with = "Option<Vec<Condition>>",
        description = "Available, Progressing, Degraded, Upgradeable, ..."
    )]
    pub conditions: Vec<Condition>,
    /// The versions the operands are at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        with = "Option<Vec<OperandVersion>>",
        description = "The versions of the operands."
    )]
    pub versions: Vec<OperandVersion>,
    /// Objects worth gathering when debugging the operator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        with = "Option<Vec<RelatedObject>>",
        description = "Objects to gather when debugging the operator."
    )]
    pub related_objects: Vec<RelatedObject>,
    /// Operator-specific data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_object")]
    pub extension: Option<Value>,
}

/// An operand and its version.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "An operand's version.")]
pub struct OperandVersion {
    /// The operand (`operator`).
    #[schemars(description = "The operand.")]
    pub name: String,
    /// Its version.
    pub version: String,
}

/// A reference to related objects (a resource, optionally one named object).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "A reference to a resource or one object.")]
pub struct RelatedObject {
    /// The API group ("" for core).
    pub group: String,
    /// The plural resource.
    pub resource: String,
    /// The namespace, for one namespaced object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(with = "Option<String>", description = "The namespace.")]
    pub namespace: String,
    /// The name, for one object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(with = "Option<String>", description = "The name.")]
    pub name: String,
}

/// A sync task that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncFailure {
    /// The task, CamelCase (e.g. `MachineConfigController`); reasons read `<task>Failed`.
    pub task: String,
    /// What went wrong.
    pub message: String,
}

/// A workload the operator deployed, with its observed state.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// `Deployment` or `DaemonSet`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// The object read back from the cluster, if it exists.
    pub observed: Option<Value>,
}

/// What the status is computed from.
#[derive(Debug, Clone, Copy)]
pub struct StatusInput<'a> {
    /// The version being deployed.
    pub version: &'a str,
    /// The operator's namespace (a related object).
    pub namespace: &'a str,
    /// The workloads, in apply order.
    pub workloads: &'a [Workload],
    /// The MachineConfigPools.
    pub pools: &'a [MachineConfigPool],
    /// The first sync task that failed, if one did.
    pub failure: Option<&'a SyncFailure>,
    /// The status currently written.
    pub previous: Option<&'a ClusterOperatorStatus>,
    /// The current time (RFC 3339), for changed conditions.
    pub now: &'a str,
}

/// The task name of a workload: its name in CamelCase (`machine-config-server` ->
/// `MachineConfigServer`).
pub fn task_name(name: &str) -> String {
    name.split(['-', '.', '_'])
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

fn int_at(v: &Value, ptr: &str) -> Option<i64> {
    v.pointer(ptr).and_then(Value::as_i64)
}

/// Why a workload is not rolled out at `version`, or `None` when it is: it exists, carries
/// the version, its controller observed its latest generation, and every replica (every
/// scheduled pod, for a DaemonSet) is updated and available.
pub fn rollout_pending(w: &Workload, version: &str) -> Option<String> {
    let what = format!("{} {}", w.kind, w.name);
    let Some(o) = &w.observed else {
        return Some(format!("{what} does not exist"));
    };
    let at = o
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(VERSION_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("");
    if at != version {
        return Some(format!(
            "{what} is at version {}, not {}",
            go_quote(at),
            go_quote(version)
        ));
    }
    let generation = int_at(o, "/metadata/generation").unwrap_or(0);
    let observed = int_at(o, "/status/observedGeneration").unwrap_or(0);
    if observed < generation {
        return Some(format!(
            "{what}: generation {generation} is not observed yet (observed {observed})"
        ));
    }
    let (want, updated, available, unit) = if w.kind == "DaemonSet" {
        (
            int_at(o, "/status/desiredNumberScheduled").unwrap_or(0),
            int_at(o, "/status/updatedNumberScheduled").unwrap_or(0),
            int_at(o, "/status/numberAvailable").unwrap_or(0),
            "pods",
        )
    } else {
        (
            int_at(o, "/spec/replicas").unwrap_or(1),
            int_at(o, "/status/updatedReplicas").unwrap_or(0),
            int_at(o, "/status/availableReplicas").unwrap_or(0),
            "replicas",
        )
    };
    if updated < want {
        return Some(format!("{what}: {updated} of {want} {unit} updated"));
    }
    if available < want {
        return Some(format!("{what}: {available} of {want} {unit} available"));
    }
    None
}

/// Why a workload serves nothing, or `None` when it has an available replica (or wants none).
fn unavailable(w: &Workload) -> Option<String> {
    let what = format!("{} {}", w.kind, w.name);
    let Some(o) = &w.observed else {
        return Some(format!("{what} does not exist"));
    };
    let (want, available) = if w.kind == "DaemonSet" {
        (
            int_at(o, "/status/desiredNumberScheduled").unwrap_or(0),
            int_at(o, "/status/numberAvailable").unwrap_or(0),
        )
    } else {
        (
            int_at(o, "/spec/replicas").unwrap_or(1),
            int_at(o, "/status/availableReplicas").unwrap_or(0),
        )
    };
    (want > 0 && available == 0).then(|| {
        format!(
            "{what} has no available {}",
            if w.kind == "DaemonSet" {
                "pods"
            } else {
                "replicas"
            }
        )
    })
}

fn pool_condition<'a>(pool: &'a MachineConfigPool, type_: &str) -> Option<&'a Condition> {
    pool.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_ && c.is_true())
}

/// The degraded pools, each with a message naming it.
pub fn degraded_pools(pools: &[MachineConfigPool]) -> Vec<String> {
    pools
        .iter()
        .filter_map(|p| {
            let c = pool_condition(p, "Degraded")?;
            let s = p.status_or_default();
            let mut msg = format!(
                "MachineConfigPool {} is degraded (total: {}, ready {}, updated: {}, unavailable: {}, degraded: {})",
                p.name(),
                s.machine_count,
                s.ready_machine_count,
                s.updated_machine_count,
                s.unavailable_machine_count,
                s.degraded_machine_count,
            );
            let detail = match c.message() {
                "" => c.reason(),
                m => m,
            };
            if !detail.is_empty() {
                msg.push_str(": ");
                msg.push_str(detail);
            }
            Some(msg)
        })
        .collect()
}

/// The task name of the pools check.
pub const POOLS_TASK: &str = "RequiredPools";

const AS_EXPECTED: &str = "AsExpected";

/// The objects upstream lists for must-gather, for this project's resources.
pub fn related_objects(namespace: &str) -> Vec<RelatedObject> {
    let mco = "machineconfiguration.openshift.io";
    let r = |group: &str, resource: &str, name: &str| RelatedObject {
        group: group.to_string(),
        resource: resource.to_string(),
        namespace: String::new(),
        name: name.to_string(),
    };
    vec![
        r("", "namespaces", namespace),
        r(mco, "machineconfigpools", ""),
        r(mco, "controllerconfigs", ""),
        r(mco, "kubeletconfigs", ""),
        r(mco, "containerruntimeconfigs", ""),
        r(mco, "machineconfigs", ""),
        r("", "nodes", ""),
    ]
}

/// Versions as upstream prints them in messages: `[{operator 4.16.0}]`.
fn show_versions(v: &[OperandVersion]) -> String {
    let inner: Vec<String> = v
        .iter()
        .map(|o| format!("{{{} {}}}", o.name, o.version))
        .collect();
    format!("[{}]", inner.join(" "))
}

/// A condition as the operator writes it: empty reasons and messages left out.
fn cond(type_: &str, status: bool, reason: &str, message: String) -> Condition {
    Condition {
        reason: (!reason.is_empty()).then(|| reason.to_string()),
        message: (!message.is_empty()).then_some(message),
        ..Condition::of(type_, status)
    }
}

/// Computes the ClusterOperator status (see the module documentation for the rules).
pub fn compute_status(input: &StatusInput<'_>) -> ClusterOperatorStatus {
    let v = input.version;
    let empty = ClusterOperatorStatus::default();
    let prev = input.previous.unwrap_or(&empty);
    let desired = vec![OperandVersion {
        name: "operator".to_string(),
        version: v.to_string(),
    }];
    let pending: Vec<String> = input
        .workloads
        .iter()
        .filter_map(|w| rollout_pending(w, v))
        .collect();
    let degraded = degraded_pools(input.pools);
    let pools_failure = (!degraded.is_empty()).then(|| SyncFailure {
        task: POOLS_TASK.to_string(),
        message: degraded.join("; "),
    });
    let failure = input.failure.or(pools_failure.as_ref());
    let complete = failure.is_none() && pending.is_empty();
    let versions = if complete {
        desired.clone()
    } else {
        prev.versions.clone()
    };
    let at_version = versions == desired;
    let shown = show_versions(&versions);

    let available = match failure.filter(|f| f.task != POOLS_TASK) {
        Some(f) => cond(
            "Available",
            false,
            &format!("{}Failed", f.task),
            format!("Cluster not available for {shown}: {}", f.message),
        ),
        None => match input
            .workloads
            .iter()
            .find_map(|w| unavailable(w).map(|m| (task_name(&w.name), m)))
        {
            Some((task, m)) => cond(
                "Available",
                false,
                &format!("{task}NotAvailable"),
                format!("Cluster not available for {shown}: {m}"),
            ),
            None => cond(
                "Available",
                true,
                AS_EXPECTED,
                format!("Cluster has deployed {shown}"),
            ),
        },
    };
    let progressing_now = !at_version || !pending.is_empty();
    let progressing = match failure {
        Some(f) if progressing_now => cond(
            "Progressing",
            true,
            &format!("{}Failed", f.task),
            format!("Unable to apply {v}"),
        ),
        Some(f) => cond(
            "Progressing",
            false,
            &format!("{}Failed", f.task),
            format!("Error while reconciling {v}"),
        ),
        None if progressing_now => {
            let mut c = cond(
                "Progressing",
                true,
                "Deploying",
                format!("Working towards {v}"),
            );
            if let Some(p) = pending.first() {
                c.message = Some(format!("{}: {p}", c.message()));
            }
            c
        }
        None => cond(
            "Progressing",
            false,
            AS_EXPECTED,
            format!("Cluster version is {v}"),
        ),
    };
    let degraded_cond = match failure {
        Some(f) if at_version => cond(
            "Degraded",
            true,
            &format!("{}Failed", f.task),
            format!("Failed to resync {v} because: {}", f.message),
        ),
        Some(f) => cond(
            "Degraded",
            true,
            &format!("{}Failed", f.task),
            format!("Unable to apply {v}: {}", f.message),
        ),
        None => cond("Degraded", false, AS_EXPECTED, String::new()),
    };
    let updating = input
        .pools
        .iter()
        .any(|p| pool_condition(p, "Updating").is_some());
    let upgradeable = if !degraded.is_empty() {
        cond("Upgradeable", false, "DegradedPool", "One or more machine config pools are degraded, please see `oc get mcp` for further details and resolve before upgrading".to_string())
    } else if updating {
        cond(
            "Upgradeable",
            false,
            "PoolUpdating",
            "One or more machine config pools are updating, please see `oc get mcp` for further details".to_string(),
        )
    } else {
        cond("Upgradeable", true, AS_EXPECTED, String::new())
    };

    let mut conditions = Vec::new();
    for mut c in [available, progressing, degraded_cond, upgradeable] {
        c.last_transition_time = Some(match prev.conditions.iter().find(|p| p.type_ == c.type_) {
            Some(p) if p.status == c.status && !p.last_transition_time().is_empty() => {
                p.last_transition_time().to_string()
            }
            _ => input.now.to_string(),
        });
        conditions.push(c);
    }
    let ours = ["Available", "Progressing", "Degraded", "Upgradeable"];
    conditions.extend(
        prev.conditions
            .iter()
            .filter(|c| !ours.contains(&c.type_.as_str()))
            .cloned(),
    );
    ClusterOperatorStatus {
        conditions,
        versions,
        related_objects: related_objects(input.namespace),
        extension: prev.extension.clone(),
    }
}

#[cfg(test)]
mod tests;
