//! Unit tests of the generators as each release runs them: one per behaviour of
//! [`crate::release::Profile`] that the kubelet-config and container-runtime-config
//! controllers change between releases, on a small synthetic cluster.

use serde_json::{json, Value};

use super::cluster_config::ClusterConfigInput;
use super::crio::STORAGE_CONF_PATH;
use super::kubelet::KUBELET_CONF_PATH;
use super::node_config::cgroup_kernel_arguments_as;
use super::registries::{
    update_policy_json, validate_registries_conf_scopes, MirrorObject, MirrorRule,
    REGISTRIES_CONF_PATH,
};
use super::tests::{
    conditions, file_text, machine_config, selecting, typed_all, typed_resource, VERSION,
};
use super::{generate, ign_file, node_config, registries, FeatureGates, GenerateInput};
use crate::release::{Profile, Release};

fn release(minor: u8) -> Release {
    Release::of_minor(minor).unwrap_or_default()
}

fn profile(minor: u8) -> Profile {
    release(minor).profile()
}

/// A kubelet configuration as a release's role template carries it.
const TEMPLATE_KUBELET: &str = "apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: 250
systemCgroups: /system.slice
tlsMinVersion: VersionTLS12
tlsCipherSuites:
- TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
featureGates:
  FromTemplate: true
";

/// A pool the render controller has rendered (`spec.configuration.name` set).
fn rendered_pool(name: &str) -> Value {
    json!({
        "metadata": {
            "name": name,
            "labels": {format!("pools.operator.machineconfiguration.openshift.io/{name}"): ""},
        },
        "spec": {"configuration": {"name": format!("rendered-{name}-1")}},
    })
}

fn kubelet_input(minor: u8, spec: Value) -> GenerateInput {
    let mut spec = spec;
    spec["machineConfigPoolSelector"] = selecting("worker");
    GenerateInput {
        object: typed_resource(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "KubeletConfig",
            "metadata": {"name": "kc", "uid": "uid-kc", "generation": 1,
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": spec,
        })),
        pools: typed_all(vec![rendered_pool("worker")]),
        base_machine_configs: typed_all(vec![machine_config(
            "01-worker-kubelet",
            vec![ign_file(KUBELET_CONF_PATH, TEMPLATE_KUBELET.as_bytes())],
        )]),
        feature_gates: FeatureGates {
            enabled: vec!["ExternalCloudProvider".into(), "On".into()],
            disabled: vec!["Off".into()],
        },
        controller_version: VERSION.into(),
        release: release(minor),
        ..GenerateInput::default()
    }
}

/// The generated MachineConfig's `kubelet.conf` and Ignition version.
fn kubelet_conf(minor: u8, spec: Value) -> (String, String) {
    let out = generate(&kubelet_input(minor, spec));
    assert_eq!(out.error, None, "4.{minor}");
    let mc = out.machine_configs_json().pop().unwrap_or(Value::Null);
    let version = mc
        .pointer("/spec/config/ignition/version")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    (
        file_text(&mc, KUBELET_CONF_PATH).unwrap_or_default(),
        version,
    )
}

fn kubelet_error(minor: u8, spec: Value) -> Option<String> {
    generate(&kubelet_input(minor, spec)).error
}

#[test]
fn generated_configs_are_written_in_the_release_ignition_version() {
    assert_eq!(kubelet_conf(18, json!({})).1, "3.4.0");
    assert_eq!(kubelet_conf(19, json!({})).1, "3.5.0");
    assert_eq!(kubelet_conf(22, json!({})).1, "3.5.0");
}

#[test]
fn kubelet_conf_is_indented_json_until_4_16_then_yaml() {
    let (json_text, _) = kubelet_conf(16, json!({"kubeletConfig": {"maxPods": 100}}));
    assert!(
        json_text.starts_with("{\n  \"kind\": \"KubeletConfiguration\",\n  \"apiVersion\": \"kubelet.config.k8s.io/v1beta1\",\n"),
        "{json_text}"
    );
    assert!(json_text.ends_with("}\n"), "{json_text}");
    let parsed: Value = serde_json::from_str(&json_text).unwrap_or(Value::Null);
    assert_eq!(parsed["maxPods"], 100);
    let (yaml_text, _) = kubelet_conf(17, json!({"kubeletConfig": {"maxPods": 100}}));
    assert!(yaml_text.starts_with("apiVersion: kubelet.config.k8s.io/v1beta1\n"));
    assert!(yaml_text.contains("\nmaxPods: 100\n"), "{yaml_text}");
}

#[test]
fn kubelet_conf_holds_only_the_fields_of_the_release_kubelet_types() {
    let has = |minor: u8, field: &str| kubelet_conf(minor, json!({})).0.contains(field);
    assert!(!has(15, "imageMaximumGCAge"));
    assert!(has(16, "imageMaximumGCAge"));
    assert!(!has(18, "crashLoopBackOff"));
    assert!(has(19, "crashLoopBackOff"));
    assert!(!has(16, "\"text\""));
    assert!(has(17, "text:"));
    // A field the release does not know is dropped from the user's configuration too.
    let spec = json!({"kubeletConfig": {"podLogsDir": "/var/pods"}});
    assert!(!kubelet_conf(16, spec.clone()).0.contains("/var/pods"));
    assert!(kubelet_conf(17, spec).0.contains("podLogsDir: /var/pods"));
}

#[test]
fn release_4_14_leaves_external_cloud_provider_out_of_the_gates() {
    let gates = |minor: u8| -> Value {
        let text = kubelet_conf(minor, json!({})).0;
        let v: Value = serde_yaml_ng::from_str(&text).unwrap_or(Value::Null);
        v["featureGates"].clone()
    };
    assert_eq!(
        gates(14),
        json!({"FromTemplate": true, "Off": false, "On": true})
    );
    assert_eq!(gates(15)["ExternalCloudProvider"], true);
}

#[test]
fn until_4_16_tls_is_the_resource_profile_else_intermediate() {
    let tls = |minor: u8, spec: Value| -> (Value, Value) {
        let text = kubelet_conf(minor, spec).0;
        let v: Value = serde_yaml_ng::from_str(&text).unwrap_or(Value::Null);
        (v["tlsMinVersion"].clone(), v["tlsCipherSuites"].clone())
    };
    // 4.16: the template's TLS settings are replaced by Intermediate's TLS 1.2 suites.
    let (min, ciphers) = tls(16, json!({}));
    assert_eq!(min, "VersionTLS12");
    assert_eq!(ciphers.as_array().map(Vec::len), Some(6));
    // 4.17: the template (rendered with the APIServer's profile) is kept.
    let (_, ciphers) = tls(17, json!({}));
    assert_eq!(ciphers, json!(["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]));
    // Modern has only TLS 1.3 suites, which have an IANA name from 4.18.
    let modern = json!({"tlsSecurityProfile": {"type": "Modern", "modern": {}}});
    assert_eq!(
        tls(17, modern.clone()),
        (json!("VersionTLS13"), Value::Null)
    );
    assert_eq!(
        tls(18, modern).1,
        json!([
            "TLS_AES_128_GCM_SHA256",
            "TLS_AES_256_GCM_SHA384",
            "TLS_CHACHA20_POLY1305_SHA256"
        ])
    );
}

#[test]
fn log_level_zero_is_refused_until_4_21_with_a_pointer() {
    let spec = json!({"logLevel": 0});
    assert_eq!(
        kubelet_error(21, spec.clone()),
        Some(format!(
            "KubeletConfig's LogLevel is not valid [1,10]: {}",
            super::kubelet::GO_POINTER
        ))
    );
    assert_eq!(kubelet_error(22, spec), None);
    assert_eq!(
        kubelet_error(22, json!({"logLevel": 11})),
        Some("KubeletConfig's LogLevel is not valid [0,10]: 11".into())
    );
}

#[test]
fn static_pod_path_is_refused_everywhere_until_4_21_then_per_pool() {
    let spec = json!({"kubeletConfig": {"staticPodPath": "/x"}});
    assert_eq!(
        kubelet_error(21, spec.clone()),
        Some(
            "KubeletConfiguration: staticPodPath is not allowed to be set, but contains: /x".into()
        )
    );
    assert_eq!(
        kubelet_error(22, spec),
        Some(
            "KubeletConfiguration: staticPodPath must be empty for pool \"worker\", but contains: /x"
                .into()
        )
    );
}

#[test]
fn swap_settings_are_refused_from_4_21() {
    for spec in [
        json!({"kubeletConfig": {"failSwapOn": false}}),
        json!({"kubeletConfig": {"memorySwap": {"swapBehavior": "LimitedSwap"}}}),
    ] {
        assert_eq!(kubelet_error(20, spec.clone()), None, "{spec}");
        assert!(kubelet_error(21, spec.clone()).is_some(), "{spec}");
    }
}

#[test]
fn system_reserved_cgroup_rules_are_of_4_22() {
    let spec =
        json!({"kubeletConfig": {"systemReservedCgroup": "/a.slice", "systemCgroups": "/b.slice"}});
    assert_eq!(kubelet_error(21, spec.clone()), None);
    assert_eq!(
        kubelet_error(22, spec),
        Some(
            "KubeletConfiguration: systemReservedCgroup (/a.slice) must match systemCgroups (/b.slice)"
                .into()
        )
    );
}

#[test]
fn until_4_21_a_kubelet_config_gets_one_condition() {
    let c = |t: &str, s: &str, m: &str| (t.to_string(), s.to_string(), m.to_string());
    let ok = generate(&kubelet_input(21, json!({})));
    assert_eq!(conditions(&ok), vec![c("Success", "True", "Success")]);
    let failed = generate(&kubelet_input(21, json!({"logLevel": 20})));
    let msg = format!(
        "Error: KubeletConfig's LogLevel is not valid [1,10]: {}",
        super::kubelet::GO_POINTER
    );
    assert_eq!(conditions(&failed), vec![c("Failure", "False", &msg)]);
    let ok = generate(&kubelet_input(22, json!({})));
    assert_eq!(
        conditions(&ok),
        vec![
            c("Accepted", "True", "Success"),
            c("Success", "True", "Success")
        ]
    );
}

#[test]
fn until_4_19_an_unrendered_pool_fails_the_sync_without_a_status() {
    let unrendered = |minor: u8| {
        let mut input = kubelet_input(minor, json!({}));
        input.pools = typed_all(vec![json!({
            "metadata": {"name": "worker", "labels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}},
            "spec": {},
        })]);
        generate(&input)
    };
    let out = unrendered(19);
    assert_eq!(
        out.error.as_deref(),
        Some("Pool worker is unconfigured, pausing 5s for renderer to initialize")
    );
    assert!(out.object_after.conditions.is_empty());
    assert!(out.writes.is_empty());
    assert_eq!(unrendered(20).error, None);
}

#[test]
fn an_up_to_date_machine_config_ends_the_sync_until_4_21() {
    // A KubeletConfig synced before, its MachineConfig of this controller version.
    let synced = |minor: u8| {
        let mut input = kubelet_input(minor, json!({}));
        let first = generate(&input);
        input.existing_machine_configs = first.machine_configs().into_iter().cloned().collect();
        let mut object = input.object.to_json();
        object["metadata"]["annotations"] =
            json!({"machineconfiguration.openshift.io/mc-name-suffix": ""});
        object["metadata"]["finalizers"] = json!(["99-worker-generated-kubelet"]);
        object["status"] = json!({"observedGeneration": 1, "conditions": [
            {"type": "Success", "status": "True", "message": "Success"}]});
        input.object = typed_resource(object);
        generate(&input)
    };
    for minor in [19, 21] {
        let out = synced(minor);
        assert!(out.writes.is_empty(), "4.{minor}");
        // Ended before the status update: the one condition as stored.
        assert_eq!(out.object_after.conditions.len(), 1, "4.{minor}");
    }
    let out = synced(22);
    assert!(out.writes.is_empty());
    // 4.22 goes on with the next pool, then to the status update.
    let types: Vec<&str> = out
        .object_after
        .conditions
        .iter()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(types, ["Accepted", "Success"]);
}

fn crio_input(minor: u8, runtime: Value) -> GenerateInput {
    GenerateInput {
        object: typed_resource(json!({
            "kind": "ContainerRuntimeConfig",
            "metadata": {"name": "crc", "uid": "uid-crc", "generation": 1,
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"machineConfigPoolSelector": selecting("worker"), "containerRuntimeConfig": runtime},
        })),
        pools: typed_all(vec![rendered_pool("worker")]),
        base_machine_configs: typed_all(vec![
            machine_config(
                "00-worker",
                vec![ign_file(
                    STORAGE_CONF_PATH,
                    b"[storage]\ndriver = \"overlay\"\n[storage.options]\nadditionalimagestores = []\n",
                )],
            ),
            machine_config(
                "01-worker-container-runtime",
                vec![
                    ign_file(REGISTRIES_CONF_PATH, b"x"),
                    ign_file("/etc/containers/policy.json", b"{}"),
                ],
            ),
        ]),
        feature_gates: FeatureGates {
            enabled: vec!["AdditionalStorageConfig".into()],
            disabled: vec![],
        },
        controller_version: VERSION.into(),
        release: release(minor),
        ..GenerateInput::default()
    }
}

#[test]
fn a_container_runtime_failure_is_false_until_4_21() {
    let status = |minor: u8| {
        let out = generate(&crio_input(minor, json!({"pidsLimit": -1})));
        conditions(&out)
            .first()
            .map(|c| c.1.clone())
            .unwrap_or_default()
    };
    assert_eq!(status(21), "False");
    assert_eq!(status(22), "True");
    let out = generate(&crio_input(18, json!({"logLevel": "debug"})));
    let version = out
        .machine_configs_json()
        .first()
        .and_then(|mc| mc.pointer("/spec/config/ignition/version").cloned());
    assert_eq!(version, Some(json!("3.4.0")));
}

#[test]
fn additional_stores_are_read_from_4_22_only() {
    let stores = json!({"additionalImageStores": [{"path": "/mnt/images"}]});
    let storage = |minor: u8| {
        let out = generate(&crio_input(minor, stores.clone()));
        out.machine_configs_json()
            .first()
            .and_then(|mc| file_text(mc, STORAGE_CONF_PATH))
    };
    assert_eq!(storage(21), None);
    assert!(storage(22).is_some_and(|t| t.contains("/mnt/images")));
}

const RELEASE_IMAGE: &str =
    "quay.io/ocp/release@sha256:1111111111111111111111111111111111111111111111111111111111111111";

fn registries_input(minor: u8, registry_sources: Value, idms: Vec<Value>) -> ClusterConfigInput {
    let template = machine_config(
        "01-worker-container-runtime",
        vec![
            ign_file(
                REGISTRIES_CONF_PATH,
                b"unqualified-search-registries = ['a.io']\n",
            ),
            ign_file(
                "/etc/containers/policy.json",
                br#"{"default":[{"type":"insecureAcceptAnything"}],"transports":{}}"#,
            ),
        ],
    );
    ClusterConfigInput {
        image: Some(json!({"metadata": {"name": "cluster", "uid": "img"},
                           "spec": {"registrySources": registry_sources}})),
        cluster_version: Some(
            json!({"metadata": {"name": "version"}, "status": {"desired": {"image": RELEASE_IMAGE}}}),
        ),
        image_digest_mirror_sets: idms,
        pools: typed_all(vec![json!({"metadata": {"name": "worker", "labels": {
            "machineconfiguration.openshift.io/mco-built-in": ""}}})]),
        base_machine_configs: vec![template],
        controller_version: VERSION.into(),
        release: release(minor),
        ..ClusterConfigInput::default()
    }
}

fn registries_file(minor: u8, sources: Value, idms: Vec<Value>, path: &str) -> Option<String> {
    let out = registries::sync(&registries_input(minor, sources, idms));
    assert_eq!(out.error, None, "4.{minor}");
    out.machine_configs
        .first()
        .and_then(|mc| file_text(mc, path))
}

#[test]
fn registries_conf_has_the_auth_helper_line_from_4_19() {
    let sources = json!({"insecureRegistries": ["i.io"]});
    let conf = |minor| registries_file(minor, sources.clone(), vec![], REGISTRIES_CONF_PATH);
    assert!(conf(18).is_some_and(|t| !t.contains("additional-layer-store-auth-helper")));
    assert!(conf(19).is_some_and(|t| t.contains("additional-layer-store-auth-helper = \"\"")));
}

#[test]
fn policy_json_is_compact_until_4_16() {
    let sources = json!({"blockedRegistries": ["b.io"]});
    let policy = |minor| {
        registries_file(
            minor,
            sources.clone(),
            vec![],
            "/etc/containers/policy.json",
        )
    };
    assert_eq!(
        policy(16).as_deref(),
        Some(
            r#"{"default":[{"type":"insecureAcceptAnything"}],"transports":{"atomic":{"b.io":[{"type":"reject"}]},"docker":{"b.io":[{"type":"reject"}]}}}"#
        )
    );
    assert!(policy(17).is_some_and(|t| t.starts_with("{\n  \"default\": [")));
}

#[test]
fn until_4_15_policy_transports_are_written_without_scopes() {
    let policy = |minor: u8| {
        update_policy_json(
            br#"{"default":[],"transports":{}}"#,
            &[],
            &[],
            RELEASE_IMAGE,
            &profile(minor),
        )
        .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    assert_eq!(
        policy(15).as_deref(),
        Ok(r#"{"default":[],"transports":{"atomic":{},"docker":{}}}"#)
    );
    assert_eq!(
        policy(16).as_deref(),
        Ok(r#"{"default":[],"transports":{}}"#)
    );
}

#[test]
fn until_4_15_mirror_sources_may_not_hold_wildcards() {
    let wildcard = MirrorObject {
        kind: "ImageDigestMirrorSet".into(),
        name: "w".into(),
        rules: vec![MirrorRule {
            source: "*.example.org".into(),
            mirrors: vec!["m.example.net".into()],
            policy: String::new(),
        }],
    };
    let check = |minor: u8| {
        validate_registries_conf_scopes(&[], &[], &[], &[&wildcard], &[], &profile(minor))
            .map_err(|e| e.0)
    };
    assert_eq!(
        check(15),
        Err(
            "wildcard entries are not supported with mirror configuration \"*.example.org\"".into()
        )
    );
    assert_eq!(check(16), Ok(()));
}

#[test]
fn release_4_14_names_two_mirror_set_kinds_in_a_policy_conflict() {
    let set = |policy: &str| MirrorObject {
        kind: "ImageDigestMirrorSet".into(),
        name: policy.into(),
        rules: vec![MirrorRule {
            source: "r.io/a".into(),
            mirrors: vec!["m.io/a".into()],
            policy: policy.into(),
        }],
    };
    let (a, b) = (set("NeverContactSource"), set("AllowContactingSource"));
    let message = |minor: u8| {
        validate_registries_conf_scopes(&[], &[], &[], &[&a, &b], &[], &profile(minor))
            .err()
            .map(|e| e.0)
            .unwrap_or_default()
    };
    assert!(message(14).ends_with("in imagedigestmirrorsets and/or imagetagmirrorsets"));
    assert!(message(15)
        .ends_with("in imagedigestmirrorsets, imagetagmirrorsets, or imagecontentsourcepolicies"));
}

#[test]
fn cgroup_kernel_arguments_follow_the_release() {
    let args = |mode: &str, minor: u8| cgroup_kernel_arguments_as(mode, &[], &profile(minor));
    let v2 = |psi: Option<&str>| -> Result<Vec<String>, String> {
        Ok(
            ["systemd.unified_cgroup_hierarchy=1", "cgroup_no_v1=\"all\""]
                .into_iter()
                .chain(psi)
                .map(str::to_string)
                .collect(),
        )
    };
    assert_eq!(args("v2", 15), v2(Some("psi=1")));
    assert_eq!(args("", 16), v2(Some("psi=0")));
    assert_eq!(args("v2", 20), v2(Some("psi=0")));
    assert_eq!(args("v2", 21), v2(None));
    assert_eq!(
        args("v1", 18),
        Ok(vec![
            "systemd.unified_cgroup_hierarchy=0".to_string(),
            "systemd.legacy_systemd_cgroup_controller=1".to_string(),
        ])
    );
    assert!(args("v1", 19).is_err());
    // Going to v1 drops the v2 arguments, the release's psi one included.
    let existing: Vec<String> = v2(Some("psi=0")).unwrap_or_default();
    assert_eq!(
        cgroup_kernel_arguments_as("v1", &existing, &profile(16)).map(|a| a.len()),
        Ok(2)
    );
}

#[test]
fn the_arbiter_node_config_gets_cgroup_arguments_from_4_19() {
    let karg_count = |minor: u8| {
        let input = ClusterConfigInput {
            node: Some(json!({"metadata": {"name": "cluster"}, "spec": {}})),
            pools: typed_all(vec![json!({"metadata": {"name": "arbiter"}})]),
            base_machine_configs: vec![machine_config(
                "01-worker-kubelet",
                vec![ign_file(KUBELET_CONF_PATH, TEMPLATE_KUBELET.as_bytes())],
            )],
            controller_version: VERSION.into(),
            release: release(minor),
            ..ClusterConfigInput::default()
        };
        let out = node_config::sync(&input);
        assert_eq!(out.error, None);
        out.machine_configs
            .first()
            .and_then(|mc| mc.pointer("/spec/kernelArguments"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    assert_eq!(karg_count(18), 0);
    assert_eq!(karg_count(19), 3);
}

fn with_signature_policy(minor: u8, gates: Option<&[&str]>) -> ClusterConfigInput {
    let mut input = registries_input(minor, json!({}), vec![]);
    input.cluster_image_policies = vec![json!({"metadata": {"name": "signed"}, "spec": {
        "scopes": ["quay.io/signed"],
        "policy": {"rootOfTrust": {"policyType": "PublicKey", "publicKey": {"keyData": "a2V5"}}}}})];
    input.image_policies = vec![
        json!({"metadata": {"name": "p", "namespace": "apps"}, "spec": {
        "scopes": ["quay.io/apps"],
        "policy": {"rootOfTrust": {"policyType": "PublicKey", "publicKey": {"keyData": "a2V5"}}}}}),
    ];
    if let Some(g) = gates {
        input.feature_gate_exists = true;
        input.feature_gates.enabled = g.iter().map(|s| s.to_string()).collect();
    }
    input
}

fn written_paths(input: &ClusterConfigInput) -> Vec<String> {
    let out = registries::sync(input);
    assert_eq!(out.error, None);
    let mc = out
        .machine_configs
        .iter()
        .find(|m| m["metadata"]["name"] == "99-worker-generated-registries")
        .expect("the registries MachineConfig");
    mc.pointer("/spec/config/storage/files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn image_signature_policies_by_release_and_gate() {
    let all = vec![
        "/etc/containers/policy.json".to_string(),
        "/etc/containers/registries.d/sigstore-registries.yaml".to_string(),
        "/etc/crio/policies/apps.json".to_string(),
    ];
    let gate: &[&str] = &["SigstoreImageVerification"];
    // On by default from 4.21: without a FeatureGate, and with the gate listed.
    assert_eq!(written_paths(&with_signature_policy(22, None)), all);
    assert_eq!(written_paths(&with_signature_policy(21, None)), all);
    assert_eq!(written_paths(&with_signature_policy(21, Some(gate))), all);
    // A FeatureGate that does not list it enabled turns it off.
    assert!(written_paths(&with_signature_policy(22, Some(&[]))).is_empty());
    // 4.20: TechPreview only.
    assert!(written_paths(&with_signature_policy(20, None)).is_empty());
    assert_eq!(written_paths(&with_signature_policy(20, Some(gate))), all);
    // 4.19: the v1alpha1 kinds, TechPreview only; 4.18 and before: not read.
    assert!(written_paths(&with_signature_policy(19, None)).is_empty());
    assert_eq!(written_paths(&with_signature_policy(19, Some(gate))), all);
    assert!(written_paths(&with_signature_policy(18, Some(gate))).is_empty());
}

#[test]
fn an_image_policy_inside_a_cluster_scope_is_left_out_and_reported() {
    let mut input = with_signature_policy(22, None);
    input.image_policies[0]["spec"]["scopes"] = json!(["quay.io/signed/app", "quay.io/apps"]);
    let policies = registries::image_policies(&input, &input.release.profile()).expect("valid");
    assert_eq!(
        policies.namespaced.keys().collect::<Vec<_>>(),
        ["quay.io/apps"]
    );
    assert_eq!(policies.conflicts.len(), 1);
    assert_eq!(
        policies.conflicts[0].message(),
        "has conflicting scope(s) [\"quay.io/signed/app\"] that equal to or nest inside existing clusterimagepolicy, only policy from clusterimagepolicy scope(s) will be applied"
    );
}

#[test]
fn a_policy_without_its_key_fails_the_sync_without_a_panic() {
    let mut input = with_signature_policy(22, None);
    input.cluster_image_policies[0]["spec"]["policy"]["rootOfTrust"] =
        json!({"policyType": "PublicKey"});
    let out = registries::sync(&input);
    assert_eq!(
        out.error.map(|e| e.message).as_deref(),
        Some("exactly one of keyPath, keyPaths, keyData, keyDatas, fulcio, and pki must be specified")
    );
}

#[test]
fn an_empty_match_policy_is_the_default_in_v1alpha1_only() {
    let mut input = with_signature_policy(19, Some(&["SigstoreImageVerification"]));
    input.cluster_image_policies[0]["spec"]["policy"]["signedIdentity"] =
        json!({"matchPolicy": ""});
    let p = registries::image_policies(&input, &input.release.profile()).expect("4.19 reads it");
    assert_eq!(
        p.cluster["quay.io/signed"][0]["signedIdentity"],
        json!({"type": "matchRepoDigestOrExact"})
    );
    input.release = release(20);
    assert_eq!(
        registries::image_policies(&input, &input.release.profile()),
        Err("unknown signedIdentity match policy: ".to_string())
    );
}
