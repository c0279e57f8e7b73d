//! Applying one object: create it when missing, otherwise send the merge patch
//! [`mco_render::controllers::operator::update_for`] decides on (only the fields the operator owns for the
//! object's kind: never a pool's spec, never an empty placeholder over a ControllerConfig
//! value), or nothing when those already match.

use super::kinds::kind_info;
use super::OperatorError;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mco_render::api::value_at::str_at;
use mco_render::controllers::operator::{update_for, MergePatch, NAMESPACE};
use serde_json::Value;

/// What applying an object did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// It did not exist and was created.
    Created,
    /// A field the operator owns differed and was patched.
    Patched,
    /// It already matched.
    Unchanged,
}

/// The API for an object's kind and namespace (namespaced objects without one go to the
/// operator's namespace).
pub fn api_for(
    client: &Client,
    obj: &Value,
) -> Result<(Api<DynamicObject>, String), OperatorError> {
    let kind = str_at(obj, "/kind");
    let info = kind_info(kind).ok_or_else(|| OperatorError::UnknownKind(kind.to_string()))?;
    if info.namespaced {
        let ns = match str_at(obj, "/metadata/namespace") {
            "" => NAMESPACE,
            ns => ns,
        };
        Ok((
            Api::namespaced_with(client.clone(), ns, &info.resource),
            ns.to_string(),
        ))
    } else {
        Ok((Api::all_with(client.clone(), &info.resource), String::new()))
    }
}

/// `desired` as it is compared with the live object and written: without its `status`, and in
/// `namespace` when its kind is namespaced.
pub fn to_apply(desired: &Value, namespace: Option<&str>) -> Value {
    let mut want = desired.clone();
    if let Some(m) = want.as_object_mut() {
        m.remove("status");
    }
    if let Some(ns) = namespace {
        want["metadata"]["namespace"] = Value::String(ns.to_string());
    }
    want
}

/// Applies one desired object.
pub async fn apply(client: &Client, desired: &Value) -> Result<Applied, OperatorError> {
    let (api, ns) = api_for(client, desired)?;
    let name = str_at(desired, "/metadata/name").to_string();
    let want = to_apply(desired, (!ns.is_empty()).then_some(ns.as_str()));
    let live = api.get_opt(&name).await?;
    let live = match live {
        Some(l) => serde_json::to_value(&l).map_err(OperatorError::Encode)?,
        None => {
            let obj: DynamicObject =
                serde_json::from_value(want.clone()).map_err(OperatorError::Encode)?;
            match api.create(&PostParams::default(), &obj).await {
                Ok(_) => return Ok(Applied::Created),
                // Created meanwhile by someone else: compare with theirs below.
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    let l = api.get(&name).await?;
                    serde_json::to_value(&l).map_err(OperatorError::Encode)?
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    let Some(MergePatch(patch)) = update_for(&want, &live) else {
        return Ok(Applied::Unchanged);
    };
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(Applied::Patched)
}
