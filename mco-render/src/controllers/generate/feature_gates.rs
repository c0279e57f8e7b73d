//! The feature-gate MachineConfig `98-<pool>-generated-kubelet` (upstream's
//! `syncFeatureHandler`): the role template's `kubelet.conf` with every gate of the FeatureGate
//! status set, and for the pool named `worker` the Node's latency profile.

use serde_json::Value;

use super::cluster_config::{
    sorted_pools, with_config, ClusterConfigInput, ConfigError, ConfigOutcome, ObjectRef, Store,
};
use super::kubelet::{
    apply_node_config, encode_kubelet_conf, original_kubelet_config, KUBELET_CONF_PATH,
};
use super::{ign_config, ign_file, template_role, FeatureGates, Pool};
use crate::gocompat::gostruct::GoVal;
use crate::release::Profile;

/// The kubelet configuration of a pool's role with the cluster's feature gates.
pub(crate) fn original_with_gates(
    base_machine_configs: &[Value],
    gates: &FeatureGates,
    pool: &Pool,
    release: &Profile,
) -> Result<GoVal, String> {
    original_kubelet_config(
        gates,
        base_machine_configs,
        template_role(&pool.name),
        release,
    )
}

/// The Ignition config holding one `kubelet.conf`, as `release` writes it.
pub(crate) fn kubelet_ignition(kc: &GoVal, release: &Profile) -> Value {
    ign_config(
        vec![ign_file(
            KUBELET_CONF_PATH,
            encode_kubelet_conf(kc, release).as_bytes(),
        )],
        release,
    )
}

/// The 98 MachineConfigs of every pool, written into `store`, then the clean-up of stale
/// ones. A missing Node counts as one without settings.
pub(crate) fn sync_into(input: &ClusterConfigInput, store: &mut Store) -> Result<(), ConfigError> {
    let release = input.release.profile();
    let version = input.controller_version.as_str();
    for pool in sorted_pools(&input.pools) {
        let deprecated = format!("98-{}-{}-kubelet", pool.name, pool.uid);
        let key = store.managed_key(&pool, "98", "kubelet", &deprecated);
        let mut kc = original_with_gates(
            &input.base_machine_configs,
            &input.feature_gates,
            &pool,
            &release,
        )
        .map_err(|e| ConfigError {
            message: e,
            objects: vec![ObjectRef::new("FeatureGate", "cluster")],
        })?;
        if pool.name == "worker" {
            apply_node_config(input.node.as_ref(), &mut kc);
        }
        let existing = store.mcs.get(&key).cloned();
        let mc = with_config(
            existing.as_ref(),
            &pool.name,
            &key,
            kubelet_ignition(&kc, &release),
            version,
        );
        store.put(mc);
    }
    store.clean_up_kubelet("98", version);
    Ok(())
}

/// One pass of upstream's `syncFeatureHandler`.
pub fn sync(input: &ClusterConfigInput) -> ConfigOutcome {
    let mut store = Store::new(&input.existing_machine_configs);
    let err = sync_into(input, &mut store).err();
    store.finish(err)
}
