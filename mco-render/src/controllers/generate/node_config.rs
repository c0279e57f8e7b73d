//! The node-config MachineConfig `97-<pool>-generated-kubelet` (upstream's
//! `syncNodeConfigHandler`): the role template's `kubelet.conf` with the feature gates and,
//! for the pool named `worker`, the Node's latency profile; for `master`, `worker` and (from
//! 4.19) `arbiter` the cgroup kernel arguments. The pass ends with the feature-gate sync.

use serde_json::{json, Value};

use super::cluster_config::{
    sorted_pools, with_config, ClusterConfigInput, ConfigError, ConfigOutcome, ObjectRef, Store,
};
use super::feature_gates::{kubelet_ignition, original_with_gates};
use super::kubelet::apply_node_config;
use crate::release::Profile;

/// The error without a Node `cluster`.
pub const MISSING_NODE: &str = "could not fetch Node: missing node configuration, key: cluster";

const CGROUP_V1_ARGS: [&str; 2] = [
    "systemd.unified_cgroup_hierarchy=0",
    "systemd.legacy_systemd_cgroup_controller=1",
];
const CGROUP_V2_ARGS: [&str; 2] = ["systemd.unified_cgroup_hierarchy=1", "cgroup_no_v1=\"all\""];

/// Upstream's check of the worker latency profile: the known profiles (case-sensitive) or
/// none.
pub fn check_latency_profile(profile: &str) -> Result<(), String> {
    match profile {
        "" | "Default" | "MediumUpdateAverageReaction" | "LowUpdateSlowReaction" => Ok(()),
        other => Err(format!(
            "unknown worker latency profile type found {other}, failed to update the original kubelet configuration"
        )),
    }
}

/// Upstream's `updateMachineConfigwithCgroup` of the newest release: the kernel arguments
/// without the cgroup v1 ones, then the v2 ones that are missing. Only `v2` and `""` are
/// accepted.
pub fn cgroup_kernel_arguments(mode: &str, existing: &[String]) -> Result<Vec<String>, String> {
    cgroup_kernel_arguments_as(mode, existing, &Profile::default())
}

/// Upstream's `updateMachineConfigwithCgroup` as `release` runs it: the kernel arguments
/// without those of the other mode, then the missing ones of the Node's mode; cgroup v2 with
/// the release's pressure-stall argument ([`Profile::cgroup_v2_psi`]), v1 only until 4.18.
pub fn cgroup_kernel_arguments_as(
    mode: &str,
    existing: &[String],
    release: &Profile,
) -> Result<Vec<String>, String> {
    let v2: Vec<&str> = CGROUP_V2_ARGS
        .iter()
        .copied()
        .chain(release.cgroup_v2_psi)
        .collect();
    let (add, remove): (Vec<&str>, Vec<&str>) = match mode {
        "v2" | "" => (v2, CGROUP_V1_ARGS.to_vec()),
        "v1" if release.cgroup_v1_accepted => (CGROUP_V1_ARGS.to_vec(), v2),
        _ => {
            return Err(format!(
                "unknown cgroup mode found {mode}, failed to update the machine config resource"
            ))
        }
    };
    let mut out: Vec<String> = existing
        .iter()
        .filter(|a| !remove.contains(&a.as_str()))
        .cloned()
        .collect();
    for arg in add {
        if !out.iter().any(|a| a == arg) {
            out.push(arg.to_string());
        }
    }
    Ok(out)
}

fn node_error(message: String) -> ConfigError {
    ConfigError {
        message,
        objects: vec![ObjectRef::new("Node", "cluster")],
    }
}

fn sync_into(input: &ClusterConfigInput, store: &mut Store) -> Result<(), ConfigError> {
    let Some(node) = &input.node else {
        return Err(node_error(MISSING_NODE.into()));
    };
    let spec_str = |k: &str| {
        node.pointer(&format!("/spec/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let release = input.release.profile();
    let version = input.controller_version.as_str();
    for pool in sorted_pools(&input.pools) {
        let deprecated = format!("97-{}-{}-kubelet", pool.name, pool.uid);
        let key = store.managed_key(&pool, "97", "kubelet", &deprecated);
        let existing = store.mcs.get(&key).cloned();
        let mut kc = original_with_gates(
            &input.base_machine_configs,
            &input.feature_gates,
            &pool,
            &release,
        )
        .map_err(node_error)?;
        if pool.name == "worker" {
            check_latency_profile(spec_str("workerLatencyProfile")).map_err(node_error)?;
            apply_node_config(Some(node), &mut kc);
        }
        let mut mc = with_config(
            existing.as_ref(),
            &pool.name,
            &key,
            kubelet_ignition(&kc, &release),
            version,
        );
        let cgroup_pool = match pool.name.as_str() {
            "master" | "worker" => true,
            "arbiter" => release.cgroup_arbiter,
            _ => false,
        };
        if cgroup_pool {
            let current: Vec<String> = existing
                .as_ref()
                .map(|m| crate::api::value_at::strings_at(m, "/spec/kernelArguments"))
                .unwrap_or_default();
            let args = cgroup_kernel_arguments_as(spec_str("cgroupMode"), &current, &release)
                .map_err(node_error)?;
            mc["spec"]["kernelArguments"] = json!(args);
        }
        store.put(mc);
    }
    store.clean_up_kubelet("97", version);
    if !input.feature_gate_exists {
        return Ok(());
    }
    super::feature_gates::sync_into(input, store).map_err(|e| ConfigError {
        message: format!("could not sync featuregate controller: {}", e.message),
        objects: e.objects,
    })
}

/// One pass of upstream's `syncNodeConfigHandler` (with no KubeletConfigs to resync).
pub fn sync(input: &ClusterConfigInput) -> ConfigOutcome {
    let mut store = Store::new(&input.existing_machine_configs);
    let err = sync_into(input, &mut store).err();
    store.finish(err)
}
