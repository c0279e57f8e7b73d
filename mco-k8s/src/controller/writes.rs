//! Shared helpers for the controllers that keep MachineConfigs equal to what a pure function
//! gives: reading optional cluster-wide objects, comparing objects as the server stores them,
//! and create-or-update writes that are skipped when nothing would change.

use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::Api;
use serde_json::{Map, Value};

/// Why a controller's pass stopped early; the next pass retries.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The API server refused or failed a request.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// An object did not encode or decode.
    #[error("encoding {name}: {source}")]
    Json {
        /// The object's name.
        name: String,
        /// The error.
        source: serde_json::Error,
    },
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

/// The object named `name` as JSON, or `None` when it or its API does not exist.
pub async fn get_optional(
    api: &Api<DynamicObject>,
    name: &str,
) -> Result<Option<Value>, WriteError> {
    match api.get(name).await {
        Ok(o) => Ok(Some(to_json(&o)?)),
        Err(e) if is_absent(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Every object of `api` as JSON, with `apiVersion` and `kind` filled in (lists may omit them).
pub async fn list_json(
    api: &Api<DynamicObject>,
    ar: &ApiResource,
) -> Result<Vec<Value>, WriteError> {
    let mut out = Vec::new();
    for o in api.list(&Default::default()).await? {
        let mut v = to_json(&o)?;
        v["apiVersion"] = Value::String(ar.api_version.clone());
        v["kind"] = Value::String(ar.kind.clone());
        out.push(v);
    }
    Ok(out)
}

/// An object as JSON.
pub fn to_json<T: serde::Serialize + kube::ResourceExt>(o: &T) -> Result<Value, WriteError> {
    serde_json::to_value(o).map_err(|source| WriteError::Json {
        name: o.name_any(),
        source,
    })
}

/// The object's name.
pub fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Metadata the API server sets, left out when comparing what a controller wants with what
/// is stored.
const SERVER_SET: [&str; 6] = [
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
];

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

/// An object reduced to what a controller decides: no server-set metadata, no nulls, no
/// empty metadata maps.
pub fn comparable(v: &Value) -> Value {
    let mut v = without_nulls(v);
    if let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in SERVER_SET {
            md.remove(k);
        }
        md.retain(|_, v| !matches!(v, Value::Object(m) if m.is_empty()));
        md.retain(|_, v| !matches!(v, Value::Array(a) if a.is_empty()));
    }
    if let Some(m) = v.as_object_mut() {
        m.remove("status");
    }
    v
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
    api: &Api<DynamicObject>,
    ar: &ApiResource,
    current: Option<&Value>,
    want: &Value,
) -> Result<Written, WriteError> {
    let name = name_of(want).to_string();
    let mut body = want.clone();
    body["apiVersion"] = Value::String(ar.api_version.clone());
    body["kind"] = Value::String(ar.kind.clone());
    if let Some(cur) = current {
        if comparable(cur) == comparable(&body) {
            return Ok(Written::Unchanged);
        }
    }
    let md = body
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| WriteError::Json {
            name: name.clone(),
            source: serde::de::Error::custom("no metadata"),
        })?;
    for k in ["uid", "creationTimestamp", "generation", "managedFields"] {
        md.remove(k);
    }
    match current {
        Some(cur) => {
            let rv = cur
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null);
            md.insert("resourceVersion".into(), rv);
        }
        None => {
            md.remove("resourceVersion");
        }
    }
    let obj: DynamicObject = serde_json::from_value(body).map_err(|source| WriteError::Json {
        name: name.clone(),
        source,
    })?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comparable_ignores_server_fields_and_nulls() {
        let a = json!({"metadata": {"name": "x", "uid": "1", "resourceVersion": "5",
            "annotations": {}}, "spec": {"a": null, "b": 1}, "status": {}});
        let b = json!({"metadata": {"name": "x"}, "spec": {"b": 1}});
        assert_eq!(comparable(&a), comparable(&b));
        let c = json!({"metadata": {"name": "x"}, "spec": {"b": 2}});
        assert_ne!(comparable(&a), comparable(&c));
    }

    #[test]
    fn map_patch_nulls_removed_keys() {
        let from = [("a".to_string(), "1".to_string()), ("b".into(), "2".into())].into();
        let to = [("b".to_string(), "3".to_string())].into();
        assert_eq!(map_patch(&from, &to), json!({"a": null, "b": "3"}));
    }
}
