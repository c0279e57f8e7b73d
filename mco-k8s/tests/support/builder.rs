//! On-cluster layering's outside world for the tests: a simulated builder in place of the
//! Job controller and the build's pod, and the objects a build reads (pull and push secrets,
//! the MCO images ConfigMap, a MachineOSConfig).
//!
//! The builder watches the MCO namespace's Jobs. For a new Job it checks that what the pod
//! mounts exists (the Containerfile, the MachineConfig, the pull and push secrets, as the
//! kubelet would wait for them), marks the Job active, and then, as the test says: succeeds
//! (writes the digest ConfigMap the Job's last container writes, named and labelled from the
//! Job's environment, then reports the Job complete), fails (every retry used up:
//! `BackoffLimitExceeded`), or keeps building.

use super::apiserver::{resource, Store};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// The MCO namespace, where builds run.
pub const NS: &str = "openshift-machine-config-operator";

/// What the simulated builder does with the next Jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builder {
    Succeed,
    Fail,
    Hold,
}

/// Edits the stored object (its status subresource when `status`) with `f`.
pub use super::edit;

/// The condition `type_` of `obj`'s status (null when absent).
pub fn condition(obj: &Value, type_: &str) -> Value {
    obj["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_).cloned())
        .unwrap_or(Value::Null)
}

fn env_of(job: &Value, name: &str) -> Option<String> {
    job["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .map(str::to_string)
}

/// A digest per build, as a registry would give it.
pub fn digest_of(build: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    build.hash(&mut hasher);
    let h = format!("{:016x}", hasher.finish());
    format!("sha256:{h}{h}{h}{h}")
}

/// The simulated builder (the Job controller and the build pod).
pub fn start_builder(store: Arc<Store>, mode: Arc<Mutex<Builder>>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            for job in store.list("jobs") {
                if job["metadata"]["namespace"] != NS {
                    continue;
                }
                let name = job["metadata"]["name"].as_str().unwrap_or("").to_string();
                let build = name.trim_start_matches("build-").to_string();
                let st = &job["status"];
                let terminal = st["succeeded"].as_i64().unwrap_or(0) > 0
                    || st["failed"].as_i64().unwrap_or(0) > 3;
                if terminal {
                    continue;
                }
                // The pod starts once what it mounts exists.
                let mounts = [
                    ("configmaps", format!("containerfile-{build}")),
                    ("configmaps", format!("mc-{build}")),
                    ("secrets", format!("base-{build}")),
                    ("secrets", format!("final-{build}")),
                ];
                if mounts.iter().any(|(p, n)| store.get(p, NS, n).is_none()) {
                    continue;
                }
                if st["active"].as_i64().unwrap_or(0) == 0 {
                    edit(&store, "jobs", NS, &name, true, |j| {
                        j["status"]["active"] = json!(1);
                        j["status"]["startTime"] = json!("2026-01-01T00:00:00Z");
                    });
                    continue;
                }
                let m = *mode.lock().unwrap();
                match m {
                    Builder::Hold => {}
                    Builder::Succeed => {
                        let cm = env_of(&job, "DIGEST_CONFIGMAP_NAME").unwrap_or_default();
                        let labels: serde_json::Map<String, Value> =
                            env_of(&job, "DIGEST_CONFIGMAP_LABELS")
                                .unwrap_or_default()
                                .split(',')
                                .filter_map(|kv| kv.split_once('='))
                                .map(|(k, v)| (k.to_string(), json!(v)))
                                .collect();
                        let _ = store.create(
                            resource("configmaps").unwrap(),
                            NS,
                            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": cm, "namespace": NS, "labels": labels},
                                   "data": {"digest": digest_of(&build)}}),
                        );
                        edit(&store, "jobs", NS, &name, true, |j| {
                            j["status"] = json!({
                                "active": 0, "succeeded": 1, "ready": 0,
                                "startTime": "2026-01-01T00:00:00Z",
                                "completionTime": "2026-01-01T00:05:00Z",
                                "conditions": [{"type": "Complete", "status": "True"}]
                            });
                        });
                    }
                    Builder::Fail => {
                        edit(&store, "jobs", NS, &name, true, |j| {
                            j["status"] = json!({
                                "active": 0, "failed": 4,
                                "startTime": "2026-01-01T00:00:00Z",
                                "conditions": [{"type": "Failed", "status": "True",
                                                "reason": "BackoffLimitExceeded",
                                                "message": "Job has reached the specified backoff limit"}]
                            });
                        });
                    }
                }
            }
        }
    })
}

fn docker_secret(name: &str) -> Value {
    use base64::Engine;
    let auth = base64::engine::general_purpose::STANDARD.encode("user:pass");
    let cfg = json!({"auths": {"registry.example.com": {"auth": auth}}}).to_string();
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": name, "namespace": NS},
        "data": {".dockerconfigjson": base64::engine::general_purpose::STANDARD.encode(cfg)}
    })
}

/// What a build reads besides its MachineOSConfig: the pull secret copy, the push secret
/// `push-secret`, and the images ConfigMap naming the MCO image.
pub fn seed_build_inputs(store: &Store) {
    for s in ["global-pull-secret-copy", "push-secret"] {
        store
            .create(resource("secrets").unwrap(), NS, docker_secret(s))
            .unwrap();
    }
    let images = json!({"machineConfigOperator": "quay.io/openshift/mco:test"}).to_string();
    store
        .create(
            resource("configmaps").unwrap(),
            NS,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "machine-config-operator-images", "namespace": NS},
                   "data": {"images.json": images}}),
        )
        .unwrap();
}

/// Creates the MachineOSConfig `name` for `pool`: a Job build of `containerfile`, pushed to
/// `push_spec` with `push-secret`.
pub fn create_mosc(store: &Store, name: &str, pool: &str, push_spec: &str, containerfile: &str) {
    store
        .create(
            resource("machineosconfigs").unwrap(),
            "",
            json!({
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineOSConfig",
                "metadata": {"name": name},
                "spec": {
                    "machineConfigPool": {"name": pool},
                    "imageBuilder": {"imageBuilderType": "Job"},
                    "renderedImagePushSecret": {"name": "push-secret"},
                    "renderedImagePushSpec": push_spec,
                    "containerFile": [{"containerfileArch": "NoArch", "content": containerfile}]
                }
            }),
        )
        .unwrap();
}
