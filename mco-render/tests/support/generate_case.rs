// Shared by the custom-resource corpus tests, included with `#[path]`: a case's generation
// input.
#![allow(dead_code)]

use mco_render::api::CustomResource;
use mco_render::controllers::generate::{FeatureGates, GenerateInput};
use serde_json::Value;

/// The strings of a JSON array (none when it is not one).
pub fn strings(v: &Value) -> Vec<String> {
    mco_render::api::value_at::strings_at(v, "")
}

/// Objects of a case decoded into their model types.
pub fn typed<T: serde::de::DeserializeOwned>(objects: Vec<Value>) -> Vec<T> {
    objects
        .into_iter()
        .map(|o| serde_json::from_value(o).expect("object of the case"))
        .collect()
}

/// A KubeletConfig or ContainerRuntimeConfig of a case.
pub fn resource(v: Value) -> CustomResource {
    CustomResource::from_json(v)
        .expect("a KubeletConfig or ContainerRuntimeConfig")
        .expect("resource of the case")
}

/// The array at `key` of a case (empty when absent or null).
pub fn list(case: &Value, key: &str) -> Vec<Value> {
    case.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The value at `key` of a case, unless absent or null.
pub fn opt(case: &Value, key: &str) -> Option<Value> {
    case.get(key).filter(|v| !v.is_null()).cloned()
}

/// The case's pools: `pools`, or the one `pool`.
pub fn pools(case: &Value) -> Vec<Value> {
    match opt(case, "pool") {
        Some(p) => vec![p],
        None => list(case, "pools"),
    }
}

/// The case's feature gates (`featureGates.enabled` and `.disabled`).
pub fn feature_gates(case: &Value) -> FeatureGates {
    FeatureGates {
        enabled: strings(&case["featureGates"]["enabled"]),
        disabled: strings(&case["featureGates"]["disabled"]),
    }
}

/// The generation input of a KubeletConfig or ContainerRuntimeConfig case, stamped with this
/// build's controller version, generating as the newest release.
pub fn input_of(case: &Value) -> GenerateInput {
    GenerateInput {
        object: resource(case["object"].clone()),
        other_objects: list(case, "otherObjects")
            .into_iter()
            .map(resource)
            .collect(),
        existing_machine_configs: typed(list(case, "existingMachineConfigs")),
        pools: typed(pools(case)),
        base_machine_configs: typed(list(case, "baseMachineConfigs")),
        feature_gates: feature_gates(case),
        api_server: opt(case, "apiServer"),
        node_config: opt(case, "nodeConfig"),
        controller_version: mco_render::CONTROLLER_VERSION.to_string(),
        ..GenerateInput::default()
    }
}
