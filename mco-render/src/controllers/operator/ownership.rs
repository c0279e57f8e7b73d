//! Which fields of the objects it applies the operator owns, and the merge patch that puts an
//! existing object's owned fields back ([`update_for`]).
//!
//! A missing object is created whole from the desired one. An existing one is only patched
//! where the operator owns a field and the live value differs:
//!
//! - workloads, RBAC, CRDs, namespaces, services, config maps and every other kind
//!   ([`Ownership::Whole`]): every field the desired object sets; fields it does not set
//!   (labels others added, defaults the server filled) are left alone, lists are replaced
//!   by the desired ones, and a webhook's `clientConfig` keeps one of `url` and `service`
//!   (see [`patch_for`]);
//! - MachineConfigPools ([`Ownership::Metadata`]): the labels and annotations the desired
//!   object sets; the spec (selectors, maxUnavailable, paused, the rendered configuration) is
//!   the administrator's and the controller's, as upstream leaves it once the pool exists;
//! - the ControllerConfig ([`Ownership::SpecFields`]): its labels and annotations and the
//!   spec fields the operator derives ([`OWNED_SPEC_FIELDS`]), only where the desired object
//!   has a value: an empty placeholder (null or `""`) never overwrites what is there, and the
//!   manifest's other fields only seed a new ControllerConfig;
//! - the `machine-config-operator-images` ConfigMap ([`Ownership::Seed`]): nothing once it
//!   exists.

use super::controller_config::{is_placeholder, OWNED_SPEC_FIELDS};
use crate::api::value_at::str_at;
use serde_json::{Map, Value};

/// What of an existing object the operator owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// Every field the desired object sets.
    Whole,
    /// The labels and annotations the desired object sets.
    Metadata,
    /// The labels and annotations the desired object sets, and these spec fields where the
    /// desired object has a value for them (not a placeholder).
    SpecFields(&'static [&'static str]),
    /// Nothing: the object is created when missing and is the administrator's after.
    Seed,
}

/// The ownership of objects of a kind.
pub fn ownership(kind: &str) -> Ownership {
    match kind {
        "MachineConfigPool" => Ownership::Metadata,
        "ControllerConfig" => Ownership::SpecFields(OWNED_SPEC_FIELDS),
        _ => Ownership::Whole,
    }
}

/// The ownership of one object: [`ownership`] of its kind, but [`Ownership::Seed`] for the
/// `machine-config-operator-images` ConfigMap (the image builds run is the administrator's).
pub fn ownership_of(obj: &Value) -> Ownership {
    let kind = str_at(obj, "/kind");
    if kind == "ConfigMap" && str_at(obj, "/metadata/name") == super::layering::IMAGES_CONFIGMAP {
        return Ownership::Seed;
    }
    ownership(kind)
}

/// A JSON merge patch for an existing object. It carries the live object's
/// `metadata.resourceVersion`, so it fails (and is retried on the next pass) rather than
/// overwrite a change made meanwhile.
#[derive(Debug, Clone, PartialEq)]
pub struct MergePatch(pub Value);

/// The labels and annotations `desired` sets, as a `metadata` object (`None` when neither).
fn owned_metadata(desired: &Value) -> Option<Value> {
    let meta: Map<String, Value> = ["labels", "annotations"]
        .iter()
        .filter_map(|k| {
            let v = desired.pointer(&format!("/metadata/{k}"))?;
            v.is_object().then(|| (k.to_string(), v.clone()))
        })
        .collect();
    (!meta.is_empty()).then_some(Value::Object(meta))
}

/// The part of `desired` the operator enforces on an existing object of its kind.
pub fn owned_part(desired: &Value) -> Value {
    let fields = match ownership_of(desired) {
        Ownership::Whole => {
            let mut want = desired.clone();
            if let Some(m) = want.as_object_mut() {
                m.remove("status");
            }
            return want;
        }
        Ownership::Seed => return Value::Object(Map::new()),
        Ownership::Metadata => &[][..],
        Ownership::SpecFields(fields) => fields,
    };
    let mut want = Map::new();
    if let Some(meta) = owned_metadata(desired) {
        want.insert("metadata".into(), meta);
    }
    let spec: Map<String, Value> = fields
        .iter()
        .filter_map(|f| {
            let v = desired.get("spec")?.get(*f)?;
            (!is_placeholder(v)).then(|| (f.to_string(), v.clone()))
        })
        .collect();
    if !spec.is_empty() {
        want.insert("spec".into(), Value::Object(spec));
    }
    Value::Object(want)
}

/// The patch that brings the fields the operator owns in `live` to `desired`'s values, or
/// `None` when they already match. Fields it does not own are never in the patch.
pub fn update_for(desired: &Value, live: &Value) -> Option<MergePatch> {
    let want = owned_part(desired);
    if contains(live, &want) {
        return None;
    }
    let mut patch = patch_for(live, &want);
    if let Some(rv) = live.pointer("/metadata/resourceVersion") {
        if !patch["metadata"].is_object() {
            patch["metadata"] = Value::Object(Map::new());
        }
        patch["metadata"]["resourceVersion"] = rv.clone();
    }
    Some(MergePatch(patch))
}

/// The merge patch that sets `want`'s fields on `live`, the way upstream's resource apply
/// restores what it owns:
///
/// - objects are merged key by key: keys `want` does not set (defaults the server filled,
///   labels others added) stay;
/// - lists are replaced by `want`'s (a JSON merge patch replaces arrays whole, and upstream's
///   apply replaces them too): items others added or changed do not survive, so one-of
///   fields inside list items (a webhook's `clientConfig`, a volume's source, a probe's
///   handler) cannot end up with two members. Only an injected CA bundle is kept: a
///   `clientConfig.caBundle` that `want`'s item lacks is carried over from the live item of
///   the same name, as OpenShift's service CA or cert-manager put it there;
/// - in a `clientConfig` outside lists (a CRD's conversion webhook), the member of the one-of
///   (`url` or `service`) that `want` does not set is removed.
pub fn patch_for(live: &Value, want: &Value) -> Value {
    match (live, want) {
        (Value::Object(l), Value::Object(w)) => Value::Object(
            w.iter()
                .map(|(k, wv)| {
                    let v = match l.get(k) {
                        Some(lv) if k == "clientConfig" => one_of(lv, wv, CLIENT_CONFIG),
                        Some(lv) => patch_for(lv, wv),
                        None => wv.clone(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        (Value::Array(l), Value::Array(w)) => Value::Array(
            w.iter()
                .map(|wv| {
                    let same = wv
                        .get("name")
                        .and_then(|n| l.iter().find(|lv| lv.get("name") == Some(n)));
                    with_injected_ca(wv, same)
                })
                .collect(),
        ),
        (_, w) => w.clone(),
    }
}

/// A webhook client configuration names a `url` or a `service`, never both.
const CLIENT_CONFIG: &[&str] = &["url", "service"];

/// [`patch_for`] an object holding a one-of of `members`: the members `want` does not set
/// are removed from `live` (null in a merge patch).
fn one_of(live: &Value, want: &Value, members: &[&str]) -> Value {
    let mut out = patch_for(live, want);
    let sets_one = members.iter().any(|m| want.get(*m).is_some());
    if let (true, Some(l), Some(o)) = (sets_one, live.as_object(), out.as_object_mut()) {
        for m in members {
            if l.contains_key(*m) && !o.contains_key(*m) {
                o.insert(m.to_string(), Value::Null);
            }
        }
    }
    out
}

/// `want`'s list item, with the live item's `clientConfig.caBundle` when `want` has none.
fn with_injected_ca(want: &Value, live: Option<&Value>) -> Value {
    let mut out = want.clone();
    let injected = live.and_then(|l| l.pointer("/clientConfig/caBundle"));
    if let (Some(ca), Some(cc)) = (injected, out.get_mut("clientConfig")) {
        if let Some(cc) = cc.as_object_mut() {
            cc.entry("caBundle").or_insert_with(|| ca.clone());
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `live` with a merge patch applied (RFC 7386).
    fn merged(live: &Value, patch: &Value) -> Value {
        match (live, patch) {
            (Value::Object(l), Value::Object(p)) => {
                let mut out = l.clone();
                for (k, pv) in p {
                    if pv.is_null() {
                        out.remove(k);
                    } else {
                        let v = merged(l.get(k).unwrap_or(&Value::Null), pv);
                        out.insert(k.clone(), v);
                    }
                }
                Value::Object(out)
            }
            (_, p) => p.clone(),
        }
    }

    fn pool(max_unavailable: Value, paused: bool, role: &str) -> Value {
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
               "metadata": {"name": "worker", "resourceVersion": "12",
                            "labels": {"machineconfiguration.openshift.io/mco-built-in": ""}},
               "spec": {"machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": role}},
                        "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
                        "maxUnavailable": max_unavailable, "paused": paused,
                        "configuration": {"name": "rendered-worker-1"}}})
    }

    fn manifest_pool() -> Value {
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
               "metadata": {"name": "worker",
                            "labels": {"machineconfiguration.openshift.io/mco-built-in": "",
                                       "pools.operator.machineconfiguration.openshift.io/worker": ""}},
               "spec": {"machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}},
                        "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}}}})
    }

    fn cc(spec: Value) -> Value {
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "ControllerConfig",
               "metadata": {"name": "machine-config-controller", "resourceVersion": "7",
                            "annotations": {"a": "1"}},
               "spec": spec})
    }

    #[test]
    fn kinds_and_their_ownership() {
        assert_eq!(ownership("MachineConfigPool"), Ownership::Metadata);
        assert_eq!(
            ownership("ControllerConfig"),
            Ownership::SpecFields(OWNED_SPEC_FIELDS)
        );
        for kind in [
            "Deployment",
            "DaemonSet",
            "ClusterRole",
            "ClusterRoleBinding",
            "ServiceAccount",
            "CustomResourceDefinition",
            "Namespace",
            "Service",
            "MachineConfig",
        ] {
            assert_eq!(ownership(kind), Ownership::Whole, "{kind}");
        }
    }

    #[test]
    fn a_pools_spec_is_the_administrators() {
        // Another selector, maxUnavailable and paused: none of it is patched back.
        let live = pool(json!(3), true, "custom");
        let mut with_label = live.clone();
        with_label["metadata"]["labels"]
            ["pools.operator.machineconfiguration.openshift.io/worker"] = json!("");
        assert_eq!(update_for(&manifest_pool(), &with_label), None);
        // A missing label the operator sets is added, and only that.
        let Some(MergePatch(p)) = update_for(&manifest_pool(), &live) else {
            panic!("the missing label is not added");
        };
        assert_eq!(
            p,
            json!({"metadata": {"resourceVersion": "12", "labels": {
                "machineconfiguration.openshift.io/mco-built-in": "",
                "pools.operator.machineconfiguration.openshift.io/worker": ""}}})
        );
        let after = merged(&live, &p);
        assert_eq!(after["spec"], live["spec"]);
        // Labels others set stay.
        let mut other = with_label.clone();
        other["metadata"]["labels"]["team"] = json!("infra");
        assert_eq!(update_for(&manifest_pool(), &other), None);
    }

    #[test]
    fn controller_config_images_are_never_blanked() {
        let live = cc(json!({"baseOSContainerImage": "admin/os:1",
                             "baseOSExtensionsContainerImage": "admin/ext:1",
                             "platform": "aws", "pullSecret": {"name": "ps"}}));
        // The old manifest's placeholders: nothing to write.
        let desired = cc(
            json!({"baseOSContainerImage": "", "baseOSExtensionsContainerImage": null,
                                "platform": "aws"}),
        );
        assert_eq!(update_for(&desired, &live), None);
        // Fields the operator does not derive are not its own, even when the manifest sets them.
        let desired = cc(json!({"pullSecret": {"name": "other"}, "images": {"x": "y"}}));
        assert_eq!(update_for(&desired, &live), None);
    }

    #[test]
    fn controller_config_owned_fields_are_restored() {
        let live = cc(
            json!({"baseOSContainerImage": "admin/os:1", "platform": "none",
                             "pullSecret": {"name": "ps"}}),
        );
        let mut desired = cc(
            json!({"baseOSContainerImage": "release/os:2", "platform": "aws",
                                    "baseOSExtensionsContainerImage": ""}),
        );
        desired["metadata"]["annotations"]["v"] = json!("4.1");
        let Some(MergePatch(p)) = update_for(&desired, &live) else {
            panic!("owned fields not restored");
        };
        assert_eq!(
            p,
            json!({"metadata": {"resourceVersion": "7", "annotations": {"a": "1", "v": "4.1"}},
                   "spec": {"baseOSContainerImage": "release/os:2", "platform": "aws"}})
        );
        let after = merged(&live, &p);
        assert_eq!(after["spec"]["pullSecret"], json!({"name": "ps"}));
        assert!(after["spec"]
            .get("baseOSExtensionsContainerImage")
            .is_none());
        assert_eq!(update_for(&desired, &after), None);
    }

    #[test]
    fn other_kinds_are_owned_whole() {
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "resourceVersion": "3", "labels": {"team": "x"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "c", "image": "old", "env": [{"name": "X"}]}]}}},
            "status": {"replicas": 2}});
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "c", "image": "new"}]}}},
            "status": {"replicas": 9}});
        let Some(MergePatch(p)) = update_for(&desired, &live) else {
            panic!("a changed Deployment is not patched");
        };
        assert_eq!(p["metadata"]["resourceVersion"], "3");
        assert!(p.get("status").is_none());
        let after = merged(&live, &p);
        assert_eq!(after["spec"]["replicas"], 1);
        // Lists are the operator's: an env added by hand goes, as upstream's apply does.
        assert_eq!(
            after["spec"]["template"]["spec"]["containers"][0],
            json!({"name": "c", "image": "new"})
        );
        assert_eq!(after["metadata"]["labels"]["team"], "x");
        assert_eq!(update_for(&desired, &after), None);
    }

    #[test]
    fn the_images_configmap_is_only_seeded() {
        let desired = super::super::layering::images_configmap("quay.io/mco/rs:2", "4.99.1");
        assert_eq!(ownership_of(&desired), Ownership::Seed);
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "machine-config-operator-images", "resourceVersion": "3"},
            "data": {"images.json": "{\"machineConfigOperator\": \"registry.example.com/builder:1\"}"}});
        assert_eq!(update_for(&desired, &live), None);
        // Another ConfigMap is the operator's whole.
        let mut other = desired.clone();
        other["metadata"]["name"] = json!("machine-config-osimageurl");
        assert_eq!(ownership_of(&other), Ownership::Whole);
        assert!(update_for(&other, &live).is_some());
    }

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
    fn lists_are_replaced_whole() {
        let live = json!({"spec": {"containers": [
            {"name": "a", "image": "old", "env": [{"name": "X"}]},
            {"name": "b", "image": "b"}]}, "other": 1});
        let want = json!({"spec": {"containers": [
            {"name": "b", "image": "b"},
            {"name": "a", "image": "new"}]}});
        let p = patch_for(&live, &want);
        assert_eq!(p, want);
        let after = merged(&live, &p);
        assert_eq!(after["other"], 1);
        assert!(contains(&after, &want));
    }

    fn webhook(client_config: Value) -> Value {
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingWebhookConfiguration",
               "metadata": {"name": "machine-config-validation", "resourceVersion": "5"},
               "webhooks": [{"name": "machineconfigs.machineconfiguration.openshift.io",
                             "sideEffects": "None", "clientConfig": client_config}]})
    }

    fn service() -> Value {
        json!({"name": "machine-config-controller",
               "namespace": "openshift-machine-config-operator", "path": "/validate", "port": 443})
    }

    #[test]
    fn a_webhook_pointed_at_a_url_gets_its_service_back_and_keeps_its_ca() {
        let desired = webhook(json!({"service": service()}));
        let live = webhook(json!({"url": "https://127.0.0.1:9443/validate", "caBundle": "Q0E="}));
        let Some(MergePatch(p)) = update_for(&desired, &live) else {
            panic!("the edited webhook is not restored");
        };
        let after = merged(&live, &p);
        assert_eq!(
            after["webhooks"][0]["clientConfig"],
            json!({"service": service(), "caBundle": "Q0E="}),
            "exactly one of url and service, the injected CA kept: {p}"
        );
        assert_eq!(update_for(&desired, &after), None);
        // The operator's own CA (from the certificate Secret) replaces the injected one.
        let mut with_ca = desired.clone();
        with_ca["webhooks"][0]["clientConfig"]["caBundle"] = json!("TkVX");
        let Some(MergePatch(p)) = update_for(&with_ca, &after) else {
            panic!("the new CA is not written");
        };
        assert_eq!(
            merged(&after, &p)["webhooks"][0]["clientConfig"]["caBundle"],
            "TkVX"
        );
    }

    #[test]
    fn a_client_config_outside_lists_keeps_one_member() {
        let live = json!({"spec": {"conversion": {"webhook": {"clientConfig": {
            "url": "https://x/convert", "caBundle": "Q0E="}}}}});
        let want = json!({"spec": {"conversion": {"webhook": {"clientConfig": {
            "service": service()}}}}});
        let after = merged(&live, &patch_for(&live, &want));
        assert_eq!(
            after["spec"]["conversion"]["webhook"]["clientConfig"],
            json!({"service": service(), "caBundle": "Q0E="})
        );
        // A clientConfig the desired object sets no member of keeps the live one.
        let only_ca = json!({"spec": {"conversion": {"webhook": {"clientConfig": {
            "caBundle": "TkVX"}}}}});
        let after = merged(&live, &patch_for(&live, &only_ca));
        assert_eq!(
            after["spec"]["conversion"]["webhook"]["clientConfig"]["url"],
            "https://x/convert"
        );
    }
}
