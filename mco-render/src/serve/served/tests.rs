use super::*;
use mco_ignition::dataurl;

fn mc(config: Value) -> MachineConfig {
    let v = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "name": "rendered-worker-0123",
            "annotations": {"machineconfiguration.openshift.io/generated-by-controller-version": "abc"},
            "ownerReferences": [{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool", "name": "worker", "uid": "", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "osImageURL": "quay.io/os:1",
            "baseOSExtensionsContainerImage": "",
            "config": config,
            "kernelArguments": ["a=1"],
            "extensions": [],
            "fips": false,
            "kernelType": "default"
        }
    });
    serde_json::from_value(v).unwrap_or_default()
}

fn input(m: &MachineConfig) -> ServeInput<'_> {
    ServeInput {
        machine_config: m,
        controller_config: None,
        kubeconfig: Some("kc"),
        encapsulated: EncapsulatedVersion::Requested,
        profile: Default::default(),
    }
}

fn files(v: &Value) -> Vec<(String, String)> {
    v.pointer("/storage/files")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|f| {
                    let path = f["path"].as_str().unwrap_or("").to_string();
                    let src = f
                        .pointer("/contents/source")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let data = dataurl::parse(src).map(|d| d.data).unwrap_or_default();
                    (path, String::from_utf8_lossy(&data).into_owned())
                })
                .collect()
        })
        .unwrap_or_default()
}

fn base() -> Value {
    json!({"ignition": {"version": "3.5.0"}, "storage": {"files": [{"path": "/etc/a", "contents": {"source": "data:,a"}, "mode": 420}]}})
}

#[test]
fn appends_the_four_files_in_upstream_order() {
    let m = mc(base());
    let v = served_config(&input(&m), SpecVersion::V3_5).unwrap_or(Value::Null);
    let f = files(&v);
    let paths: Vec<&str> = f.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/etc/a",
            NODE_ANNOTATIONS_PATH,
            KUBECONFIG_PATH,
            MACHINE_CONFIG_CONTENT_PATH,
            ENCAPSULATED_PATH
        ]
    );
    assert_eq!(
        f[1].1,
        r#"{"machineconfiguration.openshift.io/currentConfig":"rendered-worker-0123","machineconfiguration.openshift.io/desiredConfig":"rendered-worker-0123","machineconfiguration.openshift.io/firstPivotConfig":"rendered-worker-0123","machineconfiguration.openshift.io/state":"Done"}"#
    );
    assert_eq!(f[2].1, "kc");
    let appended = &v["storage"]["files"][1];
    assert_eq!(appended["mode"], json!(420));
    assert_eq!(appended["overwrite"], json!(true));
}

#[test]
fn content_file_is_the_whole_machine_config_indented() {
    let m = mc(base());
    let v = served_config(&input(&m), SpecVersion::V3_5).unwrap_or(Value::Null);
    let content = &files(&v)[3].1;
    assert!(content.starts_with("{\n    \"kind\": \"MachineConfig\",\n    \"apiVersion\": \"machineconfiguration.openshift.io/v1\",\n    \"metadata\": {\n        \"name\": \"rendered-worker-0123\",\n"), "{content}");
    let back: Value = serde_json::from_str(content).unwrap_or(Value::Null);
    assert_eq!(back["spec"]["config"], sorted(&base()));
    assert_eq!(back["spec"]["kernelArguments"], json!(["a=1"]));
    assert!(back["metadata"].get("creationTimestamp").is_none());
}

#[test]
fn encapsulated_file_has_an_empty_config_and_is_compact() {
    let m = mc(base());
    let v = served_config(&input(&m), SpecVersion::V3_5).unwrap_or(Value::Null);
    let enc = &files(&v)[4].1;
    assert!(!enc.contains('\n'));
    let back: Value = serde_json::from_str(enc).unwrap_or(Value::Null);
    assert_eq!(
        back["spec"]["config"],
        json!({"ignition": {"version": "3.5.0"}})
    );
    assert_eq!(back["spec"]["osImageURL"], json!("quay.io/os:1"));
}

#[test]
fn no_kubeconfig_leaves_the_file_out() {
    let m = mc(base());
    let mut i = input(&m);
    i.kubeconfig = None;
    let v = served_config(&i, SpecVersion::V3_5).unwrap_or(Value::Null);
    assert!(files(&v).iter().all(|(p, _)| p != KUBECONFIG_PATH));
}

#[test]
fn percent_encodes_like_upstream() {
    let src = file_entry("/x", "a b\n{}");
    assert_eq!(src["contents"]["source"], json!("data:,a%20b%0A%7B%7D"));
}

#[test]
fn kernel_arguments_move_into_the_machine_config_below_3_3() {
    let mut c = base();
    c["kernelArguments"] = json!({"shouldExist": ["x=1", "y"]});
    let mut m = mc(c);
    let mut root = m
        .ignition()
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    assert!(migrate_kernel_arguments(&mut root, &mut m, SpecVersion::V3_2).is_ok());
    assert!(root.get("kernelArguments").is_none());
    assert_eq!(m.spec.kernel_arguments, ["a=1", "x=1", "y"]);
}

#[test]
fn kernel_arguments_stay_from_3_3() {
    let mut c = base();
    c["kernelArguments"] = json!({"shouldExist": ["x=1"]});
    let mut m = mc(c);
    let mut root = m
        .ignition()
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    assert!(migrate_kernel_arguments(&mut root, &mut m, SpecVersion::V3_3).is_ok());
    assert!(root.get("kernelArguments").is_some());
    assert_eq!(m.spec.kernel_arguments, ["a=1"]);
}

#[test]
fn should_not_exist_cannot_be_served_below_3_3() {
    let mut c = base();
    c["kernelArguments"] = json!({"shouldNotExist": ["quiet"]});
    let m = mc(c);
    let e = served_config(&input(&m), SpecVersion::V3_1).err();
    assert_eq!(e, Some(ServeError::KernelArguments(SpecVersion::V3_1)));
    assert_eq!(
        e.map(|e| e.to_string()).unwrap_or_default(),
        "failed to migrate kernel args can't serve version 3.1.0 with ignition KernelArguments.ShouldNotExist populated"
    );
}

#[test]
fn ca_bundles_come_from_the_controller_config() {
    let m = mc(base());
    let cc: ControllerConfigSpec = serde_json::from_value(json!({
        "kubeAPIServerServingCAData": "Q0EK",
    }))
    .unwrap_or_default();
    let mut i = input(&m);
    i.controller_config = Some(&cc);
    let v = served_config(&i, SpecVersion::V3_5).unwrap_or(Value::Null);
    let f = files(&v);
    assert_eq!(f[1], (KUBELET_CA_PATH.to_string(), "CA\n".to_string()));
    assert!(f.iter().all(|(p, _)| p != CLOUD_PROVIDER_CA_PATH));
}

#[test]
fn pre_built_image_adds_image_annotations() {
    let mut m = mc(base());
    m.metadata.annotations.insert(
        PRE_BUILT_IMAGE_ANNOTATION.into(),
        "quay.io/img@sha256:1".into(),
    );
    let a = node_annotations("r", &m);
    assert!(a.contains(r#""machineconfiguration.openshift.io/currentImage":"quay.io/img@sha256:1","machineconfiguration.openshift.io/desiredConfig""#), "{a}");
}

#[test]
fn served_bytes_are_compact_go_json() {
    let m = mc(base());
    let b = served_bytes(&input(&m), SpecVersion::V3_5).unwrap_or_default();
    let text = String::from_utf8(b).unwrap_or_default();
    assert!(text.starts_with('{') && !text.contains('\n'));
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    assert_eq!(v["ignition"]["version"], json!("3.5.0"));
}
