//! Unit tests of the cluster-config controllers: one per validation rule and merge rule.

use crate::api::MachineConfigPool;
use serde_json::{json, Value};

use super::cluster_config::{ClusterConfigInput, ObjectRef};
use super::node_config::{cgroup_kernel_arguments, check_latency_profile};
use super::registries::*;
use super::{feature_gates, node_config};
use crate::release::Profile;

fn rule(source: &str, mirrors: &[&str], policy: &str) -> MirrorRule {
    MirrorRule {
        source: source.into(),
        mirrors: mirrors.iter().map(|s| s.to_string()).collect(),
        policy: policy.into(),
    }
}

fn obj(kind: &str, name: &str, rules: Vec<MirrorRule>) -> MirrorObject {
    MirrorObject {
        kind: kind.into(),
        name: name.into(),
        rules,
    }
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn edited(
    insecure: &[&str],
    blocked: &[&str],
    digest: &[&MirrorObject],
    tag: &[&MirrorObject],
) -> String {
    let mut conf = RegistriesConf::default();
    let r = edit_registries_config(&mut conf, &s(insecure), &s(blocked), digest, tag);
    assert_eq!(r, Ok(()));
    conf.encode()
}

// --- scopes -----------------------------------------------------------------------------

#[test]
fn scope_nesting() {
    assert!(scope_is_nested_inside_scope("quay.io", "quay.io"));
    assert!(scope_is_nested_inside_scope("quay.io/a/b", "quay.io/a"));
    assert!(!scope_is_nested_inside_scope("quay.io/ab", "quay.io/a"));
    assert!(scope_is_nested_inside_scope(
        "a.example.com/x",
        "*.example.com"
    ));
    assert!(scope_is_nested_inside_scope(
        "*.a.example.com",
        "*.example.com"
    ));
    assert!(scope_is_nested_inside_scope(
        "a.example.com:5000",
        "*.example.com"
    ));
    assert!(!scope_is_nested_inside_scope(
        "quay.io/x.example.com",
        "*.example.com"
    ));
}

#[test]
fn wildcard_scopes_only_as_host_prefixes() {
    assert!(is_valid_registries_conf_scope("quay.io/a"));
    assert!(is_valid_registries_conf_scope("*.example.com"));
    for bad in [
        "",
        "*.example.com:5000",
        "*.example.com/a",
        "*example.com",
        "a.*.com",
        "*.a@b",
    ] {
        assert!(!is_valid_registries_conf_scope(bad), "{bad}");
    }
}

#[test]
fn invalid_scopes_fail_per_list_naming_the_image() {
    let image = vec![ObjectRef::new("Image", "cluster")];
    for (ins, blk, all, what) in [
        (s(&["*.a.net:5000"]), vec![], vec![], "insecure"),
        (vec![], s(&["*.a.net:5000"]), vec![], "blocked"),
        (vec![], vec![], s(&["*.a.net@sha256"]), "allowed"),
    ] {
        let r = validate_registries_conf_scopes(&ins, &blk, &all, &[], &[], &Profile::default());
        let Err((msg, objs)) = r else {
            panic!("{what} accepted")
        };
        assert!(
            msg.starts_with(&format!("invalid entry for {what} registries \"")),
            "{msg}"
        );
        assert_eq!(objs, image);
    }
}

#[test]
fn sources_and_mirrors_follow_the_api_patterns() {
    assert!(valid_source("quay.io/app-team/x_y.z"));
    assert!(valid_source("*.example.com"));
    assert!(valid_source("localhost:5000/a"));
    assert!(!valid_source("quay.io//app-team"));
    assert!(!valid_source("quay.io/App"));
    assert!(valid_mirror("mirror.example.net:5000/a"));
    assert!(!valid_mirror("mirror.example.net/rh/rhel9:latest"));
    assert!(!valid_mirror("*.example.com"));
}

#[test]
fn a_bad_source_names_the_sets_that_use_it() {
    let a = obj(
        "ImageTagMirrorSet",
        "a",
        vec![rule("quay.io//x", &["m.io/x"], "")],
    );
    let b = obj(
        "ImageDigestMirrorSet",
        "b",
        vec![rule("quay.io/y", &["m.io/y"], "")],
    );
    let Err((msg, objs)) =
        validate_registries_conf_scopes(&[], &[], &[], &[&b], &[&a], &Profile::default())
    else {
        panic!("accepted")
    };
    assert_eq!(msg, "invalid format for source \"quay.io//x\"");
    assert_eq!(objs, vec![ObjectRef::new("ImageTagMirrorSet", "a")]);
}

#[test]
fn a_bad_mirror_fails() {
    let a = obj(
        "ImageDigestMirrorSet",
        "a",
        vec![rule("quay.io/x", &["m.io/x:latest"], "")],
    );
    let r = validate_registries_conf_scopes(&[], &[], &[], &[&a], &[], &Profile::default());
    assert_eq!(
        r.map_err(|e| e.0),
        Err("invalid format for mirror \"m.io/x:latest\"".to_string())
    );
}

#[test]
fn policies_must_agree_across_kinds_and_icsp_allows_contact() {
    let idms = obj(
        "ImageDigestMirrorSet",
        "d",
        vec![rule("quay.io/x", &["m.io/x"], "NeverContactSource")],
    );
    let icsp = obj(
        "ImageContentSourcePolicy",
        "c",
        vec![rule("quay.io/x", &["n.io/x"], "")],
    );
    let Err((msg, objs)) =
        validate_registries_conf_scopes(&[], &[], &[], &[&idms, &icsp], &[], &Profile::default())
    else {
        panic!("accepted")
    };
    assert!(
        msg.starts_with("conflicting mirrorSourcePolicy is set for the same source \"quay.io/x\"")
    );
    assert_eq!(objs.len(), 2);
    let allow = obj(
        "ImageTagMirrorSet",
        "t",
        vec![rule("quay.io/x", &["n.io/x"], "AllowContactingSource")],
    );
    assert!(validate_registries_conf_scopes(
        &[],
        &[],
        &[],
        &[&icsp],
        &[&allow],
        &Profile::default()
    )
    .is_ok());
}

#[test]
fn never_contact_source_cannot_list_the_source() {
    let a = obj(
        "ImageDigestMirrorSet",
        "a",
        vec![rule(
            "quay.io/x",
            &["quay.io/x", "m.io/x"],
            "NeverContactSource",
        )],
    );
    let r = validate_registries_conf_scopes(&[], &[], &[], &[&a], &[], &Profile::default());
    assert_eq!(
        r.map_err(|e| e.0),
        Err("cannot set mirrorSourcePolicy: NeverContactSource if the source \"quay.io/x\" is one of the mirrors".to_string())
    );
}

// --- mirror merging ---------------------------------------------------------------------

#[test]
fn overlapping_sets_merge_in_topological_order() {
    let a = obj(
        "ImageDigestMirrorSet",
        "a",
        vec![rule("r.io/x", &["b.io/x", "c.io/x"], "")],
    );
    let b = obj(
        "ImageDigestMirrorSet",
        "b",
        vec![rule("r.io/x", &["a.io/x", "b.io/x"], "")],
    );
    let out = edited(&[], &[], &[&a, &b], &[]);
    let locs: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("    location"))
        .collect();
    assert_eq!(
        locs,
        [
            "    location = \"a.io/x\"",
            "    location = \"b.io/x\"",
            "    location = \"c.io/x\""
        ]
    );
}

#[test]
fn cycles_break_at_the_smallest_name_even_the_source() {
    let a = obj(
        "ImageDigestMirrorSet",
        "a",
        vec![rule("docker.io", &["docker.io", "m.io"], "")],
    );
    let b = obj(
        "ImageDigestMirrorSet",
        "b",
        vec![rule("docker.io", &["m.io", "docker.io"], "")],
    );
    let out = edited(&[], &[], &[&a, &b], &[]);
    let locs: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("    location"))
        .collect();
    assert_eq!(
        locs,
        ["    location = \"docker.io\"", "    location = \"m.io\""]
    );
}

#[test]
fn sets_that_only_repeat_the_source_are_ignored_with_their_policy() {
    let a = obj(
        "ImageDigestMirrorSet",
        "a",
        vec![rule("r.io/x", &["r.io/x"], "NeverContactSource")],
    );
    let b = obj("ImageDigestMirrorSet", "b", vec![rule("r.io/y", &[], "")]);
    let out = edited(&[], &[], &[&a, &b], &[]);
    assert!(!out.contains("[[registry]]"), "{out}");
}

#[test]
fn digest_mirrors_come_before_tag_mirrors() {
    let d = obj(
        "ImageDigestMirrorSet",
        "d",
        vec![rule("r.io/x", &["d.io/x"], "")],
    );
    let t = obj(
        "ImageTagMirrorSet",
        "t",
        vec![rule("r.io/x", &["t.io/x"], "")],
    );
    let out = edited(&[], &[], &[&d], &[&t]);
    let d_at = out.find("d.io/x").unwrap_or(usize::MAX);
    let t_at = out.find("t.io/x").unwrap_or(0);
    assert!(d_at < t_at, "{out}");
    assert!(out.contains("pull-from-mirror = \"digest-only\""));
    assert!(out.contains("pull-from-mirror = \"tag-only\""));
}

#[test]
fn never_contact_source_blocks_the_source() {
    let d = obj(
        "ImageDigestMirrorSet",
        "d",
        vec![rule("r.io/x", &["m.io/x"], "NeverContactSource")],
    );
    let out = edited(&[], &[], &[&d], &[]);
    assert!(
        out.contains("location = \"r.io/x\"\n  blocked = true\n"),
        "{out}"
    );
}

#[test]
fn insecure_and_blocked_reach_nested_entries_and_mirrors() {
    let d = obj(
        "ImageDigestMirrorSet",
        "d",
        vec![rule("r.io/x", &["lab.net/x"], "")],
    );
    let out = edited(&["lab.net", "r.io"], &["r.io/x/y"], &[&d], &[]);
    assert!(
        out.contains("location = \"r.io/x\"\n  insecure = true\n"),
        "{out}"
    );
    assert!(
        out.contains("location = \"lab.net/x\"\n    insecure = true\n"),
        "{out}"
    );
    // The blocked scope inside the mirrored one gets the mirrors, adjusted.
    assert!(out.contains("location = \"r.io/x/y\"\n  insecure = true\n  blocked = true\n\n  [[registry.mirror]]\n    location = \"lab.net/x/y\""), "{out}");
}

#[test]
fn scopes_nested_in_a_mirrored_wildcard_fail() {
    let d = obj(
        "ImageDigestMirrorSet",
        "d",
        vec![rule("*.example.com", &["m.io/e"], "")],
    );
    let mut conf = RegistriesConf::default();
    let r = edit_registries_config(&mut conf, &[], &s(&["quay.example.com"]), &[&d], &[]);
    assert_eq!(
        r,
        Err(
            "internal error: mirrorsAdjustedForNestedScope for a wildcard scope \"*.example.com\""
                .to_string()
        )
    );
}

// --- encoding ---------------------------------------------------------------------------

#[test]
fn registries_conf_round_trips_the_template_keys() {
    let conf = RegistriesConf::decode("unqualified-search-registries = ['a.io', 'b.io']\n")
        .expect("decode");
    assert_eq!(
        conf.encode(),
        "unqualified-search-registries = [\"a.io\", \"b.io\"]\nshort-name-mode = \"\"\nadditional-layer-store-auth-helper = \"\"\n"
    );
}

#[test]
fn an_empty_search_list_is_written() {
    assert_eq!(
        String::from_utf8_lossy(&search_registries_dropin(&[], &Profile::default())),
        "unqualified-search-registries = []\nshort-name-mode = \"\"\nadditional-layer-store-auth-helper = \"\"\n"
    );
}

const POLICY: &str = r#"{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker-daemon":{"":[{"type":"insecureAcceptAnything"}]}}}"#;
const RELEASE: &str =
    "quay.io/ocp/release@sha256:1111111111111111111111111111111111111111111111111111111111111111";

#[test]
fn policy_allowed_rejects_the_rest_and_atomic_drops_deep_scopes() {
    let out = update_policy_json(
        POLICY.as_bytes(),
        &[],
        &s(&["a.io", "b.io/x/y/z"]),
        RELEASE,
        &Profile::default(),
    )
    .expect("policy");
    let v: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(v["default"], json!([{"type": "reject"}]));
    assert_eq!(
        v["transports"]["docker"]["b.io/x/y/z"],
        json!([{"type": "insecureAcceptAnything"}])
    );
    assert!(v["transports"]["atomic"].get("b.io/x/y/z").is_none());
    assert!(v["transports"]["atomic"].get("a.io").is_some());
    assert!(String::from_utf8_lossy(&out)
        .starts_with("{\n  \"default\": [\n    {\n      \"type\": \"reject\"\n"));
}

#[test]
fn policy_allows_blocked_and_allowed_only_for_the_payload() {
    assert!(update_policy_json(
        POLICY.as_bytes(),
        &s(&["x.io"]),
        &s(&["quay.io/ocp/release"]),
        RELEASE,
        &Profile::default()
    )
    .is_ok());
    let r = update_policy_json(
        POLICY.as_bytes(),
        &s(&["x.io"]),
        &s(&["a.io"]),
        RELEASE,
        &Profile::default(),
    );
    assert_eq!(
        r.map_err(|e| e.0),
        Err("invalid images config: only one of AllowedRegistries or BlockedRegistries may be specified".to_string())
    );
}

// --- the payload ------------------------------------------------------------------------

fn sources(blocked: &[&str], allowed: &[&str]) -> RegistrySources {
    RegistrySources {
        blocked: Some(s(blocked)),
        allowed: (!allowed.is_empty()).then(|| s(allowed)),
        ..RegistrySources::default()
    }
}

#[test]
fn a_blocked_payload_without_mirrors_is_dropped() {
    let out = valid_blocked_and_allowed(RELEASE, &sources(&["quay.io", "x.io"], &[]), &[])
        .expect("parse");
    assert_eq!(out.registries_blocked, Some(s(&["x.io"])));
    assert_eq!(out.policy_blocked, Some(s(&["x.io"])));
    assert_eq!(out.allowed, None);
}

#[test]
fn a_blocked_payload_with_an_unblocked_digest_mirror_stays_blocked() {
    let d = obj(
        "ImageDigestMirrorSet",
        "d",
        vec![rule("quay.io/ocp/release", &["m.io/release"], "")],
    );
    let out = valid_blocked_and_allowed(RELEASE, &sources(&["quay.io/ocp/release"], &[]), &[&d])
        .expect("parse");
    assert_eq!(out.registries_blocked, Some(s(&["quay.io/ocp/release"])));
    // Exactly the payload repository: not in the policy's blocked list.
    assert_eq!(out.policy_blocked, None);
    assert_eq!(out.allowed, Some(s(&["quay.io/ocp/release"])));
}

#[test]
fn a_tag_release_never_has_a_digest_mirror() {
    let d = obj(
        "ImageDigestMirrorSet",
        "d",
        vec![rule("quay.io/ocp/release", &["m.io/release"], "")],
    );
    let out = valid_blocked_and_allowed(
        "quay.io/ocp/release:4.21.0",
        &sources(&["quay.io"], &[]),
        &[&d],
    )
    .expect("parse");
    assert_eq!(out.registries_blocked, None);
}

#[test]
fn a_release_image_that_does_not_parse_fails() {
    assert_eq!(
        valid_blocked_and_allowed("quay.io/ocp/release:4.21 x86_64", &sources(&[], &[]), &[]),
        Err(ERR_PARSING_REFERENCE.to_string())
    );
}

// --- syncs ------------------------------------------------------------------------------

fn pool(name: &str, built_in: bool) -> MachineConfigPool {
    let mut labels = json!({});
    if built_in {
        labels["machineconfiguration.openshift.io/mco-built-in"] = json!("");
    }
    serde_json::from_value(
        json!({"metadata": {"name": name, "uid": format!("uid-{name}"), "labels": labels}}),
    )
    .unwrap_or_default()
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn template(name: &str, files: &[(&str, &str)]) -> Value {
    let files: Vec<Value> = files
        .iter()
        .map(|(p, c)| json!({"path": p, "contents": {"source": format!("data:,{}", percent(c))}}))
        .collect();
    json!({"metadata": {"name": name}, "spec": {"config": {"ignition": {"version": "3.5.0"}, "storage": {"files": files}}}})
}

fn registries_input() -> ClusterConfigInput {
    ClusterConfigInput {
        image: Some(
            json!({"metadata": {"name": "cluster", "uid": "img"}, "spec": {"registrySources": {"insecureRegistries": []}}}),
        ),
        cluster_version: Some(
            json!({"metadata": {"name": "version"}, "status": {"desired": {"image": RELEASE}}}),
        ),
        pools: vec![pool("worker", true), pool("infra", false)],
        base_machine_configs: vec![template(
            "01-worker-container-runtime",
            &[(
                "/etc/containers/registries.conf",
                "unqualified-search-registries = ['a.io']\n",
            )],
        )],
        controller_version: "v1".into(),
        ..ClusterConfigInput::default()
    }
}

#[test]
fn only_built_in_pools_get_a_registries_config_owned_by_the_image() {
    let out = sync(&registries_input());
    assert_eq!(out.error, None);
    assert_eq!(out.actions(), ["create 99-worker-generated-registries"]);
    let mc = &out.machine_configs[0];
    assert_eq!(
        mc["metadata"]["ownerReferences"],
        json!([{"apiVersion": "config.openshift.io/v1", "kind": "Image", "name": "cluster", "uid": "img"}])
    );
    assert_eq!(mc["spec"]["kernelArguments"], Value::Null);
}

#[test]
fn a_deprecated_name_is_migrated() {
    let mut input = registries_input();
    input.existing_machine_configs = vec![
        json!({"metadata": {"name": "99-worker-uid-worker-registries", "labels": {"extra": "x"}}, "spec": {"config": {"ignition": {"version": "3.5.0"}}}}),
    ];
    let out = sync(&input);
    assert_eq!(
        out.actions(),
        [
            "create 99-worker-generated-registries",
            "delete 99-worker-uid-worker-registries",
            "update 99-worker-generated-registries"
        ]
    );
}

#[test]
fn an_up_to_date_empty_config_is_not_written() {
    let mut input = registries_input();
    input.image = Some(json!({"metadata": {"name": "cluster"}, "spec": {}}));
    input.existing_machine_configs = vec![json!({
        "metadata": {"name": "99-worker-generated-registries", "annotations": {"machineconfiguration.openshift.io/generated-by-controller-version": "v1"}},
        "spec": {"config": {"ignition": {"version": "3.5.0"}}},
    })];
    let out = sync(&input);
    assert!(out.actions().is_empty());
    assert_eq!(out.unchanged, ["99-worker-generated-registries"]);
}

/// The same JSON with every object's keys in reverse order (serde_json keeps insertion order).
fn reversed(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
        v => v.clone(),
    }
}

#[test]
fn a_stored_config_in_another_key_order_is_up_to_date() {
    let first = sync(&registries_input());
    let mut stored = first.machine_configs[0].clone();
    stored["spec"]["config"] = reversed(&stored["spec"]["config"]);
    let mut input = registries_input();
    input.existing_machine_configs = vec![stored];
    let out = sync(&input);
    assert!(out.actions().is_empty(), "{:?}", out.actions());
    assert_eq!(out.unchanged, ["99-worker-generated-registries"]);
}

#[test]
fn without_an_image_or_cluster_version_nothing_happens() {
    let mut input = registries_input();
    input.cluster_version = None;
    assert!(sync(&input).actions().is_empty());
}

#[test]
fn latency_profiles_match_case_sensitively() {
    assert!(check_latency_profile("Default").is_ok());
    assert!(check_latency_profile("").is_ok());
    assert_eq!(
        check_latency_profile("default"),
        Err("unknown worker latency profile type found default, failed to update the original kubelet configuration".to_string())
    );
}

#[test]
fn cgroup_v2_arguments_replace_v1_ones() {
    let old = s(&[
        "a=1",
        "systemd.unified_cgroup_hierarchy=0",
        "cgroup_no_v1=\"all\"",
    ]);
    assert_eq!(
        cgroup_kernel_arguments("", &old),
        Ok(s(&[
            "a=1",
            "cgroup_no_v1=\"all\"",
            "systemd.unified_cgroup_hierarchy=1"
        ]))
    );
    assert_eq!(
        cgroup_kernel_arguments("v1", &[]),
        Err(
            "unknown cgroup mode found v1, failed to update the machine config resource"
                .to_string()
        )
    );
}

fn kubelet_input(node: Option<Value>) -> ClusterConfigInput {
    ClusterConfigInput {
        node,
        pools: vec![pool("worker", true), pool("infra", false)],
        base_machine_configs: vec![template(
            "01-worker-kubelet",
            &[("/etc/kubernetes/kubelet.conf", "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nmaxPods: 110\n")],
        )],
        controller_version: "v1".into(),
        feature_gate_exists: true,
        ..ClusterConfigInput::default()
    }
}

#[test]
fn the_feature_sync_writes_every_pool_and_cleans_up_stale_98s() {
    let mut input = kubelet_input(None);
    input.existing_machine_configs = vec![
        json!({"metadata": {"name": "98-gone-generated-kubelet", "annotations": {"machineconfiguration.openshift.io/generated-by-controller-version": "v0"}}, "spec": {}}),
        json!({"metadata": {"name": "99-worker-generated-kubelet", "annotations": {"machineconfiguration.openshift.io/generated-by-controller-version": "v0"}}, "spec": {}}),
    ];
    let out = feature_gates::sync(&input);
    assert_eq!(out.error, None);
    assert_eq!(
        out.actions(),
        [
            "create 98-infra-generated-kubelet",
            "create 98-worker-generated-kubelet",
            "delete 98-gone-generated-kubelet"
        ]
    );
}

#[test]
fn the_node_sync_needs_a_node_and_sets_cgroup_arguments_on_built_in_roles_only() {
    let out = node_config::sync(&kubelet_input(None));
    assert_eq!(
        out.error.map(|e| e.message),
        Some(node_config::MISSING_NODE.to_string())
    );
    let node = json!({"metadata": {"name": "cluster"}, "spec": {"workerLatencyProfile": "LowUpdateSlowReaction"}});
    let out = node_config::sync(&kubelet_input(Some(node)));
    assert_eq!(out.error, None);
    let by_name = |n: &str| {
        out.machine_configs
            .iter()
            .find(|m| m["metadata"]["name"] == n)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        by_name("97-infra-generated-kubelet")["spec"]["kernelArguments"],
        Value::Null
    );
    assert_eq!(
        by_name("97-worker-generated-kubelet")["spec"]["kernelArguments"],
        json!(["systemd.unified_cgroup_hierarchy=1", "cgroup_no_v1=\"all\""])
    );
    assert!(by_name("98-worker-generated-kubelet").is_object());
}
