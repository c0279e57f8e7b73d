//! The CRDs are structural, carry the expected printer columns and subresources, and
//! `manifests/00-crds.yaml` is what the Rust types generate.

use mco_k8s::crd::{crds, crds_yaml};
use serde_json::Value;

/// Collects every structural-schema violation under `schema`, located by `path`.
fn check(schema: &Value, path: &str, root: bool, in_value_validation: bool, out: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        out.push(format!("{path}: schema is not an object"));
        return;
    };
    for bad in ["$ref", "definitions", "$defs", "$schema"] {
        if obj.contains_key(bad) {
            out.push(format!("{path}: has {bad}"));
        }
    }
    let preserve = obj.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    let int_or_string = obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    if in_value_validation {
        for k in [
            "type",
            "description",
            "default",
            "additionalProperties",
            "nullable",
        ] {
            if obj.contains_key(k) {
                out.push(format!("{path}: {k} inside a value validation"));
            }
        }
    } else if !obj.contains_key("type") && !preserve && !int_or_string {
        out.push(format!("{path}: no type"));
    }
    if root && obj.get("type").and_then(Value::as_str) != Some("object") {
        out.push(format!("{path}: root type is not object"));
    }
    if let Some(any) = obj.get("anyOf").or(obj.get("oneOf")).or(obj.get("allOf")) {
        for (i, s) in any.as_array().into_iter().flatten().enumerate() {
            check(s, &format!("{path}.anyOf[{i}]"), false, true, out);
        }
    }
    let ty = obj.get("type").and_then(Value::as_str);
    let props = obj.get("properties").and_then(Value::as_object);
    let addl = obj.get("additionalProperties");
    if ty == Some("object") && !in_value_validation {
        if props.is_none() && addl.is_none() && !preserve {
            out.push(format!("{path}: object without properties, additionalProperties or preserve-unknown-fields"));
        }
        if props.is_some() && addl.is_some_and(|a| a != &Value::Bool(false)) {
            out.push(format!("{path}: both properties and additionalProperties"));
        }
    }
    if ty == Some("array") && !obj.contains_key("items") {
        out.push(format!("{path}: array without items"));
    }
    for (k, s) in props.into_iter().flatten() {
        if root && k == "metadata" {
            // Only name and generateName restrictions are allowed on root metadata.
            if let Some(mp) = s.get("properties").and_then(Value::as_object) {
                if mp.keys().any(|k| k != "name" && k != "generateName") {
                    out.push(format!("{path}.metadata: restricts fields other than name"));
                }
            }
        }
        check(s, &format!("{path}.{k}"), false, in_value_validation, out);
    }
    if let Some(a) = addl.filter(|a| a.is_object()) {
        check(
            a,
            &format!("{path}.additionalProperties"),
            false,
            in_value_validation,
            out,
        );
    }
    if let Some(items) = obj.get("items") {
        check(
            items,
            &format!("{path}.items"),
            false,
            in_value_validation,
            out,
        );
    }
}

#[test]
fn every_crd_is_structural() {
    for crd in crds().unwrap() {
        let v = serde_json::to_value(&crd).unwrap();
        for (i, version) in v["spec"]["versions"].as_array().unwrap().iter().enumerate() {
            let schema = &version["schema"]["openAPIV3Schema"];
            let mut errs = Vec::new();
            check(
                schema,
                &format!("{}[{i}]", crd.metadata.name.as_deref().unwrap_or("")),
                true,
                false,
                &mut errs,
            );
            assert!(errs.is_empty(), "{errs:#?}");
        }
    }
}

#[test]
fn checker_catches_non_structural() {
    let mut errs = Vec::new();
    let bad = serde_json::json!({"type": "object", "properties": {
        "a": {"description": "no type"},
        "b": {"type": "object"},
        "c": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
        "d": {"type": "array"}
    }});
    check(&bad, "x", true, false, &mut errs);
    assert_eq!(errs.len(), 4, "{errs:#?}");
}

fn columns(name: &str) -> Vec<(String, String)> {
    let crd = crds()
        .unwrap()
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some(name))
        .unwrap();
    crd.spec.versions[0]
        .additional_printer_columns
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.name.to_uppercase(), c.json_path))
        .collect()
}

#[test]
fn printer_columns() {
    let mcp: Vec<String> = columns("machineconfigpools.machineconfiguration.openshift.io")
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(
        mcp,
        [
            "CONFIG",
            "UPDATED",
            "UPDATING",
            "DEGRADED",
            "MACHINECOUNT",
            "READYMACHINECOUNT",
            "UPDATEDMACHINECOUNT",
            "DEGRADEDMACHINECOUNT",
            "AGE"
        ]
    );
    let mc = columns("machineconfigs.machineconfiguration.openshift.io");
    assert_eq!(
        mc.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        ["GENERATEDBYCONTROLLER", "IGNITIONVERSION", "AGE"]
    );
    assert_eq!(mc[1].1, ".spec.config.ignition.version");
}

/// `kubectl get mcn` shows upstream's columns; `-o wide` adds the phases (priority 1).
#[test]
fn machine_config_node_columns() {
    let crd = crds()
        .unwrap()
        .into_iter()
        .find(|c| c.spec.names.kind == "MachineConfigNode")
        .unwrap();
    assert_eq!(crd.spec.names.short_names, Some(vec!["mcn".to_string()]));
    let cols = crd.spec.versions[0]
        .additional_printer_columns
        .clone()
        .unwrap_or_default();
    let shown = |wide: bool| -> Vec<String> {
        cols.iter()
            .filter(|c| c.priority.is_some() == wide)
            .map(|c| c.name.clone())
            .collect()
    };
    assert_eq!(
        shown(false),
        [
            "PoolName",
            "DesiredConfig",
            "CurrentConfig",
            "Updated",
            "Age"
        ]
    );
    assert_eq!(
        shown(true),
        [
            "UpdatePrepared",
            "UpdateExecuted",
            "UpdatePostActionComplete",
            "UpdateComplete",
            "Resumed",
            "UpdatedFilesAndOS",
            "CordonedNode",
            "DrainedNode",
            "RebootedNode",
            "UncordonedNode"
        ]
    );
    let path = |name: &str| {
        cols.iter()
            .find(|c| c.name == name)
            .map(|c| c.json_path.clone())
            .unwrap_or_default()
    };
    assert_eq!(path("CurrentConfig"), ".status.configVersion.current");
    assert_eq!(
        path("UpdatedFilesAndOS"),
        ".status.conditions[?(@.type==\"AppliedFilesAndOS\")].status"
    );
}

/// `kubectl get rp` shows where each pool's rollout stands.
#[test]
fn rollout_policy_columns() {
    let crd = crds()
        .unwrap()
        .into_iter()
        .find(|c| c.spec.names.kind == "RolloutPolicy")
        .unwrap();
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("rolloutpolicies.rollout.mco.dev")
    );
    assert_eq!(crd.spec.names.short_names, Some(vec!["rp".to_string()]));
    assert_eq!(crd.spec.versions[0].name, "v1alpha1");
    let cols: Vec<(String, String)> = columns("rolloutpolicies.rollout.mco.dev");
    assert_eq!(
        cols,
        [
            ("TARGET", ".status.target"),
            ("PHASE", ".status.phase"),
            ("LAST KNOWN GOOD", ".status.lastKnownGood"),
            ("NEXT WINDOW", ".status.nextWindow"),
            ("MESSAGE", ".status.message"),
            ("AGE", ".metadata.creationTimestamp"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let schema = schema_of("rolloutpolicies.rollout.mco.dev");
    for field in [
        "canary",
        "healthGate",
        "maintenanceWindows",
        "autoRollback",
        "rollback",
        "resumedAt",
    ] {
        assert!(
            schema["properties"]["spec"]["properties"][field].is_object(),
            "spec.{field} missing"
        );
    }
}

#[test]
fn scope_names_and_subresources() {
    for crd in crds().unwrap() {
        assert_eq!(crd.spec.scope, "Cluster");
        let group = match crd.spec.names.kind.as_str() {
            "RolloutPolicy" => "rollout.mco.dev",
            _ => "machineconfiguration.openshift.io",
        };
        assert_eq!(crd.spec.group, group);
        assert_eq!(
            crd.metadata.name,
            Some(format!("{}.{group}", crd.spec.names.plural))
        );
        let status = crd.spec.versions[0]
            .subresources
            .as_ref()
            .and_then(|s| s.status.as_ref())
            .is_some();
        let kind = crd.spec.names.kind.as_str();
        assert_eq!(status, kind != "MachineConfig", "{kind}");
    }
}

#[test]
fn manifests_match_the_types() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests/00-crds.yaml");
    let want = crds_yaml().unwrap();
    if std::env::var_os("UPDATE_MANIFESTS").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "manifests/00-crds.yaml is stale: run UPDATE_MANIFESTS=1 cargo test -p mco-k8s --test e2e crds::"
    );
}

#[test]
fn manifests_parse() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests");
    let mut kinds = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "yaml"))
    {
        let text = std::fs::read_to_string(f).unwrap();
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v: Value = serde::Deserialize::deserialize(doc).unwrap();
            if v.is_null() {
                continue;
            }
            kinds.push(format!(
                "{}/{}",
                v["kind"].as_str().unwrap(),
                v["metadata"]["name"].as_str().unwrap()
            ));
        }
    }
    for want in [
        "CustomResourceDefinition/machineconfigpools.machineconfiguration.openshift.io",
        "CustomResourceDefinition/kubeletconfigs.machineconfiguration.openshift.io",
        "CustomResourceDefinition/containerruntimeconfigs.machineconfiguration.openshift.io",
        "CustomResourceDefinition/rolloutpolicies.rollout.mco.dev",
        "Deployment/machine-config-controller",
        "DaemonSet/machine-config-server",
        "Secret/node-bootstrapper-token",
        "DaemonSet/machine-config-daemon",
        "MachineConfigPool/master",
        "MachineConfigPool/worker",
        "ClusterRole/machine-config-controller",
    ] {
        assert!(
            kinds.iter().any(|k| k == want),
            "{want} missing from {kinds:?}"
        );
    }
}

/// The `openAPIV3Schema` of a CRD's first version, as JSON.
fn schema_of(name: &str) -> Value {
    let crd = crds()
        .unwrap()
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("{name} missing"));
    let v = serde_json::to_value(&crd).unwrap();
    v["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

#[test]
fn kubelet_and_runtime_config_schemas() {
    let kc = schema_of("kubeletconfigs.machineconfiguration.openshift.io");
    let spec = &kc["properties"]["spec"]["properties"];
    assert_eq!(
        spec["kubeletConfig"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    for field in [
        "machineConfigPoolSelector",
        "autoSizingReserved",
        "logLevel",
        "tlsSecurityProfile",
    ] {
        assert!(spec.get(field).is_some(), "KubeletConfig spec.{field}");
    }
    let ctr = schema_of("containerruntimeconfigs.machineconfiguration.openshift.io");
    let settings = &ctr["properties"]["spec"]["properties"]["containerRuntimeConfig"]["properties"];
    for field in [
        "pidsLimit",
        "logLevel",
        "logSizeMax",
        "overlaySize",
        "defaultRuntime",
        "additionalLayerStores",
        "additionalImageStores",
        "additionalArtifactStores",
    ] {
        assert!(
            settings.get(field).is_some(),
            "ContainerRuntimeConfig spec.containerRuntimeConfig.{field}"
        );
    }
    assert_eq!(settings["overlaySize"]["x-kubernetes-int-or-string"], true);
    for schema in [&kc, &ctr] {
        let status = &schema["properties"]["status"]["properties"];
        assert!(status.get("observedGeneration").is_some());
        let cond = &status["conditions"]["items"]["properties"];
        for field in ["type", "status", "lastTransitionTime", "message"] {
            assert!(cond.get(field).is_some(), "condition {field}");
        }
    }
}

#[test]
fn clusteroperator_crd_is_structural_with_status() {
    let crd = mco_k8s::crd::clusteroperator_crd();
    assert_eq!(crd.spec.scope, "Cluster");
    assert_eq!(crd.spec.group, "config.openshift.io");
    assert_eq!(crd.spec.names.plural, "clusteroperators");
    let v = serde_json::to_value(&crd).unwrap();
    let version = &v["spec"]["versions"][0];
    assert!(version["subresources"]["status"].is_object());
    let mut errs = Vec::new();
    check(
        &version["schema"]["openAPIV3Schema"],
        "clusteroperators",
        true,
        false,
        &mut errs,
    );
    assert!(errs.is_empty(), "{errs:#?}");
}

#[test]
fn clusteroperator_manifest_matches_the_type() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../manifests/00-clusteroperator-crd.yaml"
    );
    let want = mco_k8s::crd::clusteroperator_crd_yaml().unwrap();
    if std::env::var_os("UPDATE_MANIFESTS").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "manifests/00-clusteroperator-crd.yaml is stale: run UPDATE_MANIFESTS=1 cargo test -p mco-k8s --test e2e crds::"
    );
}

#[test]
fn optional_config_crds_are_structural_and_open() {
    let crds = mco_k8s::crd::config_crds();
    let names: Vec<String> = crds
        .iter()
        .map(|c| c.metadata.name.clone().unwrap_or_default())
        .collect();
    for want in [
        "images.config.openshift.io",
        "clusterversions.config.openshift.io",
        "imagedigestmirrorsets.config.openshift.io",
        "imagetagmirrorsets.config.openshift.io",
        "featuregates.config.openshift.io",
        "apiservers.config.openshift.io",
        "nodes.config.openshift.io",
        "imagecontentsourcepolicies.operator.openshift.io",
        "clusterimagepolicies.config.openshift.io",
        "imagepolicies.config.openshift.io",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    for crd in &crds {
        let v = serde_json::to_value(crd).unwrap();
        let name = crd.metadata.name.clone().unwrap_or_default();
        // ImagePolicies live in the namespace whose pods they cover.
        let scope = if name == "imagepolicies.config.openshift.io" {
            "Namespaced"
        } else {
            "Cluster"
        };
        assert_eq!(v["spec"]["scope"], scope, "{name}");
        let version = &v["spec"]["versions"][0];
        assert_eq!(version["subresources"]["status"], serde_json::json!({}));
        let schema = &version["schema"]["openAPIV3Schema"];
        for part in ["spec", "status"] {
            assert_eq!(
                schema["properties"][part]["x-kubernetes-preserve-unknown-fields"], true,
                "{name} {part}"
            );
        }
        let mut errs = Vec::new();
        check(schema, &name, true, false, &mut errs);
        assert!(errs.is_empty(), "{errs:#?}");
    }
}

#[test]
fn optional_config_crds_manifest_matches_the_types() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../manifests/optional/config-crds.yaml"
    );
    let want = mco_k8s::crd::config_crds_yaml().unwrap();
    if std::env::var_os("UPDATE_MANIFESTS").is_some() {
        std::fs::create_dir_all(std::path::Path::new(path).parent().unwrap()).unwrap();
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "manifests/optional/config-crds.yaml is stale: run UPDATE_MANIFESTS=1 cargo test -p mco-k8s --test e2e crds::"
    );
}

#[test]
fn machine_os_config_and_build_columns() {
    let all = crds().unwrap();
    let mosc = all
        .iter()
        .find(|c| c.spec.names.kind == "MachineOSConfig")
        .unwrap();
    assert_eq!(
        mosc.metadata.name.as_deref(),
        Some("machineosconfigs.machineconfiguration.openshift.io")
    );
    // Upstream declares no printer columns for MachineOSConfig.
    assert_eq!(mosc.spec.versions[0].additional_printer_columns, None);
    let cols: Vec<(String, String)> = columns("machineosbuilds.machineconfiguration.openshift.io");
    let condition = |t: &str| format!(".status.conditions[?(@.type==\"{t}\")].status");
    let want: Vec<(String, String)> =
        ["Prepared", "Building", "Succeeded", "Interrupted", "Failed"]
            .iter()
            .map(|t| (t.to_ascii_uppercase(), condition(t)))
            .chain([("AGE".to_string(), ".metadata.creationTimestamp".to_string())])
            .collect();
    assert_eq!(cols, want);
    let schema = schema_of("machineosconfigs.machineconfiguration.openshift.io");
    for field in [
        "machineConfigPool",
        "imageBuilder",
        "renderedImagePushSpec",
        "containerFile",
    ] {
        assert!(
            schema
                .pointer(&format!("/properties/spec/properties/{field}"))
                .is_some(),
            "MachineOSConfig spec lacks {field}"
        );
    }
}

#[test]
fn pinned_image_sets_crd_pool_and_machine_config_node_fields() {
    let all = crds().unwrap();
    let pis = all
        .iter()
        .find(|c| c.spec.names.kind == "PinnedImageSet")
        .unwrap();
    assert_eq!(
        pis.metadata.name.as_deref(),
        Some("pinnedimagesets.machineconfiguration.openshift.io")
    );
    assert_eq!(pis.spec.scope, "Cluster");
    // Upstream declares no printer columns, and a status subresource.
    assert_eq!(pis.spec.versions[0].additional_printer_columns, None);
    assert!(pis.spec.versions[0]
        .subresources
        .as_ref()
        .is_some_and(|s| s.status.is_some()));
    let schema = schema_of("pinnedimagesets.machineconfiguration.openshift.io");
    let images = schema
        .pointer("/properties/spec/properties/pinnedImages")
        .unwrap();
    assert_eq!(images["maxItems"], 500);
    assert_eq!(images["items"]["properties"]["name"]["maxLength"], 447);
    let pool = schema_of("machineconfigpools.machineconfiguration.openshift.io");
    assert_eq!(
        pool.pointer("/properties/spec/properties/pinnedImageSets/items/properties/name/type"),
        Some(&serde_json::json!("string"))
    );
    let mcn = schema_of("machineconfignodes.machineconfiguration.openshift.io");
    let entry = mcn
        .pointer("/properties/status/properties/pinnedImageSets/items/properties")
        .unwrap();
    for field in [
        "name",
        "currentGeneration",
        "desiredGeneration",
        "lastFailedGeneration",
        "lastFailedGenerationError",
    ] {
        assert!(
            entry.get(field).is_some(),
            "MCN pinnedImageSets lacks {field}"
        );
    }
}
