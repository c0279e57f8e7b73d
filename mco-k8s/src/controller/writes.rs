//! Shared helpers for the controllers that keep MachineConfigs equal to what a pure function
//! gives: the `config.openshift.io` resources they read, comparing
//! MachineConfigs as the server stores them, and create-or-update writes that are skipped
//! when nothing would change.

use crate::objects::{Model, Stored};
use kube::api::{ApiResource, DeleteParams, PostParams};
use kube::Api;
use mco_render::api::MachineConfig;
use serde_json::{Map, Value};

/// Why a controller's pass stopped early; the next pass retries.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The API server refused or failed a request.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// The `config.openshift.io/v1` resource with this kind and plural.
pub fn config_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "config.openshift.io".into(),
        version: "v1".into(),
        api_version: "config.openshift.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Whether an error means the resource or its API is absent.
pub fn is_absent(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// Whether an error is a write conflict (stale resourceVersion or a name already taken).
pub fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

/// Drops null members, recursively: a server does not keep them for most fields.
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// A MachineConfig reduced to what a controller decides: no type fields, no server-set
/// metadata, no nulls in the Ignition config.
pub fn comparable(mc: &MachineConfig) -> MachineConfig {
    let mut m = mc.clone();
    m.api_version.clear();
    m.kind.clear();
    let md = &mut m.metadata;
    md.uid = None;
    md.resource_version = None;
    md.generation = None;
    md.creation_timestamp = None;
    m.spec.config = m.spec.config.as_ref().map(without_nulls);
    m
}

/// What happened to one MachineConfig.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Already as wanted.
    Unchanged,
    /// Created.
    Created,
    /// Replaced.
    Updated,
    /// Someone else wrote it first; the next pass retries.
    Conflict,
}

/// Makes the stored MachineConfig equal to `want` (as [`comparable`] sees them): creates it
/// when `current` is `None`, replaces it (with `current`'s resourceVersion) when it differs,
/// and does nothing otherwise.
pub async fn ensure(
    api: &Api<Stored<MachineConfig>>,
    current: Option<&MachineConfig>,
    want: &MachineConfig,
) -> Result<Written, WriteError> {
    if let Some(cur) = current {
        if comparable(cur) == comparable(want) {
            return Ok(Written::Unchanged);
        }
    }
    let mut body = want.clone();
    let md = &mut body.metadata;
    md.uid = None;
    md.creation_timestamp = None;
    md.generation = None;
    md.resource_version = current.and_then(|c| c.metadata.resource_version.clone());
    let name = body.name().to_string();
    let obj = body.into_object();
    let pp = PostParams::default();
    let res = match current {
        Some(_) => api
            .replace(&name, &pp, &obj)
            .await
            .map(|_| Written::Updated),
        None => api.create(&pp, &obj).await.map(|_| Written::Created),
    };
    match res {
        Ok(w) => Ok(w),
        Err(e) if is_conflict(&e) || is_absent(&e) => Ok(Written::Conflict),
        Err(e) => Err(e.into()),
    }
}

/// A JSON merge patch turning the string map `from` into `to` (removed keys become null).
pub fn map_patch(
    from: &std::collections::BTreeMap<String, String>,
    to: &std::collections::BTreeMap<String, String>,
) -> Value {
    let mut m = Map::new();
    for k in from.keys().filter(|k| !to.contains_key(*k)) {
        m.insert(k.clone(), Value::Null);
    }
    for (k, v) in to {
        if from.get(k) != Some(v) {
            m.insert(k.clone(), Value::String(v.clone()));
        }
    }
    Value::Object(m)
}

/// Deletes the MachineConfig `name`; one already gone counts as deleted.
pub async fn delete_machine_config(
    mcs: &Api<Stored<MachineConfig>>,
    name: &str,
) -> Result<(), WriteError> {
    match mcs.delete(name, &DeleteParams::default()).await {
        Ok(_) => {
            tracing::info!("deleted {name}");
            Ok(())
        }
        Err(e) if is_absent(&e) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comparable_ignores_server_fields_and_nulls() {
        let mut a = MachineConfig::default();
        a.metadata.name = "x".into();
        a.metadata.uid = Some("1".into());
        a.metadata.resource_version = Some("5".into());
        a.spec.config = Some(json!({"a": null, "b": 1}));
        let mut b = MachineConfig::default();
        b.metadata.name = "x".into();
        b.spec.config = Some(json!({"b": 1}));
        assert_eq!(comparable(&a), comparable(&b));
        b.spec.config = Some(json!({"b": 2}));
        assert_ne!(comparable(&a), comparable(&b));
    }

    #[test]
    fn map_patch_nulls_removed_keys() {
        let from = [("a".to_string(), "1".to_string()), ("b".into(), "2".into())].into();
        let to = [("b".to_string(), "3".to_string())].into();
        assert_eq!(map_patch(&from, &to), json!({"a": null, "b": "3"}));
    }
}
