//! The generated MachineConfigs of each release 4.14 to 4.22 against that release's own
//! controllers: 28 KubeletConfig, 11 ContainerRuntimeConfig and 10 Image cases, each synced
//! once by the release's upstream kubelet-config or container-runtime-config controller.
//!
//! The corpus holds upstream template content and is not part of the repository. The test
//! reads it from `MCO_RELEASE_CR_CORPUS` (a folder of `4.NN/<case>.json`, one folder per
//! release) and skips, saying so, when that is not set. The role templates each release's
//! controller rendered its base files from are upstream's too: `MCO_RELEASE_TEMPLATES` names a
//! folder holding, for each release, `4.NN/` (upstream's `templates/` folder of that release,
//! or a folder holding it). The test renders them with the ControllerConfig of upstream's
//! controller unit tests (AWS, nothing else set) and the case's APIServer, and skips without
//! them.
//!
//! For each release the test prints how many cases pass, and the first difference of each
//! case that does not.

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/generate_case.rs"]
mod generate_case;
#[path = "support/mc_diff.rs"]
mod mc_diff;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use generate_case::{feature_gates, input_of, list, opt, pools, typed};
use mc_diff::describe_mc_diff;
use mco_render::api::{ControllerConfig, MachineConfig};
use mco_render::controllers::generate::cluster_config::ClusterConfigInput;
use mco_render::controllers::generate::{generate, registries, upstream_json};
use mco_render::controllers::templates::{
    generate_template_machine_configs, TemplateOptions, TemplateTree,
};
use mco_render::release::Release;
use serde_json::{json, Value};

/// A folder named by an environment variable, when set.
fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The file templates of the release's templates folder under `MCO_RELEASE_TEMPLATES`. The
/// controllers read only files of the role templates, so unit and extension templates (some
/// of which call functions older releases had) are left out.
fn templates_of(root: &Path, release: Release) -> TemplateTree {
    let dir = root.join(release.to_string());
    let dir = if dir.join("templates").is_dir() {
        dir.join("templates")
    } else {
        dir
    };
    let mut tree = TemplateTree::new();
    add_file_templates(&dir, &dir, &mut tree);
    assert!(!tree.is_empty(), "no file templates in {}", dir.display());
    tree
}

fn add_file_templates(base: &Path, dir: &Path, tree: &mut TemplateTree) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for p in entries.filter_map(Result::ok).map(|e| e.path()) {
        if p.is_dir() {
            add_file_templates(base, &p, tree);
            continue;
        }
        let Ok(rel) = p.strip_prefix(base) else {
            continue;
        };
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.iter().rev().skip(1).any(|c| c == "files") {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            tree.insert(&parts.join("/"), bytes);
        }
    }
}

/// The ControllerConfig upstream's controller unit tests render the templates with: AWS, the
/// fixture's API server URLs, nothing else.
fn controller_config() -> ControllerConfig {
    let name = "machine-config-controller";
    serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "ControllerConfig",
        "metadata": {"name": name},
        "spec": {
            "infra": {"status": {
                "etcdDiscoveryDomain": format!("{name}.tt.testing"),
                "platformStatus": {"type": "AWS"},
                "apiServerURL": format!("https://api.{name}.tt.testing:6443"),
                "apiServerInternalURL": format!("https://api-int.{name}.tt.testing:6443"),
            }},
            "releaseImage": "release-reg.io/myuser/myimage:test",
        },
    }))
    .expect("ControllerConfig")
}

/// The role template MachineConfigs the release's controller reads its base files from,
/// rendered with the case's APIServer TLS profile.
fn base_machine_configs(
    tree: &TemplateTree,
    release: Release,
    case: &Value,
) -> Result<Vec<MachineConfig>, String> {
    let profile = case
        .pointer("/apiServer/spec/tlsSecurityProfile")
        .filter(|p| !p.is_null());
    let (tls_min_version, tls_cipher_suites) =
        mco_render::controllers::generate::tls_profile::security_profile_ciphers_as(
            profile,
            &release.profile(),
        );
    let opts = TemplateOptions {
        controller_version: corpus::release_controller_version(release).to_string(),
        pull_secret: String::new(),
        tls_min_version,
        tls_cipher_suites,
    };
    generate_template_machine_configs(tree, &controller_config(), &opts).map_err(|e| e.to_string())
}

/// What one sync did, in the corpus's terms.
struct Outcome {
    error: Value,
    actions: Vec<String>,
    machine_configs: Vec<Value>,
    object_after: Value,
}

fn run(case: &Value, release: Release, base: Vec<MachineConfig>) -> Outcome {
    let version = corpus::release_controller_version(release).to_string();
    if case["kind"] == "Image" {
        let input = ClusterConfigInput {
            image: opt(case, "object"),
            cluster_version: opt(case, "clusterVersion"),
            image_content_source_policies: list(case, "imageContentSourcePolicies"),
            image_digest_mirror_sets: list(case, "imageDigestMirrorSets"),
            image_tag_mirror_sets: list(case, "imageTagMirrorSets"),
            feature_gates: feature_gates(case),
            pools: typed(pools(case)),
            existing_machine_configs: list(case, "existingMachineConfigs"),
            base_machine_configs: base.iter().map(upstream_json).collect(),
            controller_version: version,
            release,
            ..ClusterConfigInput::default()
        };
        let out = registries::sync(&input);
        let mut actions = out.actions();
        // Upstream walks the pools in map order; the corpus sorts the writes.
        actions.sort();
        let written: Vec<String> = out.writes.iter().map(|w| w.target().to_string()).collect();
        return Outcome {
            error: out.error.map_or(Value::Null, |e| Value::String(e.message)),
            actions,
            machine_configs: out
                .machine_configs
                .into_iter()
                .filter(|mc| written.iter().any(|n| mc["metadata"]["name"] == **n))
                .collect(),
            object_after: Value::Null,
        };
    }
    let mut input = input_of(case);
    input.base_machine_configs = base;
    input.controller_version = version;
    input.release = release;
    let out = generate(&input);
    Outcome {
        error: out.error.clone().map_or(Value::Null, Value::String),
        actions: out.actions(),
        machine_configs: out.machine_configs_json(),
        object_after: out.object_after.to_json(),
    }
}

/// A MachineConfig as the corpus records it: no `uid`, no null `creationTimestamp`.
fn recorded(mc: &Value) -> Value {
    let mut mc = mc.clone();
    if let Some(md) = mc.get_mut("metadata").and_then(Value::as_object_mut) {
        md.remove("uid");
        if md.get("creationTimestamp").is_some_and(Value::is_null) {
            md.remove("creationTimestamp");
        }
    }
    mc
}

/// `text` with each Go pointer (`0x` and hex digits) written `0xPOINTER`, as the corpus
/// writes the addresses releases before 4.22 print in the log-level error.
fn pointers_masked(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("0x") {
        let digits = rest[i + 2..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        out.push_str(&rest[..i]);
        if digits > 0 {
            out.push_str("0xPOINTER");
        } else {
            out.push_str("0x");
        }
        rest = &rest[i + 2 + digits..];
    }
    out.push_str(rest);
    out
}

/// A JSON value with every pointer in its strings masked ([`pointers_masked`]).
fn masked(v: &Value) -> Value {
    serde_json::from_str(&pointers_masked(&v.to_string())).unwrap_or(Value::Null)
}

/// How the outcome differs from `expected`, or `None` when it matches.
fn compare(case: &Value, mut out: Outcome) -> Option<String> {
    out.error = masked(&out.error);
    out.object_after = masked(&out.object_after);
    let expected = &case["expected"];
    let mut diffs = Vec::new();
    if out.error != expected["error"] {
        diffs.push(format!(
            "error: got {}, want {}",
            out.error, expected["error"]
        ));
    }
    let actions = Value::from(out.actions);
    if actions != expected["machineConfigActions"] {
        diffs.push(format!(
            "actions: got {actions}, want {}",
            expected["machineConfigActions"]
        ));
    }
    let want: BTreeMap<String, Value> = expected["machineConfigs"]
        .as_object()
        .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let got: BTreeMap<String, Value> = out
        .machine_configs
        .iter()
        .map(|mc| {
            let name = mc["metadata"]["name"].as_str().unwrap_or("").to_string();
            (name, recorded(mc))
        })
        .collect();
    if got.keys().ne(want.keys()) {
        diffs.push(format!(
            "machineConfigs: got {:?}, want {:?}",
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        ));
    }
    for (name, w) in &want {
        if let Some(g) = got.get(name) {
            if g != w {
                diffs.push(format!(
                    "{name}: {}",
                    describe_mc_diff("machineConfig", g, w)
                ));
            }
        }
    }
    if out.object_after != expected["objectAfter"] {
        diffs.push(format!(
            "objectAfter: got {}, want {}",
            out.object_after, expected["objectAfter"]
        ));
    }
    (!diffs.is_empty()).then(|| diffs.join("\n  "))
}

#[test]
fn each_release_generates_as_that_release_does() {
    let Some(root) = env_dir("MCO_RELEASE_CR_CORPUS") else {
        eprintln!(
            "SKIP: MCO_RELEASE_CR_CORPUS is not set; point it at the per-release \
             custom-resource corpus (a folder of 4.NN/<case>.json)"
        );
        return;
    };
    let Some(templates) = env_dir("MCO_RELEASE_TEMPLATES") else {
        eprintln!(
            "SKIP: MCO_RELEASE_TEMPLATES is not set; point it at a folder holding each \
             release's upstream templates folder as 4.NN/"
        );
        return;
    };
    let mut report = Vec::new();
    let mut failures = Vec::new();
    let mut total = 0;
    for release in Release::all() {
        let dir = root.join(release.to_string());
        if !dir.is_dir() {
            report.push(format!("{release}: no cases"));
            continue;
        }
        let tree = templates_of(&templates, release);
        let paths = corpus::case_files(&dir, |n| n.ends_with(".json"));
        let mut passed = 0;
        for p in &paths {
            let case = corpus::read(p);
            let name = case["name"].as_str().unwrap_or("?").to_string();
            let diff = match base_machine_configs(&tree, release, &case) {
                Ok(base) => compare(&case, run(&case, release, base)),
                Err(e) => Some(format!("templates do not render: {e}")),
            };
            match diff {
                None => passed += 1,
                Some(d) => failures.push(format!("{release} {name}:\n  {d}")),
            }
        }
        total += paths.len();
        report.push(format!("{release}: {passed}/{} cases pass", paths.len()));
    }
    eprintln!("generate as each release:");
    for r in &report {
        eprintln!("  {r}");
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {total} cases differ from their release",
        failures.len()
    );
}

#[path = "support/run_cli.rs"]
mod run_cli;

/// A cluster of our own for `mco-render generate`: the worker pool, its kubelet template
/// MachineConfig and a KubeletConfig.
fn small_cluster() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let objects = [
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
               "metadata": {"name": "worker", "labels": {
                   "pools.operator.machineconfiguration.openshift.io/worker": ""}},
               "spec": {"machineConfigSelector": {"matchLabels": {
                   "machineconfiguration.openshift.io/role": "worker"}}}}),
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
               "metadata": {"name": "01-worker-kubelet",
                            "labels": {"machineconfiguration.openshift.io/role": "worker"}},
               "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": [{
                   "path": "/etc/kubernetes/kubelet.conf",
                   "contents": {"source": "data:,kind%3A%20KubeletConfiguration%0AapiVersion%3A%20kubelet.config.k8s.io%2Fv1beta1%0AmaxPods%3A%20110%0A"}}]}}}}),
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
               "metadata": {"name": "max-pods"},
               "spec": {"machineConfigPoolSelector": {"matchLabels": {
                            "pools.operator.machineconfiguration.openshift.io/worker": ""}},
                        "kubeletConfig": {"maxPods": 250}}}),
    ];
    for (i, o) in objects.iter().enumerate() {
        std::fs::write(dir.path().join(format!("{i}.json")), o.to_string()).expect("write");
    }
    dir
}

/// The generated MachineConfig's Ignition version and `kubelet.conf`.
fn generated_kubelet(out: &str) -> (String, String) {
    let mcs = run_cli::list_items(out);
    let mc = mcs
        .iter()
        .find(|m| m["metadata"]["name"] == "99-worker-generated-kubelet")
        .expect("the generated MachineConfig");
    let file = &mc["spec"]["config"]["storage"]["files"][0];
    (
        mc["spec"]["config"]["ignition"]["version"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        mc_diff::file_text(file),
    )
}

#[test]
fn generate_takes_the_release_to_generate_as() {
    let dir = small_cluster();
    let path = dir.path().to_string_lossy().into_owned();
    let (code, out, err) = run_cli::run(&["generate", "-o", "json", "--release", "4.16", &path]);
    assert_eq!(code, 0, "{err}");
    let (version, conf) = generated_kubelet(&out);
    assert_eq!(version, "3.4.0");
    assert!(
        conf.starts_with("{\n  \"kind\": \"KubeletConfiguration\""),
        "{conf}"
    );
    assert!(conf.contains("\n  \"maxPods\": 250,\n"), "{conf}");

    let (code, out, err) = run_cli::run(&["generate", "-o", "json", &path]);
    assert_eq!(code, 0, "{err}");
    let (version, conf) = generated_kubelet(&out);
    assert_eq!(version, "3.5.0");
    assert!(conf.contains("\nmaxPods: 250\n"), "{conf}");

    let (code, _, err) = run_cli::run(&["generate", "--release", "4.13", &path]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown release \"4.13\""), "{err}");
}

/// The manifests of an image-policy case: the built-in pools, the role templates'
/// container-runtime MachineConfigs, the Image, ClusterVersion, mirror sets and policies, and a
/// FeatureGate with `SigstoreImageVerification` on.
fn image_policy_manifests(case: &Value, dir: &Path) {
    let mut objects: Vec<Value> = Vec::new();
    for pool in case["pools"].as_array().into_iter().flatten() {
        let name = pool.as_str().unwrap_or("");
        objects.push(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
            "metadata": {"name": name, "labels": {
                format!("pools.operator.machineconfiguration.openshift.io/{name}"): "",
                "machineconfiguration.openshift.io/mco-built-in": ""}},
            "spec": {"machineConfigSelector": {"matchLabels": {
                "machineconfiguration.openshift.io/role": name}}}}));
    }
    for k in ["baseMachineConfigs", "objects"] {
        objects.extend(case[k].as_array().cloned().unwrap_or_default());
    }
    // The FeatureGate's own sync reads the kubelet templates: this project's, rendered here
    // (they do not reach the registries MachineConfig).
    objects.extend(kubelet_templates());
    objects.push(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "FeatureGate",
        "metadata": {"name": "cluster"},
        "status": {"featureGates": [{"version": "", "enabled": [{"name": "SigstoreImageVerification"}], "disabled": []}]},
    }));
    for (i, o) in objects.iter().enumerate() {
        std::fs::write(dir.join(format!("{i:03}.json")), o.to_string()).expect("write");
    }
}

/// The `01-<role>-kubelet` MachineConfigs of this project's `templates/`.
fn kubelet_templates() -> Vec<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates");
    let mut tree = TemplateTree::new();
    add_file_templates(&root, &root, &mut tree);
    let opts = TemplateOptions {
        controller_version: String::new(),
        pull_secret: String::new(),
        tls_min_version: String::new(),
        tls_cipher_suites: Vec::new(),
    };
    generate_template_machine_configs(&tree, &controller_config(), &opts)
        .expect("this project's templates render")
        .iter()
        .filter(|mc| mc.name().ends_with("-kubelet"))
        .map(upstream_json)
        .collect()
}

/// How `mco-render generate` differs from an image-policy case's `expected`, or `None`.
fn image_policy_diff(case: &Value) -> Option<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    image_policy_manifests(case, dir.path());
    let release = case["release"].as_str().unwrap_or("");
    let version = case["controllerVersion"].as_str().unwrap_or("");
    let path = dir.path().to_string_lossy().into_owned();
    let (code, out, err) = run_cli::run(&[
        "generate",
        "-o",
        "json",
        "--release",
        release,
        "--controller-version",
        version,
        &path,
    ]);
    let expected = &case["expected"];
    if let Some(message) = expected["error"].as_str() {
        let named = err
            .lines()
            .any(|l| l.starts_with("error: ") && l.ends_with(&format!(": {message}")));
        return (code != 1 || !named)
            .then(|| format!("exit {code}, stderr {err:?}; want {message:?}"));
    }
    if code != 0 {
        return Some(format!("exit {code}: {err}"));
    }
    let got = run_cli::list_items(&out);
    let mut diffs = Vec::new();
    for (name, want) in expected["machineConfigs"].as_object().into_iter().flatten() {
        let Some(g) = got.iter().find(|m| m["metadata"]["name"] == **name) else {
            diffs.push(format!("{name} missing"));
            continue;
        };
        for k in ["name", "labels", "annotations", "ownerReferences"] {
            if g["metadata"][k] != want["metadata"][k] {
                diffs.push(format!(
                    "{name} metadata.{k}: got {}, want {}",
                    g["metadata"][k], want["metadata"][k]
                ));
            }
        }
        if g["spec"] != want["spec"] {
            diffs.push(format!(
                "{name}: {}",
                describe_mc_diff("machineConfig", g, want)
            ));
        }
    }
    (!diffs.is_empty()).then(|| diffs.join("\n  "))
}

/// The ClusterImagePolicy and ImagePolicy cases of each release that reads them
/// (`testdata/conformance/releases/4.NN/image-policies/`, expected MachineConfigs from that
/// release's own functions), through `mco-render generate --release 4.NN`.
#[test]
fn image_policies_generate_as_each_release_does() {
    let mut total = 0;
    let mut failures = Vec::new();
    let mut report = Vec::new();
    for release in Release::all() {
        let dir = corpus::testdata(&format!("releases/{release}/image-policies"));
        if !dir.is_dir() {
            continue;
        }
        let paths = corpus::case_files(&dir, |n| n.ends_with(".json"));
        let mut passed = 0;
        for p in &paths {
            let case = corpus::read(p);
            match image_policy_diff(&case) {
                None => passed += 1,
                Some(d) => failures.push(format!(
                    "{release} {}:\n  {d}",
                    case["name"].as_str().unwrap_or("?")
                )),
            }
        }
        total += paths.len();
        report.push(format!(
            "{release}: {passed}/{} image-policy cases",
            paths.len()
        ));
    }
    eprintln!("image policies as each release: {}", report.join(", "));
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(total >= 96, "{total} image-policy cases");
    assert!(
        failures.is_empty(),
        "{} of {total} cases differ",
        failures.len()
    );
}
