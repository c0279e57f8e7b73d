//! The render controller's view of the cluster's `irreconcilableValidationOverrides`: the
//! MachineConfiguration `cluster` (`operator.openshift.io/v1`) and the FeatureGate `cluster`
//! whose `IrreconcilableMachineConfig` gate lets them count
//! ([`mco_render::controllers::validation_overrides`] decides).

use super::writes::config_resource;
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::runtime::reflector::Store;
use kube::{Api, Client};
use mco_render::controllers::validation_overrides::{validation_overrides_in, CLUSTER};
use mco_render::plan::reconcile::StorageOverride;

/// The MachineConfiguration resource.
pub fn machine_configuration_resource() -> ApiResource {
    crate::webhook::cache::machine_configuration_resource()
}

/// The FeatureGate resource.
pub fn feature_gate_resource() -> ApiResource {
    config_resource("FeatureGate", "featuregates")
}

/// The overrides in force given the objects the two stores hold.
pub fn from_stores(
    machine_configurations: &Store<DynamicObject>,
    feature_gates: &Store<DynamicObject>,
) -> Vec<StorageOverride> {
    let values: Vec<serde_json::Value> = machine_configurations
        .state()
        .iter()
        .chain(feature_gates.state().iter())
        .filter_map(|o| serde_json::to_value(o.as_ref()).ok())
        .collect();
    validation_overrides_in(&values)
}

/// The overrides in force as listed now (a kind the server does not serve is absent).
pub async fn list(client: &Client) -> Result<Vec<StorageOverride>, kube::Error> {
    let mut values = Vec::new();
    for ar in [machine_configuration_resource(), feature_gate_resource()] {
        let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
        let lp = ListParams::default().fields(&format!("metadata.name={CLUSTER}"));
        for o in super::pool_sync::absent_is_empty(api.list(&lp).await)? {
            values.extend(serde_json::to_value(&o).ok());
        }
    }
    Ok(validation_overrides_in(&values))
}
