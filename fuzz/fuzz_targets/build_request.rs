//! Arbitrary bytes as the inputs of an on-cluster layering build request: a JSON object with
//! the MachineOSConfig, its MachineConfigPool, the rendered MachineConfig, the ControllerConfig
//! and the Secrets and ConfigMaps of the namespace (`kubeObjects`), as in the layering
//! conformance cases. `controllers::build::build_request` returns every step's objects up to
//! its first error, never panics: without an error every object is there; with one, the steps
//! before it are, and it names its step. The MachineOSBuild's name depends on the inputs only.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_render::api::{ControllerConfig, MachineConfig, MachineConfigPool, MachineOSConfig};
use mco_render::controllers::build::{build_request, RequestInputs};
use serde_json::Value;

fn field<T: serde::de::DeserializeOwned>(v: &Value, key: &str) -> Option<T> {
    serde_json::from_value(v.get(key)?.clone()).ok()
}

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let v = v.get("input").cloned().unwrap_or(v);
    let (Some(mosc), Some(pool), Some(rendered), Some(cc)) = (
        field::<MachineOSConfig>(&v, "machineOSConfig"),
        field::<MachineConfigPool>(&v, "machineConfigPool"),
        field::<MachineConfig>(&v, "renderedMachineConfig"),
        field::<ControllerConfig>(&v, "controllerConfig"),
    ) else {
        return;
    };
    let objects: Vec<Value> = v
        .get("kubeObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let inputs = RequestInputs {
        mosc: &mosc,
        pool: &pool,
        rendered: &rendered,
        rendered_source: v.get("renderedMachineConfig"),
        controller_config: &cc,
        objects: &objects,
    };
    let out = build_request(&inputs);
    match &out.error {
        None => {
            assert!(out.machine_os_build.is_some());
            assert!(out.config_maps.is_some());
            assert!(out.secrets.is_some());
            assert!(out.job.is_some());
        }
        Some(e) => {
            assert!(!e.to_string().is_empty());
            assert!(!e.stage().upstream_name().is_empty());
            assert!(out.job.is_none(), "no Job after an error");
        }
    }
    if out.config_maps.is_some() {
        assert!(out.machine_os_build.is_some());
    }
    let again = build_request(&inputs);
    assert_eq!(
        out.machine_os_build.map(|m| m.metadata.name),
        again.machine_os_build.map(|m| m.metadata.name),
        "the MachineOSBuild's name depends on the inputs only"
    );
});
