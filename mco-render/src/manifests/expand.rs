//! The MachineConfigs a cluster would hold for a set of manifests.
//!
//! Manifests describe what a user applies; a cluster then adds what its controllers write:
//! the MachineConfigs generated from KubeletConfigs and ContainerRuntimeConfigs (see
//! [`crate::controllers::generate`]). [`cluster_machine_configs`] runs those syncs over the manifests and
//! returns the resulting MachineConfig set, ready for [`crate::render::render_pool`]. Given a
//! templates folder, the template controller's role MachineConfigs ([`crate::controllers::templates`]) are
//! rendered from the manifests' ControllerConfig first, and the syncs read their base files.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::api::value_at::str_at;
use crate::api::{CustomResource, MachineConfig};
use crate::controllers::generate::sequence::{
    feature_gates_from_status, generate_cluster_state, ClusterInput,
};
use crate::controllers::generate::Unmet;
use crate::controllers::templates::{
    compact_json, generate_template_machine_configs, TemplateOptions, TemplateTree,
};
use crate::manifests::Manifests;
use crate::release::{Profile, Release};

/// How to turn manifests into a cluster's MachineConfigs.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// The controller version stamped on generated MachineConfigs.
    pub controller_version: String,
    /// The role templates to render with the ControllerConfig, if any.
    pub templates: Option<TemplateTree>,
    /// The release whose controllers generate (and render the templates' TLS profile).
    pub release: Release,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            controller_version: crate::CONTROLLER_VERSION.to_string(),
            templates: None,
            release: Release::NEWEST,
        }
    }
}

/// The origin given to the template controller's MachineConfigs.
pub const TEMPLATES_ORIGIN: &str = "generated from templates";

/// The template options a cluster described by these manifests renders with: the controller
/// version, the TLS profile of the APIServer `cluster` (Intermediate without one), and the
/// pull secret: the `.dockerconfigjson` of the `Secret` manifest the ControllerConfig's
/// `spec.pullSecret` names (namespace and name), compacted as upstream does. Without such a
/// manifest (or without a ControllerConfig naming one) the pull secret is left empty.
///
/// Fails when that Secret is not of type `kubernetes.io/dockerconfigjson` or its
/// `.dockerconfigjson` is not base64 (under `data`) or not JSON, as upstream's controller does.
pub fn template_options(
    m: &Manifests,
    controller_version: &str,
) -> Result<TemplateOptions, ClusterError> {
    template_options_as(m, controller_version, &Profile::default())
}

/// [`template_options`] as `release` renders: its TLS profiles' cipher suites
/// ([`Profile::tls13_cipher_suites`]).
pub fn template_options_as(
    m: &Manifests,
    controller_version: &str,
    release: &Profile,
) -> Result<TemplateOptions, ClusterError> {
    let profile = m
        .others
        .iter()
        .map(|(_, v)| v)
        .find(|v| str_at(v, "/kind") == "APIServer" && str_at(v, "/metadata/name") == "cluster")
        .and_then(|v| v.pointer("/spec/tlsSecurityProfile"))
        .filter(|p| !p.is_null());
    let (tls_min_version, tls_cipher_suites) =
        crate::controllers::generate::tls_profile::security_profile_ciphers_as(profile, release);
    Ok(TemplateOptions {
        controller_version: controller_version.to_string(),
        pull_secret: pull_secret(m)?.unwrap_or_default(),
        tls_min_version,
        tls_cipher_suites,
    })
}

/// The key of a pull secret's Docker config.
const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";

/// The compact pull secret of the Secret manifest the ControllerConfig names, if any.
fn pull_secret(m: &Manifests) -> Result<Option<String>, ClusterError> {
    let Some((_, cc)) = &m.controller_config else {
        return Ok(None);
    };
    let Some(reference) = cc.spec.extra.get("pullSecret").filter(|r| !r.is_null()) else {
        return Ok(None);
    };
    let (namespace, name) = (str_at(reference, "/namespace"), str_at(reference, "/name"));
    if name.is_empty() {
        return Ok(None);
    }
    let Some((file, secret)) = m.others.iter().find(|(_, v)| {
        str_at(v, "/kind") == "Secret"
            && str_at(v, "/metadata/name") == name
            && str_at(v, "/metadata/namespace") == namespace
    }) else {
        return Ok(None);
    };
    let fail = |message: String| ClusterError {
        file: file.clone(),
        kind: "Secret".into(),
        name: format!("{namespace}/{name}"),
        message,
        unmet: None,
    };
    let ty = str_at(secret, "/type");
    if ty != "kubernetes.io/dockerconfigjson" {
        let shown = if ty.is_empty() { "Opaque" } else { ty };
        return Err(fail(format!(
            "expected secret type kubernetes.io/dockerconfigjson found {shown}"
        )));
    }
    let raw: Vec<u8> = if let Some(text) = secret
        .get("stringData")
        .and_then(|d| d.get(DOCKER_CONFIG_JSON_KEY))
        .and_then(Value::as_str)
    {
        text.as_bytes().to_vec()
    } else if let Some(b64) = secret
        .get("data")
        .and_then(|d| d.get(DOCKER_CONFIG_JSON_KEY))
        .and_then(Value::as_str)
    {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|e| fail(format!("{DOCKER_CONFIG_JSON_KEY} is not base64: {e}")))?
    } else {
        Vec::new()
    };
    let text = String::from_utf8_lossy(&raw);
    if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_err() {
        return Err(fail(format!("couldn't compact pullsecret {text:?}")));
    }
    Ok(Some(compact_json(&text)))
}

/// Renders the templates with the manifests' ControllerConfig and puts the results in place
/// of same-named MachineConfigs.
fn apply_templates(
    m: &mut Manifests,
    tree: &TemplateTree,
    controller_version: &str,
    release: &Profile,
) -> Result<(), ClusterError> {
    let Some((file, cc)) = m.controller_config.clone() else {
        return Err(ClusterError {
            file: String::new(),
            kind: "ControllerConfig".into(),
            name: String::new(),
            message: "rendering templates needs a ControllerConfig in the manifests".into(),
            unmet: None,
        });
    };
    let opts = template_options_as(m, controller_version, release)?;
    let mcs = generate_template_machine_configs(tree, &cc, &opts).map_err(|e| ClusterError {
        file,
        kind: "ControllerConfig".into(),
        name: cc.metadata.name.clone(),
        message: e.to_string(),
        unmet: None,
    })?;
    for mc in mcs {
        m.machine_configs.retain(|(_, old)| old.name() != mc.name());
        m.machine_configs.push((TEMPLATES_ORIGIN.to_string(), mc));
    }
    Ok(())
}

/// A custom resource whose sync failed: the cluster keeps going without its MachineConfig.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {kind} {name:?}: {message}")]
pub struct ClusterError {
    /// The file the resource came from.
    pub file: String,
    /// `KubeletConfig`, `ContainerRuntimeConfig`, or for the cluster-config syncs the object
    /// at fault (`Image`, a mirror set, `ClusterVersion`, `FeatureGate`, `Node`).
    pub kind: String,
    /// The resource's name.
    pub name: String,
    /// Upstream's error text.
    pub message: String,
    /// When the sync failed for want of objects not created yet, which.
    pub unmet: Option<Unmet>,
}

/// The MachineConfigs of the cluster, each with where it came from.
#[derive(Debug, Clone, Default)]
pub struct ClusterConfigs {
    /// Every MachineConfig, with its file (for generated ones: `generated from <file>`).
    pub machine_configs: Vec<(String, MachineConfig)>,
    /// The resources whose sync failed.
    pub errors: Vec<ClusterError>,
}

/// The generation input the manifests describe: their KubeletConfigs and
/// ContainerRuntimeConfigs, pools, MachineConfigs, the FeatureGate, APIServer and Node
/// named `cluster` when present, and the Image `cluster`, ClusterVersion `version` and mirror
/// sets the registries sync reads. Also returns each resource's file, keyed by (kind, name),
/// and the resources that do not decode (left out of the input).
pub fn cluster_input(
    m: &Manifests,
    controller_version: &str,
) -> (
    ClusterInput,
    BTreeMap<(String, String), String>,
    Vec<ClusterError>,
) {
    let mut input = ClusterInput {
        controller_version: controller_version.to_string(),
        ..ClusterInput::default()
    };
    let mut files = BTreeMap::new();
    let mut errors = Vec::new();
    for (file, v) in &m.others {
        let kind = str_at(v, "/kind");
        let name = str_at(v, "/metadata/name");
        match kind {
            "KubeletConfig" | "ContainerRuntimeConfig" => {
                files.insert((kind.to_string(), name.to_string()), file.clone());
                match CustomResource::from_json(v.clone()) {
                    Some(Ok(r)) => input.resources.push(r),
                    Some(Err(e)) => errors.push(ClusterError {
                        file: file.clone(),
                        kind: kind.to_string(),
                        name: name.to_string(),
                        message: format!("does not decode: {e}"),
                        unmet: None,
                    }),
                    None => {}
                }
            }
            "FeatureGate" if name == "cluster" => {
                files.insert((kind.to_string(), name.to_string()), file.clone());
                input.feature_gates = feature_gates_from_status(v);
                input.config_objects.feature_gate_exists = true;
            }
            "APIServer" if name == "cluster" => input.api_server = Some(v.clone()),
            "Node" if name == "cluster" => {
                files.insert((kind.to_string(), name.to_string()), file.clone());
                input.node_config = Some(v.clone());
            }
            "Image"
            | "ClusterVersion"
            | "ImageContentSourcePolicy"
            | "ImageDigestMirrorSet"
            | "ImageTagMirrorSet"
            | "ClusterImagePolicy"
            | "ImagePolicy" => {
                files.insert((kind.to_string(), name.to_string()), file.clone());
                let o = &mut input.config_objects;
                match kind {
                    "Image" if name == "cluster" => o.image = Some(v.clone()),
                    "ClusterVersion" if name == "version" => o.cluster_version = Some(v.clone()),
                    "ImageContentSourcePolicy" => o.image_content_source_policies.push(v.clone()),
                    "ImageDigestMirrorSet" => o.image_digest_mirror_sets.push(v.clone()),
                    "ImageTagMirrorSet" => o.image_tag_mirror_sets.push(v.clone()),
                    "ClusterImagePolicy" => o.cluster_image_policies.push(v.clone()),
                    "ImagePolicy" => o.image_policies.push(v.clone()),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    input.pools = m.pools.iter().map(|(_, p)| p.clone()).collect();
    input.machine_configs = m.machine_configs.iter().map(|(_, mc)| mc.clone()).collect();
    (input, files, errors)
}

/// The MachineConfigs a cluster holding these manifests would have once its controllers
/// synced: the manifests' own, plus (or replaced by) those generated from their
/// KubeletConfigs and ContainerRuntimeConfigs and their cluster-wide config objects (the
/// registries, feature-gate and node-config MachineConfigs), minus generated ones of another controller
/// version that a sync cleans up. Resources whose sync fails are reported in `errors` and
/// contribute nothing, as on a cluster.
pub fn cluster_machine_configs(m: &Manifests, opts: &ClusterOptions) -> ClusterConfigs {
    let templated;
    let m = match &opts.templates {
        None => m,
        Some(tree) => {
            let mut copy = m.clone();
            let release = opts.release.profile();
            if let Err(e) = apply_templates(&mut copy, tree, &opts.controller_version, &release) {
                return ClusterConfigs {
                    machine_configs: m.machine_configs.clone(),
                    errors: vec![e],
                };
            }
            templated = copy;
            &templated
        }
    };
    let (mut input, files, mut errors) = cluster_input(m, &opts.controller_version);
    input.release = opts.release;
    if input.resources.is_empty()
        && !input
            .config_objects
            .triggers_sync(input.node_config.is_some())
    {
        return ClusterConfigs {
            machine_configs: m.machine_configs.clone(),
            errors,
        };
    }
    let (outcomes, state) = generate_cluster_state(&input);
    // Which resource last wrote each MachineConfig.
    let mut writer: BTreeMap<String, String> = BTreeMap::new();
    for r in &outcomes {
        let file = files
            .get(&(r.kind.clone(), r.name.clone()))
            .cloned()
            .unwrap_or_default();
        if let Some(e) = &r.outcome.error {
            errors.push(ClusterError {
                file: file.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                message: e.clone(),
                unmet: r.outcome.unmet,
            });
        }
        for mc in r.outcome.machine_configs() {
            writer.insert(mc.name().to_string(), file.clone());
        }
    }
    let mut machine_configs = Vec::with_capacity(state.len());
    for mc in state {
        match writer.get(mc.name()) {
            None => {
                // Untouched: keep the manifest's object as decoded.
                if let Some(orig) = m
                    .machine_configs
                    .iter()
                    .find(|(_, m)| m.name() == mc.name())
                {
                    machine_configs.push(orig.clone());
                }
            }
            Some(file) => machine_configs.push((format!("generated from {file}"), mc)),
        }
    }
    ClusterConfigs {
        machine_configs,
        errors,
    }
}

/// Replaces the manifests' MachineConfigs with the cluster's ([`cluster_machine_configs`]),
/// returning the failed syncs.
pub fn expand_manifests(m: &mut Manifests, opts: &ClusterOptions) -> Vec<ClusterError> {
    let out = cluster_machine_configs(m, opts);
    m.machine_configs = out.machine_configs;
    out.errors
}

#[cfg(test)]
mod tests {
    use super::*;

    const POOL: &str = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: worker\n  labels:\n    pools.operator.machineconfiguration.openshift.io/worker: \"\"\nspec:\n  machineConfigSelector:\n    matchLabels:\n      machineconfiguration.openshift.io/role: worker\n";
    const TEMPLATE: &str = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 01-worker-kubelet\n  labels:\n    machineconfiguration.openshift.io/role: worker\nspec:\n  config:\n    ignition:\n      version: 3.5.0\n    storage:\n      files:\n      - path: /etc/kubernetes/kubelet.conf\n        contents:\n          source: data:,kind%3A%20KubeletConfiguration%0AapiVersion%3A%20kubelet.config.k8s.io%2Fv1beta1%0AmaxPods%3A%20110%0A\n";
    const KUBELET: &str = "apiVersion: machineconfiguration.openshift.io/v1\nkind: KubeletConfig\nmetadata:\n  name: max-pods\nspec:\n  machineConfigPoolSelector:\n    matchLabels:\n      pools.operator.machineconfiguration.openshift.io/worker: \"\"\n  kubeletConfig:\n    maxPods: 250\n";

    fn manifests(extra: &[(&str, &str)]) -> Manifests {
        let mut m = Manifests::default();
        for (f, t) in [("pools.yaml", POOL), ("templates.yaml", TEMPLATE)]
            .iter()
            .chain(extra)
        {
            assert!(m.add_file(f, t).is_ok(), "{f}");
        }
        m
    }

    #[test]
    fn without_resources_the_manifests_pass_through() {
        let m = manifests(&[]);
        let out = cluster_machine_configs(&m, &ClusterOptions::default());
        assert!(out.errors.is_empty());
        assert_eq!(out.machine_configs.len(), 1);
        assert_eq!(out.machine_configs[0].0, "templates.yaml");
    }

    #[test]
    fn a_kubelet_config_adds_its_generated_machine_config() {
        let m = manifests(&[("kubelet.yaml", KUBELET)]);
        let out = cluster_machine_configs(&m, &ClusterOptions::default());
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        let names: Vec<(&str, &str)> = out
            .machine_configs
            .iter()
            .map(|(f, mc)| (f.as_str(), mc.name()))
            .collect();
        assert_eq!(
            names,
            [
                ("templates.yaml", "01-worker-kubelet"),
                ("generated from kubelet.yaml", "99-worker-generated-kubelet"),
            ]
        );
        let generated = &out.machine_configs[1].1;
        assert_eq!(generated.generated_by(), Some(crate::CONTROLLER_VERSION));
    }

    #[test]
    fn a_failed_sync_is_reported_and_adds_nothing() {
        let bad = KUBELET.replace("maxPods: 250", "maxPods: [1]");
        let m = manifests(&[("kubelet.yaml", &bad)]);
        let out = cluster_machine_configs(&m, &ClusterOptions::default());
        assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
        assert_eq!(out.errors[0].file, "kubelet.yaml");
        assert_eq!(out.machine_configs.len(), 1);
    }

    #[test]
    fn stale_generated_configs_are_cleaned_up() {
        let stale = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 99-worker-generated-kubelet-old\n  labels:\n    machineconfiguration.openshift.io/role: worker\n  annotations:\n    machineconfiguration.openshift.io/generated-by-controller-version: v0\nspec: {}\n";
        let m = manifests(&[("kubelet.yaml", KUBELET), ("stale.yaml", stale)]);
        let mut m2 = m.clone();
        let errors = expand_manifests(&mut m2, &ClusterOptions::default());
        assert!(errors.is_empty(), "{errors:?}");
        assert!(m2.file_of("99-worker-generated-kubelet-old").is_none());
        assert!(m2.file_of("99-worker-generated-kubelet").is_some());
    }

    const CC: &str = "apiVersion: machineconfiguration.openshift.io/v1\nkind: ControllerConfig\nmetadata:\n  name: machine-config-controller\nspec:\n  pullSecret:\n    namespace: openshift-config\n    name: pull-secret\n";

    fn secret(ty: &str, body: &str) -> String {
        format!("apiVersion: v1\nkind: Secret\ntype: {ty}\nmetadata:\n  name: pull-secret\n  namespace: openshift-config\n{body}")
    }

    #[test]
    fn the_named_pull_secret_is_compacted_into_the_options() {
        // `{ "auths": { "r.io": {"auth": "a b"} } }`, base64 under `data`.
        let data = secret(
            "kubernetes.io/dockerconfigjson",
            "data:\n  .dockerconfigjson: eyAiYXV0aHMiOiB7ICJyLmlvIjogeyJhdXRoIjogImEgYiJ9IH0gfQ==\n",
        );
        let m = manifests(&[("cc.yaml", CC), ("secret.yaml", &data)]);
        let opts = template_options(&m, "v").map(|o| o.pull_secret);
        assert_eq!(opts, Ok(r#"{"auths":{"r.io":{"auth":"a b"}}}"#.to_string()));

        let string_data = secret(
            "kubernetes.io/dockerconfigjson",
            "stringData:\n  .dockerconfigjson: '{\"z\": 1, \"a\": [2, 3]}'\n",
        );
        let m = manifests(&[("cc.yaml", CC), ("secret.yaml", &string_data)]);
        let opts = template_options(&m, "v").map(|o| o.pull_secret);
        assert_eq!(opts, Ok(r#"{"z":1,"a":[2,3]}"#.to_string()));
    }

    #[test]
    fn without_a_matching_secret_the_pull_secret_is_empty() {
        let other = secret(
            "kubernetes.io/dockerconfigjson",
            "stringData:\n  .dockerconfigjson: '{}'\n",
        )
        .replace("name: pull-secret", "name: other");
        for extra in [
            vec![("cc.yaml", CC)],
            vec![("cc.yaml", CC), ("s.yaml", other.as_str())],
            vec![],
        ] {
            let m = manifests(&extra);
            assert_eq!(
                template_options(&m, "v").map(|o| o.pull_secret),
                Ok(String::new())
            );
        }
    }

    #[test]
    fn a_pull_secret_of_another_type_or_not_json_fails() {
        let opaque = secret("Opaque", "stringData:\n  .dockerconfigjson: '{}'\n");
        let m = manifests(&[("cc.yaml", CC), ("secret.yaml", &opaque)]);
        let e = template_options(&m, "v").err();
        assert_eq!(
            e.map(|e| e.message),
            Some("expected secret type kubernetes.io/dockerconfigjson found Opaque".into())
        );
        let bad = secret(
            "kubernetes.io/dockerconfigjson",
            "stringData:\n  .dockerconfigjson: '{'\n",
        );
        let m = manifests(&[("cc.yaml", CC), ("secret.yaml", &bad)]);
        assert!(template_options(&m, "v").is_err());
    }
}
