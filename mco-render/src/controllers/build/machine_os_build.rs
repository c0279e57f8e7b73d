//! The MachineOSBuild for a MachineOSConfig and a rendered MachineConfig, and its name.

use super::error::{BuildError, HashError};
use super::labels;
use crate::api::machine_config::{GENERATED_BY_ANNOTATION, RELEASE_IMAGE_VERSION_ANNOTATION};
use crate::api::machine_os::{MachineOSBuildSpec, NameRef};
use crate::api::{MachineConfig, MachineConfigPool, MachineOSBuild, MachineOSConfig, ObjectMeta};
use crate::gocompat::reference::parse_named;
use crate::gocompat::yaml::write_go_yaml;
use md5::{Digest, Md5};
use serde_json::json;

/// The bytes hashed before the objects, fixed upstream.
const SALT: [u8; 80] = [
    16, 124, 206, 228, 139, 56, 175, 175, 79, 229, 134, 118, 157, 154, 211, 110, 25, 93, 47, 253,
    172, 106, 37, 7, 174, 13, 160, 185, 110, 17, 87, 52, 219, 131, 12, 206, 218, 141, 116, 135,
    188, 181, 192, 151, 233, 62, 126, 165, 64, 83, 179, 119, 15, 168, 208, 197, 146, 107, 58, 227,
    133, 188, 238, 26, 33, 26, 235, 202, 32, 173, 31, 234, 41, 144, 148, 79, 6, 206, 23, 22,
];

/// Annotation naming the push secret on a MachineOSBuild.
pub const PUSH_SECRET_ANNOTATION: &str =
    "machineconfiguration.openshift.io/rendered-image-push-secret";

/// The three objects a build is made from.
#[derive(Debug, Clone, Copy)]
pub struct BuildInputs<'a> {
    /// The MachineOSConfig.
    pub mosc: &'a MachineOSConfig,
    /// Its pool.
    pub pool: &'a MachineConfigPool,
    /// The pool's rendered MachineConfig.
    pub rendered: &'a MachineConfig,
}

fn validate(inputs: &BuildInputs<'_>) -> Result<(), HashError> {
    let mc = inputs.rendered;
    if !mc.name().starts_with("rendered-") {
        return Err(HashError::NotRendered(mc.name().to_string()));
    }
    for key in [RELEASE_IMAGE_VERSION_ANNOTATION, GENERATED_BY_ANNOTATION] {
        match mc.metadata.annotations.get(key) {
            None => return Err(HashError::MissingAnnotation(key, mc.name().to_string())),
            Some(v) if v.is_empty() => {
                return Err(HashError::EmptyAnnotation(key, mc.name().to_string()))
            }
            Some(_) => {}
        }
    }
    let pool = &inputs.pool.metadata.name;
    let wanted = &inputs.mosc.spec.machine_config_pool.name;
    if pool != wanted {
        return Err(HashError::PoolMismatch(pool.clone(), wanted.clone()));
    }
    Ok(())
}

/// `<MachineOSConfig name>-<md5>`: the md5 of the salt and the YAML of the pool's
/// configuration, the MachineOSConfig spec and the rendered config's images and release.
pub fn build_name(inputs: &BuildInputs<'_>) -> Result<String, HashError> {
    validate(inputs)?;
    let spec = &inputs.rendered.spec;
    let images = json!({
        "BaseOSContainerImage": spec.os_image_url,
        "BaseOSExtensionsContainerImage": spec.base_os_extensions_container_image,
        "OSImageURL": "",
        "ReleaseVersion": inputs.rendered.metadata.annotations
            .get(RELEASE_IMAGE_VERSION_ANNOTATION).cloned().unwrap_or_default(),
    });
    let objects = [
        serde_json::to_value(&inputs.pool.spec.configuration).map_err(HashError::encode)?,
        serde_json::to_value(&inputs.mosc.spec).map_err(HashError::encode)?,
        images,
    ];
    let mut hasher = Md5::new();
    hasher.update(SALT);
    for obj in &objects {
        let mut yaml = Vec::new();
        write_go_yaml(obj, &mut yaml);
        hasher.update(&yaml);
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(format!("{}-{hex}", inputs.mosc.metadata.name))
}

/// The MachineOSBuild upstream's `NewMachineOSBuild` makes (without `status.buildStart`,
/// which is the current time).
pub fn machine_os_build(inputs: &BuildInputs<'_>) -> Result<MachineOSBuild, BuildError> {
    let name = build_name(inputs).map_err(BuildError::Hash)?;
    let push_spec = &inputs.mosc.spec.rendered_image_push_spec;
    let mut named = parse_named(push_spec).ok_or(BuildError::NotCanonical(push_spec.clone()))?;
    named.tag = Some(name.clone());
    let mut metadata = ObjectMeta {
        name: name.clone(),
        labels: labels::machine_os_build(inputs.mosc, inputs.pool),
        finalizers: vec!["foregroundDeletion".to_string()],
        ..ObjectMeta::default()
    };
    metadata.annotations.insert(
        PUSH_SECRET_ANNOTATION.to_string(),
        inputs.mosc.spec.rendered_image_push_secret.name.clone(),
    );
    Ok(MachineOSBuild {
        api_version: "machineconfiguration.openshift.io/v1".to_string(),
        kind: "MachineOSBuild".to_string(),
        metadata,
        spec: MachineOSBuildSpec {
            machine_config: NameRef {
                name: inputs.pool.spec.configuration.name.clone(),
            },
            machine_os_config: NameRef {
                name: inputs.mosc.metadata.name.clone(),
            },
            rendered_image_push_spec: named.to_string_full(),
        },
        status: None,
    })
}
