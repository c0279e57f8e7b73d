//! Unit tests of the KubeletConfig controller, one per upstream rule, on a small synthetic
//! cluster (the fixtures are written for these tests, not taken from upstream's templates).

use serde_json::{json, Value};

use crate::api::CustomResource;

use super::kubelet::{KUBELET_CONF_PATH, LOG_LEVEL_PATH, NODE_SIZING_PATH};
use super::names::MC_NAME_SUFFIX_ANNOTATION;
use super::{
    find_file, generate, ign_config, ign_file, FeatureGates, GenerateInput, GenerateOutcome,
};

pub(super) const VERSION: &str = "v-test";

/// A fixture object in the core's model.
pub(super) fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("fixture decodes")
}

/// A fixture KubeletConfig or ContainerRuntimeConfig.
pub(super) fn typed_resource(v: Value) -> CustomResource {
    CustomResource::from_json(v)
        .expect("a KubeletConfig or ContainerRuntimeConfig")
        .expect("fixture decodes")
}

/// Fixture KubeletConfigs or ContainerRuntimeConfigs.
pub(super) fn typed_resources(v: Vec<Value>) -> Vec<CustomResource> {
    v.into_iter().map(typed_resource).collect()
}

/// Sets the member at `path` of the resource (as JSON), creating objects on the way.
pub(super) fn set(o: &mut CustomResource, path: &[&str], v: Value) {
    let mut json = o.to_json();
    let mut at = &mut json;
    for k in path {
        at = &mut at[*k];
    }
    *at = v;
    *o = typed_resource(json);
}

/// Fixture objects in the core's model.
pub(super) fn typed_all<T: serde::de::DeserializeOwned>(v: Vec<Value>) -> Vec<T> {
    v.into_iter().map(typed).collect()
}

/// A kubelet configuration as the role templates would carry it.
const BASE_KUBELET: &str = "apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: 250
nodeStatusUpdateFrequency: 10s
systemCgroups: /system.slice
systemReservedCgroup: /system.slice
enforceNodeAllocatable:
- pods
- system-reserved
protectKernelDefaults: true
tlsMinVersion: VersionTLS12
tlsCipherSuites:
- TLS_AES_128_GCM_SHA256
featureGates:
  Base: true
";

pub(super) fn machine_config(name: &str, files: Vec<Value>) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {"config": ign_config(files, &crate::release::Profile::default())},
    })
}

pub(super) fn pool(name: &str) -> Value {
    json!({
        "metadata": {
            "name": name,
            "labels": {format!("pools.operator.machineconfiguration.openshift.io/{name}"): ""},
        },
        "spec": {},
    })
}

pub(super) fn selecting(pool: &str) -> Value {
    json!({"matchLabels": {format!("pools.operator.machineconfiguration.openshift.io/{pool}"): ""}})
}

fn kubelet_config(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "KubeletConfig",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "generation": 1,
                     "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": spec,
    })
}

fn input(object: Value, pools: Vec<Value>) -> GenerateInput {
    GenerateInput {
        object: typed_resource(object),
        pools: typed_all(pools),
        base_machine_configs: typed_all(
            ["master", "worker"]
                .iter()
                .map(|r| {
                    machine_config(
                        &format!("01-{r}-kubelet"),
                        vec![ign_file(KUBELET_CONF_PATH, BASE_KUBELET.as_bytes())],
                    )
                })
                .collect(),
        ),
        feature_gates: FeatureGates {
            enabled: vec!["On".into()],
            disabled: vec!["Off".into()],
        },
        controller_version: VERSION.into(),
        ..GenerateInput::default()
    }
}

/// A worker-pool KubeletConfig with this `kubeletConfig` and other spec fields.
fn worker(kubelet: Value, extra: Value) -> GenerateInput {
    let mut spec = json!({"machineConfigPoolSelector": selecting("worker")});
    if !kubelet.is_null() {
        spec["kubeletConfig"] = kubelet;
    }
    if let Value::Object(o) = extra {
        for (k, v) in o {
            spec[k] = v;
        }
    }
    input(kubelet_config("kc", spec), vec![pool("worker")])
}

pub(super) fn file_text(mc: &Value, path: &str) -> Option<String> {
    find_file(&[mc], path).map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn paths(mc: &Value) -> Vec<String> {
    mc.pointer("/spec/config/storage/files")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|f| f["path"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn conf(out: &GenerateOutcome) -> String {
    out.machine_configs_json()
        .last()
        .and_then(|mc| file_text(mc, KUBELET_CONF_PATH))
        .unwrap_or_default()
}

fn error_of(inp: &GenerateInput) -> Option<String> {
    generate(inp).error
}

/// The conditions as (type, status, message).
pub(super) fn conditions(out: &GenerateOutcome) -> Vec<(String, String, String)> {
    out.object_after
        .conditions
        .iter()
        .map(|c| (c.type_.clone(), c.status.clone(), c.message().to_string()))
        .collect()
}

fn c(kind: &str, status: &str, msg: &str) -> (String, String, String) {
    (kind.into(), status.into(), msg.into())
}

#[test]
fn validation_log_level_range() {
    let out = generate(&worker(Value::Null, json!({"logLevel": 11})));
    let msg = "KubeletConfig's LogLevel is not valid [0,10]: 11";
    assert_eq!(out.error.as_deref(), Some(msg));
    let failed = format!("Error: {msg}");
    assert_eq!(
        conditions(&out),
        vec![
            c("Accepted", "False", &failed),
            c("Failure", "True", &failed)
        ]
    );
    assert!(out.machine_configs_json().is_empty());
    assert!(error_of(&worker(Value::Null, json!({"logLevel": 10}))).is_none());
    assert!(error_of(&worker(Value::Null, json!({"logLevel": 0}))).is_none());
}

#[test]
fn validation_forbidden_fields() {
    let cases = [
        (json!({"cgroupDriver": "cgroupfs"}), "KubeletConfiguration: cgroupDriver is not allowed to be set, but contains: cgroupfs"),
        (json!({"clusterDNS": ["1.1.1.1", "8.8.8.8"]}), "KubeletConfiguration: clusterDNS is not allowed to be set, but contains: [1.1.1.1 8.8.8.8]"),
        (json!({"clusterDomain": "x.local"}), "KubeletConfiguration: clusterDomain is not allowed to be set, but contains: x.local"),
        (json!({"featureGates": {"B": false, "A": true}}), "KubeletConfiguration: featureGates is not allowed to be set, but contains: map[A:true B:false]"),
        (json!({"failSwapOn": false}), "KubeletConfiguration: failSwapOn is not allowed to be set, but contains: false"),
        (json!({"memorySwap": {"swapBehavior": "LimitedSwap"}}), "KubeletConfiguration: swapBehavior is not allowed to be set, but contains: LimitedSwap"),
        (json!({"systemReservedCgroup": "/a.slice", "systemCgroups": "/b.slice"}), "KubeletConfiguration: systemReservedCgroup (/a.slice) must match systemCgroups (/b.slice)"),
    ];
    for (kc, msg) in cases {
        assert_eq!(error_of(&worker(kc, Value::Null)).as_deref(), Some(msg));
    }
    // Empty values are allowed.
    for kc in [
        json!({"cgroupDriver": ""}),
        json!({"clusterDNS": []}),
        json!({"featureGates": {}}),
        json!({"memorySwap": {}}),
    ] {
        assert_eq!(error_of(&worker(kc, Value::Null)), None);
    }
}

#[test]
fn validation_auto_sizing_with_system_reserved() {
    let msg = "KubeletConfiguration: autoSizingReserved and systemdReserved cannot be set together";
    let reserved = json!({"systemReserved": {"pid": "100"}});
    assert_eq!(
        error_of(&worker(
            reserved.clone(),
            json!({"autoSizingReserved": true})
        ))
        .as_deref(),
        Some(msg)
    );
    assert_eq!(
        error_of(&worker(reserved, json!({"autoSizingReserved": false}))),
        None
    );
}

#[test]
fn validation_decode_errors() {
    assert_eq!(
        error_of(&worker(json!({"maxPods": "many"}), Value::Null)).as_deref(),
        Some("KubeletConfig could not be unmarshalled, err: json: cannot unmarshal string into Go struct field KubeletConfiguration.maxPods of type int32")
    );
    assert_eq!(
        error_of(&worker(json!({"syncFrequency": "1d"}), Value::Null)).as_deref(),
        Some("KubeletConfig could not be unmarshalled, err: time: unknown unit \"d\" in duration \"1d\"")
    );
}

#[test]
fn no_matching_pool() {
    let msg = "could not find any MachineConfigPool set for KubeletConfig";
    let mut inp = worker(json!({"maxPods": 100}), Value::Null);
    inp.pools = typed_all(vec![pool("master")]);
    let out = generate(&inp);
    assert_eq!(out.error.as_deref(), Some(msg));
    assert!(out.actions().is_empty());
    // An empty or missing selector selects nothing.
    for sel in [json!({}), Value::Null] {
        let mut inp = worker(json!({"maxPods": 100}), Value::Null);
        set(&mut inp.object, &["spec", "machineConfigPoolSelector"], sel);
        assert_eq!(error_of(&inp).as_deref(), Some(msg));
    }
}

#[test]
fn invalid_selector_fails_before_pools_are_read() {
    let mut inp = worker(Value::Null, Value::Null);
    set(
        &mut inp.object,
        &["spec", "machineConfigPoolSelector"],
        json!({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]}),
    );
    inp.pools.clear();
    assert_eq!(
        error_of(&inp).as_deref(),
        Some("invalid label selector: \"Equals\" is not a valid label selector operator")
    );
}

#[test]
fn static_pod_path_rules() {
    let spp = json!({"staticPodPath": ""});
    // Control-plane pools reject the key, even empty.
    for (name, node_selector) in [
        ("master", json!(null)),
        ("arbiter", json!(null)),
        (
            "infra",
            json!({"matchLabels": {"node-role.kubernetes.io/master": ""}}),
        ),
        (
            "infra",
            json!({"matchExpressions": [{"key": "node-role.kubernetes.io/master", "operator": "Exists"}]}),
        ),
        (
            "infra",
            json!({"matchExpressions": [{"key": "node-role.kubernetes.io/master", "operator": "In", "values": [""]}]}),
        ),
    ] {
        let mut p = pool(name);
        p["spec"]["nodeSelector"] = node_selector;
        let mut inp = input(
            kubelet_config(
                "kc",
                json!({"machineConfigPoolSelector": selecting(name), "kubeletConfig": spp}),
            ),
            vec![p],
        );
        set(
            &mut inp.object,
            &["spec", "kubeletConfig"],
            json!({"staticPodPath": ""}),
        );
        assert_eq!(
            error_of(&inp),
            Some(format!("KubeletConfiguration: staticPodPath is not allowed to be set for control plane pool \"{name}\""))
        );
    }
    // NotIn does not make a control-plane pool; an empty path is then ignored.
    let mut p = pool("infra");
    p["spec"]["nodeSelector"] = json!({"matchExpressions": [{"key": "node-role.kubernetes.io/master", "operator": "NotIn", "values": [""]}]});
    let inp = input(
        kubelet_config(
            "kc",
            json!({"machineConfigPoolSelector": selecting("infra"), "kubeletConfig": {"staticPodPath": ""}}),
        ),
        vec![p],
    );
    assert_eq!(error_of(&inp), None);
    assert_eq!(
        error_of(&worker(json!({"staticPodPath": "/etc/pods"}), Value::Null)).as_deref(),
        Some("KubeletConfiguration: staticPodPath must be empty for pool \"worker\", but contains: /etc/pods")
    );
}

#[test]
fn generated_machine_config_shape() {
    let out = generate(&worker(json!({"maxPods": 100}), Value::Null));
    assert_eq!(out.error, None);
    assert_eq!(out.actions(), vec!["create 99-worker-generated-kubelet"]);
    let mc = &out.machine_configs_json()[0];
    assert_eq!(
        mc["metadata"]["labels"],
        json!({"machineconfiguration.openshift.io/role": "worker"})
    );
    assert_eq!(
        mc["metadata"]["annotations"],
        json!({"machineconfiguration.openshift.io/generated-by-controller-version": VERSION})
    );
    assert_eq!(
        mc["metadata"]["ownerReferences"][0]["kind"],
        "KubeletConfig"
    );
    assert_eq!(mc["metadata"]["ownerReferences"][0]["uid"], "uid-kc");
    assert_eq!(mc["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(paths(mc), vec![KUBELET_CONF_PATH]);
    let text = conf(&out);
    assert!(text.contains("maxPods: 100\n"), "{text}");
    // Every known gate is written with the base's own.
    assert!(
        text.contains("featureGates:\n  Base: true\n  \"Off\": false\n  \"On\": true\n"),
        "{text}"
    );
    assert_eq!(
        out.object_after
            .annotations
            .get(MC_NAME_SUFFIX_ANNOTATION)
            .map(String::as_str),
        Some("")
    );
    assert_eq!(
        out.object_after.finalizers,
        vec!["99-worker-generated-kubelet"]
    );
    assert_eq!(
        conditions(&out),
        vec![
            c("Accepted", "True", "Success"),
            c("Success", "True", "Success")
        ]
    );
}

#[test]
fn files_order_log_level_and_node_sizing() {
    let out = generate(&worker(
        Value::Null,
        json!({"logLevel": 4, "autoSizingReserved": true}),
    ));
    let mc = &out.machine_configs_json()[0];
    assert_eq!(
        paths(mc),
        vec![NODE_SIZING_PATH, LOG_LEVEL_PATH, KUBELET_CONF_PATH]
    );
    assert_eq!(
        file_text(mc, LOG_LEVEL_PATH).as_deref(),
        Some("[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=4\"\n")
    );
    assert_eq!(
        file_text(mc, NODE_SIZING_PATH).as_deref(),
        Some("NODE_SIZING_ENABLED=true\nSYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n")
    );
    let out = generate(&worker(Value::Null, json!({"autoSizingReserved": false})));
    assert_eq!(
        file_text(&out.machine_configs_json()[0], NODE_SIZING_PATH).as_deref(),
        Some("NODE_SIZING_ENABLED=false\nSYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n")
    );
}

#[test]
fn system_reserved_moves_to_node_sizing() {
    let out = generate(&worker(
        json!({"systemReserved": {"memory": "2Gi", "cpu": "", "pid": "1000"}}),
        json!({"autoSizingReserved": false}),
    ));
    let mc = &out.machine_configs_json()[0];
    // User values win over autoSizingReserved; an empty value takes the default.
    assert_eq!(
        file_text(mc, NODE_SIZING_PATH).as_deref(),
        Some("NODE_SIZING_ENABLED=false\nSYSTEM_RESERVED_MEMORY=2Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n")
    );
    let text = conf(&out);
    assert!(
        text.contains("systemReserved:\n  pid: \"1000\"\n"),
        "{text}"
    );
    assert!(!text.contains("memory: 2Gi"), "{text}");
    // Only other keys: no node-sizing file.
    let out = generate(&worker(
        json!({"systemReserved": {"pid": "1000"}}),
        Value::Null,
    ));
    assert_eq!(
        paths(&out.machine_configs_json()[0]),
        vec![KUBELET_CONF_PATH]
    );
}

#[test]
fn merge_rules() {
    // Zero values do not override; protectKernelDefaults false does (raw text search).
    let text = conf(&generate(&worker(
        json!({"maxPods": 0, "protectKernelDefaults": false}),
        Value::Null,
    )));
    assert!(text.contains("maxPods: 250\n"), "{text}");
    assert!(!text.contains("protectKernelDefaults"), "{text}");
    // enforceNodeAllocatable without a system-reserved key clears systemReservedCgroup.
    let text = conf(&generate(&worker(
        json!({"enforceNodeAllocatable": ["pods"]}),
        Value::Null,
    )));
    assert!(!text.contains("systemReservedCgroup"), "{text}");
    assert!(text.contains("enforceNodeAllocatable:\n- pods\n"), "{text}");
    let text = conf(&generate(&worker(
        json!({"enforceNodeAllocatable": ["pods", "system-reserved-compressible"]}),
        Value::Null,
    )));
    assert!(
        text.contains("systemReservedCgroup: /system.slice\n"),
        "{text}"
    );
    // reservedSystemCPUs drops system-reserved enforcement and forces pods first.
    let text = conf(&generate(&worker(
        json!({"reservedSystemCPUs": "0-1", "enforceNodeAllocatable": ["kube-reserved", "system-reserved"]}),
        Value::Null,
    )));
    assert!(!text.contains("systemReservedCgroup"), "{text}");
    assert!(
        text.contains("enforceNodeAllocatable:\n- pods\n- kube-reserved\n"),
        "{text}"
    );
}

#[test]
fn merged_cgroup_mismatch_fails_after_merge() {
    let msg = "invalid merged configuration: systemReservedCgroup (/system.slice) must match systemCgroups (/other.slice)";
    let out = generate(&worker(
        json!({"systemCgroups": "/other.slice"}),
        Value::Null,
    ));
    assert_eq!(out.error.as_deref(), Some(msg));
    assert!(out.machine_configs_json().is_empty());
}

#[test]
fn tls_profile_overrides_template() {
    let text = conf(&generate(&worker(
        Value::Null,
        json!({"tlsSecurityProfile": {"type": "Custom", "custom": {"minTLSVersion": "VersionTLS13", "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256", "BOGUS"]}}}),
    )));
    assert!(text.contains("tlsMinVersion: VersionTLS13\n"), "{text}");
    assert!(
        text.contains("tlsCipherSuites:\n- TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n"),
        "{text}"
    );
    // A user's own kubelet TLS settings are merged over the profile.
    let text = conf(&generate(&worker(
        json!({"tlsMinVersion": "VersionTLS11"}),
        json!({"tlsSecurityProfile": {"type": "Modern"}}),
    )));
    assert!(text.contains("tlsMinVersion: VersionTLS11\n"), "{text}");
}

#[test]
fn worker_latency_profile_only_for_worker_pool() {
    let node = json!({"spec": {"workerLatencyProfile": "LowUpdateSlowReaction"}});
    let mut inp = worker(Value::Null, Value::Null);
    inp.node_config = Some(node.clone());
    assert!(conf(&generate(&inp)).contains("nodeStatusUpdateFrequency: 1m0s\n"));
    let mut inp = input(
        kubelet_config(
            "kc",
            json!({"machineConfigPoolSelector": selecting("infra")}),
        ),
        vec![pool("infra")],
    );
    inp.node_config = Some(node);
    assert!(conf(&generate(&inp)).contains("nodeStatusUpdateFrequency: 10s\n"));
    let mut inp = worker(Value::Null, Value::Null);
    inp.node_config =
        Some(json!({"spec": {"workerLatencyProfile": "MediumUpdateAverageReaction"}}));
    assert!(conf(&generate(&inp)).contains("nodeStatusUpdateFrequency: 20s\n"));
    inp.node_config = Some(json!({"spec": {"workerLatencyProfile": "FastUpdate"}}));
    assert!(conf(&generate(&inp)).contains("nodeStatusUpdateFrequency: 10s\n"));
}

#[test]
fn annotations_replaced_only_without_suffix_annotation() {
    let mut inp = worker(Value::Null, Value::Null);
    set(
        &mut inp.object,
        &["metadata", "annotations"],
        json!({"user": "x"}),
    );
    let out = generate(&inp);
    assert_eq!(
        out.object_after.annotations,
        [(MC_NAME_SUFFIX_ANNOTATION.to_string(), String::new())].into()
    );
    set(
        &mut inp.object,
        &["metadata", "annotations"],
        json!({"user": "x", MC_NAME_SUFFIX_ANNOTATION: ""}),
    );
    let out = generate(&inp);
    assert_eq!(out.object_after.annotations.len(), 2);
}

#[test]
fn finalizers_without_kubelet_are_dropped() {
    let mut inp = worker(Value::Null, Value::Null);
    set(
        &mut inp.object,
        &["metadata", "finalizers"],
        json!(["99-old-kubelet", "some-uid"]),
    );
    assert_eq!(
        generate(&inp).object_after.finalizers,
        vec!["99-worker-generated-kubelet"]
    );
    set(
        &mut inp.object,
        &["metadata", "finalizers"],
        json!(["99-old-kubelet", "99-worker-generated-kubelet"]),
    );
    assert_eq!(
        generate(&inp).object_after.finalizers,
        vec!["99-old-kubelet", "99-worker-generated-kubelet"]
    );
}

#[test]
fn status_conditions_keep_three_accepted_and_one_legacy() {
    let mut inp = worker(Value::Null, Value::Null);
    set(
        &mut inp.object,
        &["status"],
        json!({"conditions": [
            {"type": "Accepted", "status": "False", "message": "a"},
            {"type": "Failure", "status": "True", "message": "a"},
            {"type": "Accepted", "status": "False", "message": "b"},
            {"type": "Accepted", "status": "False", "message": "c"},
        ]}),
    );
    assert_eq!(
        conditions(&generate(&inp)),
        vec![
            c("Accepted", "False", "b"),
            c("Accepted", "False", "c"),
            c("Accepted", "True", "Success"),
            c("Success", "True", "Success"),
        ]
    );
    // The same message as the last one is not added again.
    set(
        &mut inp.object,
        &["status"],
        json!({"conditions": [
            {"type": "Accepted", "status": "True", "message": "Success"},
            {"type": "Success", "status": "True", "message": "Success"},
        ]}),
    );
    assert_eq!(
        conditions(&generate(&inp)),
        vec![
            c("Accepted", "True", "Success"),
            c("Success", "True", "Success")
        ]
    );
}

fn generated(name: &str, version: &str, files: Vec<Value>) -> Value {
    let mut mc = machine_config(name, files);
    mc["metadata"]["annotations"] =
        json!({"machineconfiguration.openshift.io/generated-by-controller-version": version});
    mc
}

fn current_conf(gates: &str) -> Vec<Value> {
    vec![ign_file(
        KUBELET_CONF_PATH,
        format!("featureGates:\n{gates}").as_bytes(),
    )]
}

#[test]
fn up_to_date_pool_is_skipped() {
    let mut inp = worker(Value::Null, Value::Null);
    set(
        &mut inp.object,
        &["status"],
        json!({"observedGeneration": 1, "conditions": [
            {"type": "Accepted", "status": "True", "message": "Success"},
        ]}),
    );
    inp.existing_machine_configs = typed_all(vec![generated(
        "99-worker-generated-kubelet",
        VERSION,
        current_conf("  Base: true\n  \"On\": true\n  \"Off\": false\n"),
    )]);
    let out = generate(&inp);
    assert_eq!(out.error, None);
    assert!(out.actions().is_empty());
    // Other gates, another version or a newer generation: written again.
    let mut stale = inp.clone();
    stale.existing_machine_configs[0] = typed(generated(
        "99-worker-generated-kubelet",
        VERSION,
        current_conf("  Base: true\n"),
    ));
    assert_eq!(
        generate(&stale).actions(),
        vec!["update 99-worker-generated-kubelet"]
    );
    let mut newer = inp.clone();
    set(&mut newer.object, &["metadata", "generation"], json!(2));
    assert_eq!(
        generate(&newer).actions(),
        vec!["update 99-worker-generated-kubelet"]
    );
}

#[test]
fn existing_machine_config_without_kubelet_conf_fails_the_gate_check() {
    let mut inp = worker(Value::Null, Value::Null);
    inp.existing_machine_configs = typed_all(vec![generated(
        "99-worker-generated-kubelet",
        VERSION,
        vec![],
    )]);
    let out = generate(&inp);
    let err = "error finding kubelet config: could not find Kubelet Config";
    assert_eq!(out.error.as_deref(), Some(err));
    let msg = format!("could not check if original and machine config feature gates match: {err}");
    assert_eq!(
        conditions(&out),
        vec![c("Accepted", "False", &msg), c("Failure", "True", &msg)]
    );
    // Without any config it only matters whether the base has gates (it has): rewritten.
    inp.existing_machine_configs = typed_all(vec![json!({
        "metadata": {"name": "99-worker-generated-kubelet"}, "spec": {},
    })]);
    let out = generate(&inp);
    assert_eq!(out.error, None);
    assert_eq!(out.actions(), vec!["update 99-worker-generated-kubelet"]);
}

#[test]
fn stale_generated_machine_configs_are_cleaned_up() {
    let mut inp = worker(Value::Null, Value::Null);
    inp.existing_machine_configs = typed_all(vec![
        generated("99-worker-generated-kubelet-3", "old", vec![]),
        generated("98-worker-generated-kubelet", "old", vec![]),
        generated("99-worker-generated-containerruntime", "old", vec![]),
    ]);
    assert_eq!(
        generate(&inp).actions(),
        vec![
            "create 99-worker-generated-kubelet",
            "delete 99-worker-generated-kubelet-3"
        ]
    );
}

#[test]
fn deleted_resource_cascades_to_its_first_finalizer() {
    let mut inp = worker(json!({"cgroupDriver": "x"}), Value::Null);
    set(
        &mut inp.object,
        &["metadata", "deletionTimestamp"],
        json!("2024-01-02T00:00:00Z"),
    );
    set(
        &mut inp.object,
        &["metadata", "finalizers"],
        json!(["mc-uid-7", "99-worker-generated-kubelet"]),
    );
    let mut by_uid = generated("99-worker-generated-kubelet-1", VERSION, vec![]);
    by_uid["metadata"]["uid"] = json!("mc-uid-7");
    inp.existing_machine_configs = typed_all(vec![
        by_uid,
        generated("99-worker-generated-kubelet", VERSION, vec![]),
    ]);
    // No validation, no status: the MC the first finalizer names (here by UID) goes.
    let out = generate(&inp);
    assert_eq!(out.error, None);
    assert_eq!(out.actions(), vec!["delete 99-worker-generated-kubelet-1"]);
    assert_eq!(
        out.object_after.finalizers,
        vec!["99-worker-generated-kubelet"]
    );
    assert!(out.object_after.conditions.is_empty());
    set(&mut inp.object, &["metadata", "finalizers"], json!([]));
    let out = generate(&inp);
    assert!(out.actions().is_empty());
    assert_eq!(out.error, None);
}

#[test]
fn several_pools_share_the_suffix_recorded_by_the_first() {
    let other = {
        let mut o = kubelet_config(
            "a-older",
            json!({"machineConfigPoolSelector": selecting("worker")}),
        );
        o["metadata"]["annotations"] = json!({MC_NAME_SUFFIX_ANNOTATION: "2"});
        o
    };
    let mut inp = input(
        kubelet_config(
            "kc",
            json!({"machineConfigPoolSelector": {"matchLabels": {"custom": "yes"}}}),
        ),
        vec![pool("infra"), pool("worker")],
    );
    for p in &mut inp.pools {
        p.metadata.labels.insert("custom".into(), "yes".into());
    }
    inp.other_objects = typed_resources(vec![other]);
    let out = generate(&inp);
    assert_eq!(out.error, None);
    // infra (first by name) has only this resource: the plain name and suffix "". worker
    // then reads "" back and takes its plain name too.
    assert_eq!(
        out.actions(),
        vec![
            "create 99-infra-generated-kubelet",
            "create 99-worker-generated-kubelet"
        ]
    );
    assert_eq!(
        out.object_after.finalizers,
        vec!["99-infra-generated-kubelet", "99-worker-generated-kubelet"]
    );
    assert_eq!(
        out.machine_configs_json()[0]["metadata"]["labels"]
            ["machineconfiguration.openshift.io/role"],
        "infra"
    );
}
