//! Which `irreconcilableValidationOverrides` of the MachineConfiguration `cluster`
//! (`operator.openshift.io/v1`) the render controller honours.
//!
//! Upstream reads `spec.irreconcilableValidationOverrides` since 4.20, behind the
//! `IrreconcilableMachineConfig` feature gate: TechPreview and DevPreview in 4.20 to 4.22, on
//! by default from 4.23. An override lets a change to `storage.disks`, `storage.filesystems`
//! or `storage.raid` render (only nodes provisioned afterwards get it; the others report the
//! difference on their MachineConfigNode, [`crate::plan::irreconcilable_report`]).
//!
//! The overrides are in force when the cluster's FeatureGate `cluster` enables the gate, or
//! when the cluster has no FeatureGate (no gate to keep them off, as in the releases that
//! enable it by default).

use serde_json::Value;

use super::generate::sequence::feature_gates_from_status;
use super::generate::FeatureGates;
use crate::plan::policy::MachineConfiguration;
use crate::plan::reconcile::StorageOverride;

/// The feature gate that turns the overrides on.
pub const IRRECONCILABLE_GATE: &str = "IrreconcilableMachineConfig";

/// The name of the one MachineConfiguration the MCO reads.
pub const CLUSTER: &str = "cluster";

/// The storage sections exempt from the render controller's reconcilability check: those
/// `machine_configuration` lists, when `gates` (the FeatureGate `cluster`'s resolved gates,
/// `None` without one) let them count.
pub fn validation_overrides(
    machine_configuration: Option<&MachineConfiguration>,
    gates: Option<&FeatureGates>,
) -> Vec<StorageOverride> {
    if gates.is_some_and(|g| !g.is_enabled(IRRECONCILABLE_GATE)) {
        return Vec::new();
    }
    let mut out: Vec<StorageOverride> = Vec::new();
    for s in machine_configuration
        .map(|m| {
            m.spec
                .irreconcilable_validation_overrides
                .storage
                .as_slice()
        })
        .unwrap_or_default()
    {
        if !out.contains(s) {
            out.push(*s);
        }
    }
    out
}

/// [`validation_overrides`] from raw objects (a dump or a folder of manifests): the
/// MachineConfiguration `cluster` and the FeatureGate `cluster` among them. A
/// MachineConfiguration that does not decode is taken as absent.
pub fn validation_overrides_in<'a>(
    objects: impl IntoIterator<Item = &'a Value>,
) -> Vec<StorageOverride> {
    let mut machine_configuration = None;
    let mut gates = None;
    for v in objects {
        if v.pointer("/metadata/name").and_then(Value::as_str) != Some(CLUSTER) {
            continue;
        }
        match v.get("kind").and_then(Value::as_str) {
            Some("MachineConfiguration") => {
                machine_configuration =
                    serde_json::from_value::<MachineConfiguration>(v.clone()).ok();
            }
            Some("FeatureGate") => gates = Some(feature_gates_from_status(v)),
            _ => {}
        }
    }
    validation_overrides(machine_configuration.as_ref(), gates.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn machine_configuration(storage: &[&str]) -> Value {
        json!({
            "apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
            "metadata": {"name": "cluster"},
            "spec": {"irreconcilableValidationOverrides": {"storage": storage}}
        })
    }

    fn feature_gate(enabled: &[&str], disabled: &[&str]) -> Value {
        let names = |l: &[&str]| l.iter().map(|n| json!({"name": n})).collect::<Vec<_>>();
        json!({
            "apiVersion": "config.openshift.io/v1", "kind": "FeatureGate",
            "metadata": {"name": "cluster"},
            "status": {"featureGates": [{"version": "4.22.0", "enabled": names(enabled), "disabled": names(disabled)}]}
        })
    }

    #[test]
    fn without_a_feature_gate_the_overrides_count() {
        let mc = machine_configuration(&["Disks", "Raid", "Disks"]);
        assert_eq!(
            validation_overrides_in([&mc]),
            vec![StorageOverride::Disks, StorageOverride::Raid]
        );
    }

    #[test]
    fn the_gate_decides_when_a_feature_gate_exists() {
        let mc = machine_configuration(&["FileSystems"]);
        let off = feature_gate(&[], &[IRRECONCILABLE_GATE]);
        assert!(validation_overrides_in([&mc, &off]).is_empty());
        let on = feature_gate(&[IRRECONCILABLE_GATE], &[]);
        assert_eq!(
            validation_overrides_in([&on, &mc]),
            vec![StorageOverride::FileSystems]
        );
    }

    #[test]
    fn other_names_and_bad_values_are_ignored() {
        let mut other = machine_configuration(&["Disks"]);
        other["metadata"]["name"] = json!("other");
        assert!(validation_overrides_in([&other]).is_empty());
        let bad = machine_configuration(&["Partitions"]);
        assert!(validation_overrides_in([&bad]).is_empty());
        assert!(validation_overrides(None, None).is_empty());
    }
}
