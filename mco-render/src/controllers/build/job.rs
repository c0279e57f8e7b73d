//! The builder Job: buildah in an init container, the digest ConfigMap writer after it.

use super::request::RequestOpts;
use serde_json::{json, Value};

/// The init container's script: trust store, build, push.
pub const BUILDAH_BUILD_SCRIPT: &str = include_str!("scripts/buildah-build.sh");
/// The main container's script: the pushed digest into a ConfigMap.
pub const DIGEST_CONFIGMAP_SCRIPT: &str = include_str!("scripts/create-digest-cm.sh");

fn env(name: &str, value: &str) -> Value {
    // Go omits an empty value.
    if value.is_empty() {
        json!({ "name": name })
    } else {
        json!({ "name": name, "value": value })
    }
}

fn mount(name: &str, path: &str) -> Value {
    json!({ "name": name, "mountPath": path })
}

fn config_map_volume(name: &str, config_map: &str, optional: bool) -> Value {
    let mut source = json!({ "name": config_map });
    if optional {
        source["optional"] = json!(true);
    }
    json!({ "name": name, "configMap": source })
}

fn creds_volume(name: &str, secret: &str) -> Value {
    json!({
        "name": name,
        "secret": {
            "secretName": secret,
            "items": [{ "key": ".dockerconfigjson", "path": "config.json" }],
        },
    })
}

/// The `batch/v1` Job running the build.
pub fn job(opts: &RequestOpts<'_>) -> Value {
    let build = &opts.mosb.metadata.name;
    let mosc = opts.inputs.mosc;
    let proxy = opts.inputs.controller_config.spec.extra.get("proxy");
    let proxy_field = |k: &str| proxy.and_then(|p| p[k].as_str()).unwrap_or("").to_string();
    let labels = opts.labels();
    let label_set: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let base_image = &opts.inputs.rendered.spec.os_image_url;
    let mut envs = vec![
        env("MAX_RETRIES", "3"),
        env("DIGEST_CONFIGMAP_NAME", &format!("digest-{build}")),
        env("DIGEST_CONFIGMAP_LABELS", &label_set.join(",")),
        env("HOME", "/home/build"),
        env("TAG", &opts.mosb.spec.rendered_image_push_spec),
        env(
            "BASE_IMAGE_PULL_CREDS",
            "/tmp/base-image-pull-creds/config.json",
        ),
        env(
            "FINAL_IMAGE_PUSH_CREDS",
            "/tmp/final-image-push-creds/config.json",
        ),
        env("BUILDAH_ISOLATION", "chroot"),
        env("HTTP_PROXY", &proxy_field("httpProxy")),
        env("HTTPS_PROXY", &proxy_field("httpsProxy")),
        env("NO_PROXY", &proxy_field("noProxy")),
        env("BASE_OS_IMAGE_PULLSPEC", base_image),
    ];
    let mut mounts = vec![
        mount("machineconfig", "/tmp/machineconfig"),
        mount("containerfile", "/tmp/containerfile"),
        json!({ "name": "etc-policy", "mountPath": "/etc/containers/policy.json", "subPath": "policy.json" }),
        json!({ "name": "etc-registries", "mountPath": "/etc/containers/registries.conf", "subPath": "registries.conf" }),
        mount(
            "additional-trust-bundle",
            "/etc/pki/ca-trust/source/anchors",
        ),
        mount("base-image-pull-creds", "/tmp/base-image-pull-creds"),
        mount("final-image-push-creds", "/tmp/final-image-push-creds"),
        mount("done", "/tmp/done"),
    ];
    let mut volumes = vec![
        config_map_volume("containerfile", &format!("containerfile-{build}"), false),
        config_map_volume("machineconfig", &format!("mc-{build}"), false),
        config_map_volume(
            "additional-trust-bundle",
            &format!("additionaltrustbundle-{build}"),
            false,
        ),
        config_map_volume("etc-policy", &format!("etc-policy-{build}"), true),
        config_map_volume("etc-registries", &format!("etc-registries-{build}"), true),
        creds_volume("base-image-pull-creds", &format!("base-{build}")),
        creds_volume("final-image-push-creds", &format!("final-{build}")),
        json!({ "name": "done", "emptyDir": { "medium": "Memory" } }),
        json!({ "name": "buildah-cache", "emptyDir": {} }),
    ];
    // 0755 for the optional entitlement and repository mounts.
    const MODE: u32 = 493;
    let pool = &mosc.spec.machine_config_pool.name;
    let optional = [
        (
            opts.has_entitlements,
            "etc-pki-entitlement",
            "ETC_PKI_ENTITLEMENT_MOUNTPOINT",
            "/etc/pki/entitlement",
            Some(format!("etc-pki-entitlement-{pool}")),
        ),
        (
            opts.has_yum_repos,
            "etc-yum-repos-d",
            "ETC_YUM_REPOS_D_MOUNTPOINT",
            "/etc/yum.repos.d",
            None,
        ),
        (
            opts.has_rpm_gpg,
            "etc-pki-rpm-gpg",
            "ETC_PKI_RPM_GPG_MOUNTPOINT",
            "/etc/pki/rpm-gpg",
            Some("etc-pki-rpm-gpg".to_string()),
        ),
    ];
    for (present, name, var, path, secret) in optional {
        if !present {
            continue;
        }
        envs.push(env(var, path));
        mounts.push(mount(name, path));
        volumes.push(match secret {
            Some(s) => json!({ "name": name, "secret": { "defaultMode": MODE, "secretName": s } }),
            None => json!({ "name": name, "configMap": { "defaultMode": MODE, "name": name } }),
        });
    }
    let image = opts.images["machineConfigOperator"].as_str().unwrap_or("");
    let container = |name: &str, script: &str, mounts: &[Value]| {
        json!({
            "name": name,
            "image": image,
            "command": ["/bin/bash", "-c", script],
            "env": envs,
            "imagePullPolicy": "Always",
            "resources": {},
            "securityContext": {},
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "volumeMounts": mounts,
        })
    };
    let mut build_mounts = mounts.clone();
    build_mounts.push(mount(
        "buildah-cache",
        "/home/build/.local/share/containers",
    ));
    let mut metadata = opts.object_meta(&format!("build-{build}"));
    metadata["ownerReferences"] = json!([{
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineOSBuild",
        "name": build,
        "uid": opts.mosb.metadata.uid.clone().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": 3,
            "completions": 1,
            "template": {
                "metadata": {},
                "spec": {
                    "restartPolicy": "Never",
                    "initContainers": [container("image-build", BUILDAH_BUILD_SCRIPT, &build_mounts)],
                    "containers": [container("create-digest-configmap", DIGEST_CONFIGMAP_SCRIPT, &mounts)],
                    "serviceAccountName": "machine-os-builder",
                    "volumes": volumes,
                    "terminationGracePeriodSeconds": 10,
                },
            },
        },
        "status": {},
    })
}
