//! The MachineConfiguration `cluster` (`operator.openshift.io/v1`), as upstream's operator
//! keeps it (its `syncMachineConfiguration`, since 4.16): created with `managementState:
//! Managed` when absent, and its status written: `nodeDisruptionPolicyStatus.clusterPolicies`
//! (the built-in node disruption policies merged with the spec's) and `observedGeneration`,
//! the rest of the status (conditions other controllers write) kept. Its
//! `spec.operatorLogLevel` sets the components' verbosity ([`verbosity`]).

use serde_json::{json, Value};

use crate::plan::policy::{merge_cluster_policies, MachineConfiguration};

/// The one MachineConfiguration read.
pub const NAME: &str = "cluster";

/// What to write.
#[derive(Debug, Clone, PartialEq)]
pub enum MachineConfigurationWrite {
    /// Create the object (none exists).
    Create(Value),
    /// Replace the status with this one.
    Status(Value),
}

/// The MachineConfiguration created when there is none.
pub fn initial() -> Value {
    json!({
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": {"name": NAME},
        "spec": {"managementState": "Managed"}
    })
}

/// The write the MachineConfiguration `stored` (`None`: absent) needs, if any. A spec that does
/// not decode is taken as one with no user policies.
pub fn sync_machine_configuration(stored: Option<&Value>) -> Option<MachineConfigurationWrite> {
    let Some(stored) = stored else {
        return Some(MachineConfigurationWrite::Create(initial()));
    };
    let spec: MachineConfiguration = serde_json::from_value(json!({
        "spec": stored.get("spec").cloned().unwrap_or(Value::Null)
    }))
    .unwrap_or_default();
    let merged = merge_cluster_policies(&spec.spec.node_disruption_policy);
    let before = stored.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut status = match &before {
        Value::Object(_) => before.clone(),
        _ => json!({}),
    };
    status["nodeDisruptionPolicyStatus"] = json!({
        "clusterPolicies": serde_json::to_value(&merged).unwrap_or(Value::Null)
    });
    match stored
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
    {
        Some(g) if g != 0 => status["observedGeneration"] = json!(g),
        _ => {
            if let Some(o) = status.as_object_mut() {
                o.remove("observedGeneration");
            }
        }
    }
    (status != before).then_some(MachineConfigurationWrite::Status(status))
}

/// `spec.operatorLogLevel` as a klog verbosity, as upstream maps it (`Normal` 2, `Debug` 4,
/// `Trace` 6, `TraceAll` 8; anything else, the default, 2).
pub fn verbosity(log_level: &str) -> u8 {
    match log_level {
        "Debug" => 4,
        "Trace" => 6,
        "TraceAll" => 8,
        _ => 2,
    }
}

/// The MachineConfiguration's `spec.operatorLogLevel` (`Normal` when absent).
pub fn operator_log_level(stored: Option<&Value>) -> &str {
    stored
        .and_then(|v| v.pointer("/spec/operatorLogLevel"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("Normal")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_object_is_created_managed() {
        assert_eq!(
            sync_machine_configuration(None),
            Some(MachineConfigurationWrite::Create(initial()))
        );
        assert_eq!(initial()["spec"]["managementState"], "Managed");
    }

    #[test]
    fn the_status_merges_the_policies_and_keeps_the_conditions() {
        let stored = json!({
            "metadata": {"name": "cluster", "generation": 3},
            "spec": {"nodeDisruptionPolicy": {"files": [
                {"path": "/etc/motd", "actions": [{"type": "None"}]}]}},
            "status": {"conditions": [{"type": "BootImageUpdateDegraded", "status": "False"}]}
        });
        let Some(MachineConfigurationWrite::Status(s)) = sync_machine_configuration(Some(&stored))
        else {
            panic!("a status write");
        };
        assert_eq!(s["observedGeneration"], 3);
        assert_eq!(s["conditions"][0]["type"], "BootImageUpdateDegraded");
        let files = s["nodeDisruptionPolicyStatus"]["clusterPolicies"]["files"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(files.iter().any(|f| f["path"] == "/etc/motd"));
        assert!(files
            .iter()
            .any(|f| f["path"] == "/etc/containers/registries.conf"));
        // Written once: the next pass has nothing to do.
        let mut again = stored.clone();
        again["status"] = s;
        assert_eq!(sync_machine_configuration(Some(&again)), None);
    }

    #[test]
    fn log_levels_map_as_upstream() {
        assert_eq!(
            ["Normal", "Debug", "Trace", "TraceAll", "", "Loud"].map(verbosity),
            [2, 4, 6, 8, 2, 2]
        );
        assert_eq!(operator_log_level(None), "Normal");
        let mc = json!({"spec": {"operatorLogLevel": "Debug"}});
        assert_eq!(verbosity(operator_log_level(Some(&mc))), 4);
    }
}
