//! Names of generated MachineConfigs: `99-<pool>-generated-<kind>[-N]`.
//!
//! Each KubeletConfig (or ContainerRuntimeConfig) that selects a pool gets its own
//! MachineConfig. The first one takes the plain name; later ones take the next free suffix
//! `-N` (at most 9), remembered on the resource in the
//! `machineconfiguration.openshift.io/mc-name-suffix` annotation. A resource created
//! before the newest one that has no annotation yet recovers its name from its finalizers.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{matches_pool, Cluster, GenError, Resource};
use crate::gocompat::quote::go_quote;

/// The annotation that records a resource's MachineConfig name suffix.
pub const MC_NAME_SUFFIX_ANNOTATION: &str = "machineconfiguration.openshift.io/mc-name-suffix";

/// The largest suffix a generated MachineConfig name may carry.
const MAX_SUFFIX: i64 = 9;

/// Which controller a name is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// KubeletConfig: `99-<pool>-generated-kubelet`.
    Kubelet,
    /// ContainerRuntimeConfig: `99-<pool>-generated-containerruntime`.
    ContainerRuntime,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Kubelet => "kubelet",
            Kind::ContainerRuntime => "containerruntime",
        }
    }

    fn limit_message(self) -> &'static str {
        match self {
            Kind::Kubelet => "max number of supported kubelet config (10) has been reached. Please delete old kubelet configs before retrying",
            Kind::ContainerRuntime => "max number of supported ctrcfgs (10) has been reached. Please delete old ctrcfgs before retrying",
        }
    }
}

/// The plain generated name for a pool.
pub fn base_name(kind: Kind, pool: &str) -> String {
    format!("99-{pool}-generated-{}", kind.word())
}

/// The name older releases used, with the pool's UID.
fn deprecated_name(kind: Kind, pool: &str, pool_uid: &str) -> String {
    match kind {
        Kind::Kubelet => format!("99-{pool}-{pool_uid}-kubelet"),
        Kind::ContainerRuntime => format!("99-{pool}-{pool_uid}-containerruntime"),
    }
}

/// Go's `strconv.Atoi`, with its error text.
fn go_atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", go_quote(s)))
}

/// Whether `strconv.Atoi` accepts the text.
fn atoi(s: &str) -> Option<i64> {
    go_atoi(s).ok()
}

/// The plain name, moving a MachineConfig with the deprecated name to it first when one
/// exists (upstream's `GetManagedKey`).
fn plain_name(
    kind: Kind,
    pool: &str,
    pool_uid: &str,
    cluster: &mut Cluster,
    with_client: bool,
) -> String {
    let key = base_name(kind, pool);
    if !with_client || cluster.machine_configs.contains_key(&key) {
        return key;
    }
    let old = deprecated_name(kind, pool, pool_uid);
    if let Some(old_mc) = cluster.machine_configs.get(&old).cloned() {
        let config = old_mc
            .pointer("/spec/config")
            .cloned()
            .unwrap_or(Value::Null);
        let mc = super::new_machine_config(pool, &key, config);
        cluster.machine_configs.insert(key.clone(), mc.clone());
        cluster.actions.push(super::Action::Write(false, mc));
        cluster.machine_configs.remove(&old);
        cluster.actions.push(super::Action::Delete(old));
    }
    key
}

/// The MachineConfig name for `cfg` on `pool` (upstream's `getManagedKubeletConfigKey` and
/// `getManagedKeyCtrCfg`). `all` are all resources of the kind in the cluster, `cfg`
/// included.
pub(crate) fn managed_key(
    kind: Kind,
    pool: &super::Pool,
    all: &[Resource],
    cfg: &Resource,
    cluster: &mut Cluster,
) -> Result<String, GenError> {
    if all.is_empty() {
        return Ok(plain_name(kind, &pool.name, &pool.uid, cluster, true));
    }
    let mut selecting: Vec<&Resource> = Vec::new();
    for r in all {
        if matches_pool(r.selector.as_ref(), &pool.labels)? {
            selecting.push(r);
        }
    }
    if let Some(own) = selecting.iter().find(|r| r.name == cfg.name) {
        if let Some(val) = own.annotations.get(MC_NAME_SUFFIX_ANNOTATION) {
            if !val.is_empty() {
                return Ok(format!("{}-{val}", base_name(kind, &pool.name)));
            }
            return Ok(plain_name(kind, &pool.name, &pool.uid, cluster, true));
        }
    }
    if selecting.len() == 1 {
        return Ok(plain_name(kind, &pool.name, &pool.uid, cluster, true));
    }
    let newer_exists = selecting
        .iter()
        .any(|r| r.creation_timestamp > cfg.creation_timestamp);
    if newer_exists {
        let prefix = base_name(kind, &pool.name);
        let mut best: Option<(i64, &String)> = None;
        for f in &cfg.finalizers {
            if !cluster.machine_configs.contains_key(f) || !f.starts_with(&prefix) {
                continue;
            }
            let last = f.rsplit('-').next().unwrap_or("");
            let suffix = match atoi(last) {
                Some(n) => n,
                None if *f == prefix => 0,
                None => continue,
            };
            let better = match best {
                Some((b, _)) => suffix > b,
                None => true,
            };
            if better {
                best = Some((suffix, f));
            }
        }
        if let Some((_, f)) = best {
            return Ok(f.clone());
        }
    }
    let mut max = 0;
    for r in &selecting {
        if let Some(val) = r.annotations.get(MC_NAME_SUFFIX_ANNOTATION) {
            if !val.is_empty() {
                let n = go_atoi(val)
                    .map_err(|e| GenError::Plain(format!("error converting {val} to int: {e}")))?;
                max = max.max(n);
            }
        }
    }
    if max + 1 > MAX_SUFFIX {
        return Err(GenError::Plain(kind.limit_message().to_string()));
    }
    Ok(format!("{}-{}", base_name(kind, &pool.name), max + 1))
}

/// The annotations a resource has after the controller records its suffix: when it had no
/// suffix annotation, all its annotations are replaced by that one annotation.
pub(crate) fn annotations_after(
    managed_key: &str,
    current: &BTreeMap<String, String>,
) -> Option<BTreeMap<String, String>> {
    if current.contains_key(MC_NAME_SUFFIX_ANNOTATION) {
        return None;
    }
    let parts: Vec<&str> = managed_key.split('-').collect();
    let last = parts.last().copied().unwrap_or("");
    let mut result = None;
    if atoi(last).is_none() {
        result = Some(BTreeMap::from([(
            MC_NAME_SUFFIX_ANNOTATION.to_string(),
            String::new(),
        )]));
    }
    if parts.len() > 4 && atoi(last).is_some() {
        result = Some(BTreeMap::from([(
            MC_NAME_SUFFIX_ANNOTATION.to_string(),
            last.to_string(),
        )]));
    }
    result
}
