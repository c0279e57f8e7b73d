//! The objects the operator applies: the manifests folder's documents, with the image and
//! version set on the workloads, the ControllerConfig built for the cluster, in apply order.

use super::controller_config::{build_controller_config, ClusterConfigObjects};
use super::CONTROLLER_CONFIG_NAME;
use super::{IMAGE_PLACEHOLDER, OPERATOR_DEPLOYMENT, VERSION_ANNOTATION};
use crate::api::value_at::str_at;
use serde_json::{json, Value};

/// What the operator deploys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredOptions {
    /// The image replacing the manifests' placeholder image.
    pub image: String,
    /// The version the workloads and the ControllerConfig are annotated with.
    pub version: String,
}

/// A manifest the operator cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestsError {
    /// A document is not YAML (or JSON).
    #[error("{file}: document {doc}: invalid YAML: {message}")]
    Yaml {
        /// The file.
        file: String,
        /// The 1-based document number.
        doc: usize,
        /// The decoder's message.
        message: String,
    },
    /// A document is not a Kubernetes object.
    #[error("{file}: document {doc}: not an object with apiVersion, kind and metadata.name")]
    NotAnObject {
        /// The file.
        file: String,
        /// The 1-based document number.
        doc: usize,
    },
}

/// Decodes the manifest files (name, text), in the given order, into objects. Empty
/// documents are skipped and `List` objects are unpacked.
pub fn parse_manifests(files: &[(String, String)]) -> Result<Vec<Value>, ManifestsError> {
    let mut out = Vec::new();
    for (file, text) in files {
        for doc in crate::manifests::yaml_documents(text) {
            let (doc, v) = doc.map_err(|e| ManifestsError::Yaml {
                file: file.clone(),
                doc: e.doc,
                message: e.message,
            })?;
            let items = if str_at(&v, "/kind").ends_with("List") && v.get("items").is_some() {
                v.get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            } else {
                vec![v]
            };
            for item in items {
                if str_at(&item, "/apiVersion").is_empty()
                    || str_at(&item, "/kind").is_empty()
                    || str_at(&item, "/metadata/name").is_empty()
                {
                    return Err(ManifestsError::NotAnObject {
                        file: file.clone(),
                        doc,
                    });
                }
                out.push(item);
            }
        }
    }
    Ok(out)
}

/// Where an object goes in the apply order: CRDs, the namespace, RBAC, config objects, the
/// ControllerConfig, pools, then the controller, the server and the agent.
pub fn apply_rank(obj: &Value) -> (u8, u8) {
    let name = str_at(obj, "/metadata/name");
    let workload = |name: &str| {
        if name.contains("controller") {
            0
        } else if name.contains("server") {
            1
        } else if name.contains("daemon") {
            2
        } else {
            3
        }
    };
    match str_at(obj, "/kind") {
        "CustomResourceDefinition" => (0, 0),
        "Namespace" => (1, 0),
        "ServiceAccount" => (2, 0),
        // Namespaced grants before cluster-wide ones: where an update moves a permission
        // from a ClusterRole into a Role, the Role is bound before the ClusterRole loses it.
        "Role" => (2, 1),
        "RoleBinding" => (2, 2),
        "ClusterRole" => (2, 3),
        "ClusterRoleBinding" => (2, 4),
        // The guards on what the agents write, in place before the agents run.
        "ValidatingAdmissionPolicy" => (2, 5),
        "ValidatingAdmissionPolicyBinding" => (2, 6),
        "ConfigMap" | "Secret" => (3, 0),
        "ControllerConfig" => (4, 0),
        "MachineConfigPool" => (5, 0),
        "MachineConfig" => (5, 1),
        "Deployment" | "Service" => (6, workload(name)),
        "DaemonSet" => (6, 2),
        _ => (7, 0),
    }
}

/// Whether an object is a workload the operator rolls out and watches.
pub fn is_workload(obj: &Value) -> bool {
    matches!(str_at(obj, "/kind"), "Deployment" | "DaemonSet")
}

/// The objects to apply, in order: every manifest object but the operator's own Deployment,
/// the workloads at `opts.image` and annotated with `opts.version` (on the object and its pod
/// template, so a new version rolls the pods), and the `machine-config-controller`
/// ControllerConfig built by [`build_controller_config`] (added when the manifests lack it),
/// and the `machine-config-operator-images` ConfigMap naming `opts.image` for build Jobs
/// ([`super::layering::images_configmap`], only seeded).
pub fn desired_objects(
    manifests: &[Value],
    opts: &DesiredOptions,
    cluster: &ClusterConfigObjects,
) -> Vec<Value> {
    let mut out = Vec::new();
    let mut have_cc = false;
    for obj in manifests {
        let kind = str_at(obj, "/kind");
        let name = str_at(obj, "/metadata/name");
        if kind == "Deployment" && name == OPERATOR_DEPLOYMENT {
            continue;
        }
        if kind == "ControllerConfig" && name == CONTROLLER_CONFIG_NAME {
            if !have_cc {
                out.push(build_controller_config(Some(obj), cluster, &opts.version));
                have_cc = true;
            }
            continue;
        }
        let mut obj = obj.clone();
        if is_workload(&obj) {
            set_workload(&mut obj, opts);
        }
        out.push(obj);
    }
    if !have_cc {
        out.push(build_controller_config(None, cluster, &opts.version));
    }
    out.extend(cluster.kubeconfig_data.clone());
    out.push(super::layering::images_configmap(
        &opts.image,
        &opts.version,
    ));
    out.sort_by_key(apply_rank);
    out
}

fn annotate(obj: &mut Value, key: &str, value: &str) {
    if !obj.is_object() {
        return;
    }
    let meta = &mut obj["metadata"];
    if !meta.is_object() {
        *meta = json!({});
    }
    let ann = &mut meta["annotations"];
    if !ann.is_object() {
        *ann = json!({});
    }
    ann[key] = json!(value);
}

fn set_workload(obj: &mut Value, opts: &DesiredOptions) {
    annotate(obj, VERSION_ANNOTATION, &opts.version);
    if let Some(template) = obj.pointer_mut("/spec/template") {
        annotate(template, VERSION_ANNOTATION, &opts.version);
    }
    for list in ["containers", "initContainers"] {
        let ptr = format!("/spec/template/spec/{list}");
        let Some(containers) = obj.pointer_mut(&ptr).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers {
            if c.get("image").and_then(Value::as_str) == Some(IMAGE_PLACEHOLDER) {
                c["image"] = json!(opts.image);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> DesiredOptions {
        DesiredOptions {
            image: "quay.io/mco/rs:1".into(),
            version: "4.99.0".into(),
        }
    }

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: machine-config-controller\n  namespace: ns\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: mco-rs:latest\n      - name: other\n        image: busybox\n      initContainers:\n      - name: i\n        image: mco-rs:latest\n";

    #[test]
    fn parses_multi_document_files_and_lists() {
        let objs = parse_manifests(&files(&[
            ("a.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ServiceAccount\n  metadata:\n    name: b\n"),
            ("b.json", r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"c"}}"#),
        ]));
        let names: Vec<String> = objs
            .unwrap_or_default()
            .iter()
            .map(|o| str_at(o, "/metadata/name").to_string())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn rejects_bad_documents() {
        assert!(matches!(
            parse_manifests(&files(&[("a.yaml", "a: [")])),
            Err(ManifestsError::Yaml { doc: 1, .. })
        ));
        assert_eq!(
            parse_manifests(&files(&[("a.yaml", "---\nkind: X\n---\nfoo: 1\n")])),
            Err(ManifestsError::NotAnObject {
                file: "a.yaml".into(),
                doc: 1
            })
        );
    }

    #[test]
    fn workloads_get_image_and_version() {
        let objs = parse_manifests(&files(&[("d.yaml", DEPLOY)])).unwrap_or_default();
        let out = desired_objects(&objs, &opts(), &ClusterConfigObjects::default());
        let Some(d) = out.iter().find(|o| is_workload(o)) else {
            panic!("no workload in {out:?}");
        };
        assert_eq!(
            d.pointer("/spec/template/spec/containers/0/image"),
            Some(&json!("quay.io/mco/rs:1"))
        );
        assert_eq!(
            d.pointer("/spec/template/spec/containers/1/image"),
            Some(&json!("busybox"))
        );
        assert_eq!(
            d.pointer("/spec/template/spec/initContainers/0/image"),
            Some(&json!("quay.io/mco/rs:1"))
        );
        assert_eq!(d["metadata"]["annotations"][VERSION_ANNOTATION], "4.99.0");
        assert_eq!(
            d["spec"]["template"]["metadata"]["annotations"][VERSION_ANNOTATION],
            "4.99.0"
        );
    }

    #[test]
    fn orders_objects_for_apply_and_skips_the_operator() {
        let mk = |kind: &str, name: &str| json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}});
        let objs = vec![
            mk("DaemonSet", "machine-config-daemon"),
            mk("Deployment", "machine-config-server"),
            mk("Deployment", "machine-config-operator"),
            mk("Service", "machine-config-server"),
            mk("Deployment", "machine-config-controller"),
            mk("MachineConfigPool", "worker"),
            mk("ValidatingAdmissionPolicyBinding", "p"),
            mk("ClusterRoleBinding", "x"),
            mk("ClusterRole", "x"),
            mk("ValidatingAdmissionPolicy", "p"),
            mk("RoleBinding", "x"),
            mk("Role", "x"),
            mk("ServiceAccount", "x"),
            mk("Namespace", "n"),
            mk("CustomResourceDefinition", "c"),
        ];
        let out = desired_objects(&objs, &opts(), &ClusterConfigObjects::default());
        let kinds: Vec<String> = out
            .iter()
            .map(|o| format!("{}/{}", str_at(o, "/kind"), str_at(o, "/metadata/name")))
            .collect();
        assert_eq!(
            kinds,
            [
                "CustomResourceDefinition/c",
                "Namespace/n",
                "ServiceAccount/x",
                "Role/x",
                "RoleBinding/x",
                "ClusterRole/x",
                "ClusterRoleBinding/x",
                "ValidatingAdmissionPolicy/p",
                "ValidatingAdmissionPolicyBinding/p",
                "ConfigMap/machine-config-operator-images",
                "ControllerConfig/machine-config-controller",
                "MachineConfigPool/worker",
                "Deployment/machine-config-controller",
                "Deployment/machine-config-server",
                "Service/machine-config-server",
                "DaemonSet/machine-config-daemon",
            ]
        );
    }

    #[test]
    fn repository_manifests_give_every_object() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests");
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        names.sort();
        let texts: Vec<(String, String)> = names
            .iter()
            .map(|p| {
                (
                    p.display().to_string(),
                    std::fs::read_to_string(p).unwrap_or_default(),
                )
            })
            .collect();
        let objs = parse_manifests(&texts).unwrap_or_default();
        let out = desired_objects(&objs, &opts(), &ClusterConfigObjects::default());
        assert!(out.len() >= 15, "{}", out.len());
        let text = serde_json::to_string(&out).unwrap_or_default();
        assert!(!text.contains(IMAGE_PLACEHOLDER));
        let ccs: Vec<&Value> = out
            .iter()
            .filter(|o| str_at(o, "/kind") == "ControllerConfig")
            .collect();
        assert_eq!(ccs.len(), 1);
        // No placeholder OS images: without the release's, the operator names none.
        let spec = ccs[0]["spec"].as_object().cloned().unwrap_or_default();
        assert!(
            !spec.contains_key("baseOSContainerImage")
                && !spec.contains_key("baseOSExtensionsContainerImage"),
            "{spec:?}"
        );
        assert!(
            !objs.iter().any(|o| {
                str_at(o, "/kind") == "ControllerConfig"
                    && o["spec"].as_object().is_some_and(|m| {
                        m.values()
                            .any(super::super::controller_config::is_placeholder)
                    })
            }),
            "a placeholder in the ControllerConfig manifest"
        );
    }
}
