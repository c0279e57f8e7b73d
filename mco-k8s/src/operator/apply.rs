//! Applying one object: create it when missing, merge-patch it when a field it sets differs,
//! leave it alone otherwise. Fields the desired object does not set are never touched.

use super::kinds::kind_info;
use super::OperatorError;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mco_render::api::value_at::str_at;
use mco_render::controllers::operator::NAMESPACE;
use serde_json::Value;

/// The merge patch that sets `want`'s fields on `live`. JSON merge patches replace arrays
/// whole, so an array is sent as `want`'s elements each laid over the live element it
/// matches (same `name`, else same position): fields others set inside list items (an env
/// added to a container, defaults the server filled) survive.
pub fn patch_for(live: &Value, want: &Value) -> Value {
    match (live, want) {
        (Value::Object(l), Value::Object(w)) => Value::Object(
            w.iter()
                .map(|(k, wv)| {
                    let v = match l.get(k) {
                        Some(lv) => patch_for(lv, wv),
                        None => wv.clone(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        (Value::Array(l), Value::Array(w)) => Value::Array(
            w.iter()
                .enumerate()
                .map(|(i, wv)| {
                    let by_name = wv
                        .get("name")
                        .and_then(|n| l.iter().find(|lv| lv.get("name") == Some(n)));
                    let same_place = l
                        .get(i)
                        .filter(|lv| wv.get("name").is_none() || lv.get("name") == wv.get("name"));
                    match by_name.or(same_place) {
                        Some(lv) => overlay(lv, wv),
                        None => wv.clone(),
                    }
                })
                .collect(),
        ),
        (_, w) => w.clone(),
    }
}

/// `want` laid over `live`: objects keep `live`'s other keys, recursively.
fn overlay(live: &Value, want: &Value) -> Value {
    match (live, want) {
        (Value::Object(l), Value::Object(w)) => {
            let mut out = l.clone();
            for (k, wv) in w {
                let v = match l.get(k) {
                    Some(lv) => overlay(lv, wv),
                    None => wv.clone(),
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        (Value::Array(_), Value::Array(_)) => patch_for(live, want),
        (_, w) => w.clone(),
    }
}

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
    let mut patch = patch_for(&live, &want);
    // Fail (and retry on the next pass) rather than overwrite a change made meanwhile.
    if let Some(rv) = live.pointer("/metadata/resourceVersion") {
        patch["metadata"]["resourceVersion"] = rv.clone();
    }
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
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

    #[test]
    fn patch_keeps_foreign_fields_in_list_items() {
        let live = json!({"spec": {"containers": [
            {"name": "a", "image": "old", "env": [{"name": "X"}]},
            {"name": "b", "image": "b"}]}, "other": 1});
        let want = json!({"spec": {"containers": [
            {"name": "b", "image": "b"},
            {"name": "a", "image": "new"}]}});
        let p = patch_for(&live, &want);
        assert_eq!(
            p,
            json!({"spec": {"containers": [
            {"name": "b", "image": "b"},
            {"name": "a", "image": "new", "env": [{"name": "X"}]}]}})
        );
        let mut merged = live.clone();
        if let (Some(l), Some(p)) = (merged.as_object_mut(), p.as_object()) {
            for (k, v) in p {
                l.insert(k.clone(), v.clone());
            }
        }
        assert!(contains(&merged, &want));
    }
}
