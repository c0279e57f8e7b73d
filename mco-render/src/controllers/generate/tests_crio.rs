//! Unit tests of the ContainerRuntimeConfig controller and the name rule, one per upstream
//! rule, on a small synthetic cluster.

use serde_json::{json, Value};

use super::crio::STORAGE_CONF_PATH;
use super::names::MC_NAME_SUFFIX_ANNOTATION;
use super::tests::{
    conditions, file_text, machine_config, pool, selecting, set, typed_all, typed_resource,
    typed_resources, VERSION,
};
use super::{generate, ign_file, FeatureGates, GenerateInput};

const STORAGE: &str = "[storage]\ndriver = \"overlay\"\nrunroot = \"/run/containers/storage\"\ngraphroot = \"/var/lib/containers/storage\"\n[storage.options]\nadditionalimagestores = []\n[storage.options.overlay]\nmountopt = \"nodev\"\n";

fn bases() -> Vec<Value> {
    vec![
        machine_config(
            "00-worker",
            vec![ign_file(STORAGE_CONF_PATH, STORAGE.as_bytes())],
        ),
        machine_config(
            "01-worker-container-runtime",
            vec![
                ign_file("/etc/containers/registries.conf", b"x"),
                ign_file("/etc/containers/policy.json", b"{}"),
            ],
        ),
    ]
}

fn ctrcfg(name: &str, selector: Value, runtime: Value) -> Value {
    json!({
        "kind": "ContainerRuntimeConfig",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "generation": 1,
                     "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"machineConfigPoolSelector": selector, "containerRuntimeConfig": runtime},
    })
}

fn worker(runtime: Value) -> GenerateInput {
    GenerateInput {
        object: typed_resource(ctrcfg("crc", selecting("worker"), runtime)),
        pools: typed_all(vec![pool("worker")]),
        base_machine_configs: typed_all(bases()),
        feature_gates: FeatureGates::default(),
        controller_version: VERSION.into(),
        ..GenerateInput::default()
    }
}

fn error_of(runtime: Value) -> Option<String> {
    generate(&worker(runtime)).error
}

fn c(kind: &str, msg: &str) -> (String, String, String) {
    (kind.into(), "True".into(), msg.into())
}

fn files(mc: &Value) -> Vec<(String, String)> {
    mc.pointer("/spec/config/storage/files")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|f| {
                    let p = f["path"].as_str().unwrap_or("").to_string();
                    let t = file_text(mc, &p).unwrap_or_default();
                    (p, t)
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn validation_messages() {
    let cases = [
        (json!({"pidsLimit": 19}), "invalid PidsLimit 19"),
        (json!({"pidsLimit": -5}), "invalid PidsLimit -5"),
        (json!({"logSizeMax": "8Ki"}), "invalid LogSizeMax \"8Ki\", cannot be less than 8kB"),
        (json!({"overlaySize": "-1.5Gi"}), "invalid overlaySize \"-1536Mi\", cannot be less than 0"),
        (json!({"logLevel": "Info"}), "invalid LogLevel \"Info\", must be one of error, fatal, panic, warn, info, debug, or trace"),
        (json!({"defaultRuntime": "kata"}), "invalid DefaultRuntime \"kata\", must be one of crun, runc"),
        (json!({"additionalLayerStores": [{"path": ""}]}), "invalid AdditionalLayerStores: path must not be empty"),
        (json!({"additionalImageStores": [{"path": "rel/x"}]}), "invalid AdditionalImageStores path \"rel/x\": must be an absolute path containing only alphanumeric characters, '/', '.', '_', and '-'"),
        (json!({"additionalLayerStores": [{"path": "/x:ref"}]}), "invalid AdditionalLayerStores path \"/x:ref\": must be an absolute path containing only alphanumeric characters, '/', '.', '_', and '-'"),
        (json!({"additionalArtifactStores": [{"path": "/a//b"}]}), "invalid AdditionalArtifactStores path \"/a//b\": must not contain consecutive forward slashes"),
        (json!({"additionalLayerStores": [{"path": "/"}], "additionalArtifactStores": [{"path": "/a\tb"}]}),
         "invalid AdditionalLayerStores path \"/\": must be an absolute path containing only alphanumeric characters, '/', '.', '_', and '-'\ninvalid AdditionalArtifactStores path \"/a\\tb\": must be an absolute path containing only alphanumeric characters, '/', '.', '_', and '-'"),
    ];
    for (rt, msg) in cases {
        let out = generate(&worker(rt));
        assert_eq!(out.error.as_deref(), Some(msg));
        assert_eq!(
            conditions(&out),
            vec![c("Failure", &format!("Error: {msg}"))]
        );
    }
    // Accepted edge values.
    for rt in [
        json!({"pidsLimit": 0}),
        json!({"pidsLimit": 20}),
        json!({"logSizeMax": "-1"}),
        json!({"logSizeMax": "8193"}),
        json!({"overlaySize": "0"}),
        json!({"defaultRuntime": "runc"}),
    ] {
        assert_eq!(error_of(rt), None);
    }
}

#[test]
fn no_matching_pool() {
    let mut inp = worker(json!({"logLevel": "debug"}));
    inp.pools = typed_all(vec![pool("master")]);
    let out = generate(&inp);
    let msg = "could not find any MachineConfigPool set for ContainerRuntimeConfig crc";
    assert_eq!(out.error.as_deref(), Some(msg));
    assert_eq!(
        conditions(&out),
        vec![c("Failure", &format!("Error: {msg}"))]
    );
}

#[test]
fn dropins_in_order_with_their_values() {
    let out = generate(&worker(json!({
        "logLevel": "debug", "pidsLimit": 0, "logSizeMax": "-1", "defaultRuntime": "crun",
        "additionalArtifactStores": [{"path": "/a"}],
    })));
    assert_eq!(out.error, None);
    let d = "/etc/crio/crio.conf.d/01-ctrcfg-";
    assert_eq!(
        files(&out.machine_configs_json()[0]),
        vec![
            (
                format!("{d}logLevel"),
                "[crio]\n  [crio.runtime]\n    log_level = \"debug\"\n".into()
            ),
            (
                format!("{d}pidsLimit"),
                "[crio]\n  [crio.runtime]\n    pids_limit = 0\n".into()
            ),
            (
                format!("{d}logSizeMax"),
                "[crio]\n  [crio.runtime]\n    log_size_max = -1\n".into()
            ),
            (
                format!("{d}defaultRuntime"),
                "[crio]\n  [crio.runtime]\n    default_runtime = \"crun\"\n".into()
            ),
        ]
    );
    // The artifact-store drop-in needs the AdditionalStorageConfig gate.
    let mut inp = worker(json!({"additionalArtifactStores": [{"path": "/a"}, {"path": "/b"}]}));
    inp.feature_gates.enabled = vec!["AdditionalStorageConfig".into()];
    assert_eq!(
        files(&generate(&inp).machine_configs_json()[0]),
        vec![(
            format!("{d}additionalArtifactStores"),
            "[crio]\n  [crio.runtime]\n    additional_artifact_stores = [\"/a\", \"/b\"]\n".into()
        )]
    );
}

#[test]
fn nothing_to_write_gives_an_empty_config() {
    let out = generate(&worker(json!({"overlaySize": "0", "logSizeMax": "0"})));
    assert_eq!(
        out.machine_configs_json()[0]["spec"]["config"],
        json!({"ignition": {"version": "3.5.0"}})
    );
    assert_eq!(
        out.actions(),
        vec!["create 99-worker-generated-containerruntime"]
    );
}

#[test]
fn storage_conf_overlay_size_and_stores() {
    let out = generate(&worker(
        json!({"overlaySize": "1.5Gi", "additionalLayerStores": [{"path": "/l"}]}),
    ));
    let storage = file_text(&out.machine_configs_json()[0], STORAGE_CONF_PATH).unwrap_or_default();
    assert!(storage.contains("size = \"1536Mi\""), "{storage}");
    // Layer stores need the gate.
    assert!(!storage.contains("additionallayerstores"), "{storage}");
    let mut inp = worker(
        json!({"additionalLayerStores": [{"path": "/l"}], "additionalImageStores": [{"path": "/i"}]}),
    );
    inp.feature_gates.enabled = vec!["AdditionalStorageConfig".into()];
    let out = generate(&inp);
    let storage = file_text(&out.machine_configs_json()[0], STORAGE_CONF_PATH).unwrap_or_default();
    assert!(
        storage.contains("additionallayerstores = [\"/l:ref\"]"),
        "{storage}"
    );
    assert!(
        storage.contains("additionalimagestores = [\"/i\"]"),
        "{storage}"
    );
    // The intermediate storage status and the final one merge into one Success.
    assert_eq!(conditions(&out), vec![c("Success", "Success")]);
}

#[test]
fn missing_template_files_fail() {
    let mut inp = worker(json!({"logLevel": "info"}));
    inp.base_machine_configs.remove(0);
    let out = generate(&inp);
    let err = "could not generate old container runtime configs: could not find Storage Config";
    assert_eq!(out.error.as_deref(), Some(err));
    assert_eq!(
        conditions(&out),
        vec![c(
            "Failure",
            &format!("could not generate origin ContainerRuntime Configs: {err}")
        )]
    );
    let bases = bases();
    let refs: Vec<&Value> = bases.iter().take(1).collect();
    assert_eq!(
        super::crio::check_original_files(&refs),
        Err("could not generate old container runtime configs: [could not find Registries Config, could not find Policy JSON]".into())
    );
    let all: Vec<&Value> = bases.iter().collect();
    assert_eq!(super::crio::check_original_files(&all), Ok(()));
}

#[test]
fn up_to_date_returns_without_status() {
    let mut inp = worker(json!({"logLevel": "info"}));
    set(
        &mut inp.object,
        &["status"],
        json!({"observedGeneration": 1, "conditions": [
        {"type": "Success", "status": "True", "message": "Success"}]}),
    );
    let mut mc = machine_config("99-worker-generated-containerruntime", vec![]);
    mc["metadata"]["annotations"] =
        json!({"machineconfiguration.openshift.io/generated-by-controller-version": VERSION});
    inp.existing_machine_configs = typed_all(vec![mc.clone()]);
    let out = generate(&inp);
    assert!(out.actions().is_empty());
    assert_eq!(conditions(&out), vec![c("Success", "Success")]);
    // Another controller version: updated, and cleanup leaves it (it is now current).
    mc["metadata"]["annotations"] =
        json!({"machineconfiguration.openshift.io/generated-by-controller-version": "old"});
    inp.existing_machine_configs = typed_all(vec![mc]);
    assert_eq!(
        generate(&inp).actions(),
        vec!["update 99-worker-generated-containerruntime"]
    );
}

#[test]
fn finalizers_are_kept_and_cleanup_has_no_prefix() {
    let mut inp = worker(json!({"logLevel": "info"}));
    set(
        &mut inp.object,
        &["metadata", "finalizers"],
        json!(["foreign"]),
    );
    let mut stale = machine_config("50-my-generated-containerruntime", vec![]);
    stale["metadata"]["annotations"] = json!({});
    inp.existing_machine_configs = typed_all(vec![stale]);
    let out = generate(&inp);
    assert_eq!(
        out.object_after.finalizers,
        vec!["foreign", "99-worker-generated-containerruntime"]
    );
    assert_eq!(
        out.actions(),
        vec![
            "create 99-worker-generated-containerruntime",
            "delete 50-my-generated-containerruntime"
        ]
    );
}

#[test]
fn deleted_resource_deletes_its_first_finalizer_by_name() {
    let mut inp = worker(json!({"pidsLimit": 1}));
    set(
        &mut inp.object,
        &["metadata", "deletionTimestamp"],
        json!("2024-01-02T00:00:00Z"),
    );
    set(
        &mut inp.object,
        &["metadata", "finalizers"],
        json!(["99-worker-generated-containerruntime", "x"]),
    );
    inp.existing_machine_configs = typed_all(vec![machine_config(
        "99-worker-generated-containerruntime",
        vec![],
    )]);
    let out = generate(&inp);
    assert_eq!(out.error, None);
    assert_eq!(
        out.actions(),
        vec!["delete 99-worker-generated-containerruntime"]
    );
    assert_eq!(out.object_after.finalizers, vec!["x"]);
    // A finalizer naming no MachineConfig is still dropped.
    inp.existing_machine_configs.clear();
    let out = generate(&inp);
    assert!(out.actions().is_empty());
    assert_eq!(out.object_after.finalizers, vec!["x"]);
}

fn other(name: &str, suffix: Option<&str>, created: &str) -> Value {
    let mut o = ctrcfg(name, selecting("worker"), json!({"logLevel": "info"}));
    o["metadata"]["creationTimestamp"] = json!(created);
    if let Some(s) = suffix {
        o["metadata"]["annotations"] = json!({MC_NAME_SUFFIX_ANNOTATION: s});
    }
    o
}

fn key_of(inp: &GenerateInput) -> (Option<String>, Vec<String>) {
    let out = generate(inp);
    (out.error.clone(), out.actions())
}

#[test]
fn name_rule_suffixes() {
    let base = "99-worker-generated-containerruntime";
    // Own annotation wins: a number is appended, "" gives the plain name.
    let mut inp = worker(json!({"logLevel": "info"}));
    set(
        &mut inp.object,
        &["metadata", "annotations"],
        json!({MC_NAME_SUFFIX_ANNOTATION: "4"}),
    );
    inp.other_objects = typed_resources(vec![other("b", Some("7"), "2023-01-01T00:00:00Z")]);
    assert_eq!(key_of(&inp).1, vec![format!("create {base}-4")]);
    // A new resource next to others takes the largest suffix plus one ("" counts as 0).
    let mut inp = worker(json!({"logLevel": "info"}));
    inp.other_objects = typed_resources(vec![
        other("b", Some(""), "2023-01-01T00:00:00Z"),
        other("c", Some("3"), "2023-01-01T00:00:00Z"),
    ]);
    assert_eq!(key_of(&inp).1, vec![format!("create {base}-4")]);
    let out = generate(&inp);
    assert_eq!(
        out.object_after
            .annotations
            .get(MC_NAME_SUFFIX_ANNOTATION)
            .map(String::as_str),
        Some("4")
    );
    // The limit.
    inp.other_objects = typed_resources(vec![other("b", Some("9"), "2023-01-01T00:00:00Z")]);
    let out = generate(&inp);
    let err = "max number of supported ctrcfgs (10) has been reached. Please delete old ctrcfgs before retrying";
    assert_eq!(out.error.as_deref(), Some(err));
    assert_eq!(
        conditions(&out),
        vec![c("Failure", &format!("could not get ctrcfg key: {err}"))]
    );
    // A suffix that is not a number.
    inp.other_objects = typed_resources(vec![other("b", Some("x1"), "2023-01-01T00:00:00Z")]);
    assert_eq!(
        key_of(&inp).0.as_deref(),
        Some("error converting x1 to int: strconv.Atoi: parsing \"x1\": invalid syntax")
    );
    inp.other_objects = typed_resources(vec![other(
        "b",
        Some("99999999999999999999"),
        "2023-01-01T00:00:00Z",
    )]);
    assert_eq!(
        key_of(&inp).0.as_deref(),
        Some("error converting 99999999999999999999 to int: strconv.Atoi: parsing \"99999999999999999999\": value out of range")
    );
}

#[test]
fn name_rule_older_resource_recovers_its_name_from_finalizers() {
    let base = "99-worker-generated-containerruntime";
    let mut inp = worker(json!({"logLevel": "info"}));
    set(
        &mut inp.object,
        &["metadata", "finalizers"],
        json!([
            format!("{base}-2"),
            format!("{base}-5"),
            format!("{base}-x"),
            "99-master-generated-containerruntime-8"
        ]),
    );
    inp.other_objects = typed_resources(vec![other("newer", None, "2025-01-01T00:00:00Z")]);
    inp.existing_machine_configs = typed_all([
        format!("{base}-2"),
        format!("{base}-x"),
        "99-master-generated-containerruntime-8".into(),
    ]
    .iter()
    .map(|n| {
        let mut mc = machine_config(n, vec![]);
        mc["metadata"]["annotations"] =
            json!({"machineconfiguration.openshift.io/generated-by-controller-version": VERSION});
        mc
    })
    .collect());
    // -5 has no MachineConfig, -x is not a number nor the plain name: -2 is taken.
    assert_eq!(key_of(&inp).1, vec![format!("update {base}-2")]);
    // Not older than the others: a new suffix.
    inp.other_objects = typed_resources(vec![other("newer", None, "2020-01-01T00:00:00Z")]);
    assert_eq!(key_of(&inp).1, vec![format!("create {base}-1")]);
}

#[test]
fn name_rule_migrates_the_deprecated_name() {
    let mut inp = worker(json!({"logLevel": "info"}));
    inp.pools[0].metadata.uid = Some("pool-uid".into());
    inp.existing_machine_configs = typed_all(vec![machine_config(
        "99-worker-pool-uid-containerruntime",
        vec![],
    )]);
    assert_eq!(
        key_of(&inp).1,
        vec![
            "create 99-worker-generated-containerruntime",
            "delete 99-worker-pool-uid-containerruntime",
            "update 99-worker-generated-containerruntime",
        ]
    );
}
