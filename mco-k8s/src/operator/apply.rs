//! Applying one object: create it when missing, merge-patch it when a field it sets differs,
//! leave it alone otherwise. Fields the desired object does not set are never touched.

use super::kinds::kind_info;
use super::OperatorError;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mco_render::operator::NAMESPACE;
use serde_json::Value;

/// What applying an object did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// It did not exist and was created.
    Created,
    /// A field differed and was patched.
    Patched,
    /// It already matched.
    Unchanged,
}

/// Whether every field `want` sets has the same value in `live`. Objects may hold more keys
/// (defaults, fields others own); arrays must have the same length, element by element.
pub fn contains(live: &Value, want: &Value) -> bool {
    match (live, want) {
        (Value::Object(l), Value::Object(w)) => w.iter().all(|(k, wv)| match l.get(k) {
            Some(lv) => contains(lv, wv),
            None => wv.is_null(),
        }),
        (Value::Array(l), Value::Array(w)) => {
            l.len() == w.len() && l.iter().zip(w).all(|(lv, wv)| contains(lv, wv))
        }
        (l, w) => l == w,
    }
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
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

/// Applies one desired object.
pub async fn apply(client: &Client, desired: &Value) -> Result<Applied, OperatorError> {
    let (api, ns) = api_for(client, desired)?;
    let name = str_at(desired, "/metadata/name").to_string();
    let mut want = desired.clone();
    if let Some(m) = want.as_object_mut() {
        m.remove("status");
    }
    if !ns.is_empty() {
        want["metadata"]["namespace"] = Value::String(ns);
    }
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
    if contains(&live, &want) {
        return Ok(Applied::Unchanged);
    }
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&want))
        .await?;
    Ok(Applied::Patched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn contains_ignores_extra_fields_but_not_changed_ones() {
        let live = json!({"a": 1, "b": {"c": [ {"x": 1, "d": "default"} ], "e": "x"}, "z": true});
        assert!(contains(&live, &json!({"a": 1, "b": {"c": [{"x": 1}]}})));
        assert!(contains(&live, &json!({"gone": null})));
        assert!(!contains(&live, &json!({"a": 2})));
        assert!(!contains(&live, &json!({"b": {"c": [{"x": 1}, {"x": 2}]}})));
        assert!(!contains(&live, &json!({"new": "v"})));
    }
}
