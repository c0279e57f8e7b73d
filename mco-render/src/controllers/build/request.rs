//! The whole build request: what upstream's `NewMachineOSBuild`, `NewBuildRequestFromAPI`,
//! `ConfigMaps`, `Secrets` and `Builder` produce, stopping at the first error.

use super::error::BuildError;
use super::machine_os_build::{machine_os_build, BuildInputs};
use crate::api::{
    ControllerConfig, MachineConfig, MachineConfigPool, MachineOSBuild, MachineOSConfig,
};
use serde_json::Value;

/// The namespace the build's objects live in.
pub const NAMESPACE: &str = "openshift-machine-config-operator";
/// The copy of the global pull secret used when no base image pull secret is named.
pub const GLOBAL_PULL_SECRET_COPY: &str = "global-pull-secret-copy";

/// Everything the build request reads.
#[derive(Debug, Clone, Copy)]
pub struct RequestInputs<'a> {
    /// The MachineOSConfig.
    pub mosc: &'a MachineOSConfig,
    /// Its pool.
    pub pool: &'a MachineConfigPool,
    /// The pool's rendered MachineConfig.
    pub rendered: &'a MachineConfig,
    /// The rendered MachineConfig as read (JSON), for what Go's encoding keeps that the
    /// typed value does not (`null` versus empty lists); without it empty lists are `[]`, as
    /// in every config the render controller writes.
    pub rendered_source: Option<&'a Value>,
    /// The ControllerConfig `machine-config-controller` (proxy, trust bundle).
    pub controller_config: &'a ControllerConfig,
    /// Secrets and ConfigMaps (Kubernetes JSON) in [`NAMESPACE`].
    pub objects: &'a [Value],
}

/// What the build request produced: each step's output until the first error.
#[derive(Debug, Clone, Default)]
pub struct BuildObjects {
    /// The MachineOSBuild.
    pub machine_os_build: Option<MachineOSBuild>,
    /// The ConfigMaps (Containerfile, MachineConfig, trust bundle, policy, registries).
    pub config_maps: Option<Vec<Value>>,
    /// The canonical base image pull and final image push secrets.
    pub secrets: Option<Vec<Value>>,
    /// The builder Job.
    pub job: Option<Value>,
    /// The first error.
    pub error: Option<BuildError>,
}

/// A Secret or ConfigMap of [`NAMESPACE`] by kind and name.
pub(crate) fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    objects.iter().find(|o| {
        o["kind"].as_str() == Some(kind)
            && o["metadata"]["name"].as_str() == Some(name)
            && o["metadata"]["namespace"]
                .as_str()
                .is_none_or(|ns| ns == NAMESPACE)
    })
}

/// What `NewBuildRequestFromAPI` reads, checked.
#[derive(Debug, Clone)]
pub struct RequestOpts<'a> {
    /// The inputs.
    pub inputs: RequestInputs<'a>,
    /// The MachineOSBuild.
    pub mosb: &'a MachineOSBuild,
    /// The base image pull secret.
    pub base_pull_secret: &'a Value,
    /// The final image push secret.
    pub push_secret: &'a Value,
    /// `images.json` of `machine-config-operator-images`.
    pub images: Value,
    /// Whether `etc-pki-entitlement-<pool>` exists.
    pub has_entitlements: bool,
    /// Whether `etc-pki-rpm-gpg` exists.
    pub has_rpm_gpg: bool,
    /// Whether `etc-yum-repos-d` exists.
    pub has_yum_repos: bool,
}

fn opts<'a>(
    inputs: RequestInputs<'a>,
    mosb: &'a MachineOSBuild,
) -> Result<RequestOpts<'a>, BuildError> {
    let mosc = inputs.mosc;
    let push_name = &mosc.spec.rendered_image_push_secret.name;
    if push_name.is_empty() {
        return Err(BuildError::EmptyPushSecret(mosc.metadata.name.clone()));
    }
    let pool = &mosc.spec.machine_config_pool.name;
    let has_entitlements = find(
        inputs.objects,
        "Secret",
        &format!("etc-pki-entitlement-{pool}"),
    )
    .is_some();
    let has_rpm_gpg = find(inputs.objects, "Secret", "etc-pki-rpm-gpg").is_some();
    let has_yum_repos = find(inputs.objects, "ConfigMap", "etc-yum-repos-d").is_some();
    const IMAGES: &str = "machine-config-operator-images";
    let images_cm = find(inputs.objects, "ConfigMap", IMAGES)
        .ok_or(BuildError::ObjectNotFound("configmaps", IMAGES.to_string()))?;
    let images_text = images_cm["data"]["images.json"].as_str().unwrap_or("");
    let images: Value = serde_json::from_str(images_text)
        .map_err(|e| BuildError::BadConfigMap(IMAGES.to_string(), e.to_string()))?;
    let base_name = mosc
        .spec
        .base_image_pull_secret
        .as_ref()
        .map_or(GLOBAL_PULL_SECRET_COPY, |s| s.name.as_str());
    let base_pull_secret = find(inputs.objects, "Secret", base_name).ok_or(
        BuildError::SecretNotFound("base image pull", base_name.to_string()),
    )?;
    let push_secret = find(inputs.objects, "Secret", push_name).ok_or(
        BuildError::SecretNotFound("final image push", push_name.clone()),
    )?;
    Ok(RequestOpts {
        inputs,
        mosb,
        base_pull_secret,
        push_secret,
        images,
        has_entitlements,
        has_rpm_gpg,
        has_yum_repos,
    })
}

/// Runs upstream's steps in order over `inputs`.
pub fn build_request(inputs: &RequestInputs<'_>) -> BuildObjects {
    let mut out = BuildObjects::default();
    let build = BuildInputs {
        mosc: inputs.mosc,
        pool: inputs.pool,
        rendered: inputs.rendered,
    };
    let mosb = match machine_os_build(&build) {
        Ok(m) => m,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    out.machine_os_build = Some(mosb.clone());
    let result = (|| {
        let opts = opts(*inputs, &mosb)?;
        out.config_maps = Some(super::config_maps::config_maps(&opts)?);
        out.secrets = Some(super::secrets::secrets(&opts)?);
        out.job = Some(super::job::job(&opts));
        Ok(())
    })();
    if let Err(e) = result {
        out.error = Some(e);
    }
    out
}

impl RequestOpts<'_> {
    /// The labels of every object made for the build.
    pub fn labels(&self) -> std::collections::BTreeMap<String, String> {
        super::labels::build_object(self.mosb, self.inputs.mosc)
    }

    /// The metadata of an object made for the build: name, namespace, labels, and
    /// annotations naming the build and the optional entitlement objects found.
    pub fn object_meta(&self, name: &str) -> Value {
        let mut annotations = super::labels::build_object_annotations(self.mosb, self.inputs.mosc);
        let prefix = "machineconfiguration.openshift.io/";
        for (has, key) in [
            (self.has_entitlements, "has-etc-pki-entitlement"),
            (self.has_yum_repos, "has-etc-yum-repos-d"),
            (self.has_rpm_gpg, "has-etc-pki-rpm-gpg"),
        ] {
            if has {
                annotations.insert(format!("{prefix}{key}"), String::new());
            }
        }
        serde_json::json!({
            "name": name,
            "namespace": NAMESPACE,
            "labels": self.labels(),
            "annotations": annotations,
        })
    }
}
