//! ControllerConfig: the cluster-wide defaults the controller renders with.

use super::meta::{nullable_string, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A ControllerConfig object (only the fields rendering reads are typed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ControllerConfig {
    /// API version.
    #[serde(default)]
    pub api_version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The spec.
    #[serde(default)]
    pub spec: ControllerConfigSpec,
    /// The status, kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ControllerConfigStatus>,
}

/// The parts of a ControllerConfig spec that rendering uses; the rest passes through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControllerConfigSpec {
    /// The default OS image.
    #[serde(
        rename = "baseOSContainerImage",
        default,
        deserialize_with = "nullable_string"
    )]
    #[schemars(with = "Option<String>")]
    pub base_os_container_image: String,
    /// The default OS extensions image.
    #[serde(
        rename = "baseOSExtensionsContainerImage",
        default,
        deserialize_with = "nullable_string"
    )]
    #[schemars(with = "Option<String>")]
    pub base_os_extensions_container_image: String,
    /// Everything else.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// A ControllerConfig's status, kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControllerConfigStatus {
    /// The generation observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The certificates of the spec's CA bundles, as upstream's template controller records
    /// them.
    #[serde(
        default,
        deserialize_with = "super::meta::nullable_vec",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Option<Vec<ControllerCertificate>>")]
    pub controller_certificates: Vec<ControllerCertificate>,
    /// Everything else.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// One certificate of a CA bundle of the spec (`status.controllerCertificates[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControllerCertificate {
    /// The subject, as Go's `pkix.Name.String()` prints it.
    #[serde(default)]
    pub subject: String,
    /// The issuer, printed the same way.
    #[serde(default)]
    pub signer: String,
    /// Not valid before (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<String>,
    /// Not valid after (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<String>,
    /// The spec field (`KubeAPIServerServingCAData`, `CloudProviderCAData`, `RootCAData`,
    /// `AdditionalTrustBundle`) or registry bundle file it came from.
    #[serde(default)]
    pub bundle_file: String,
}

/// The ControllerConfig spec fields holding a CA bundle (`[]byte` upstream: base64 in JSON).
pub const CA_BYTES_FIELDS: &[&str] = &[
    "kubeAPIServerServingCAData",
    "rootCAData",
    "additionalTrustBundle",
    "cloudProviderCAData",
];

/// The ControllerConfig spec fields listing image registry CAs ([`ImageRegistryBundle`]s):
/// the cluster's (`openshift-config-managed/image-registry-ca`) and the administrator's (the
/// ConfigMap the Image `cluster` names).
pub const IMAGE_REGISTRY_BUNDLE_FIELDS: &[&str] =
    &["imageRegistryBundleData", "imageRegistryBundleUserData"];

/// One image registry's CA, as upstream's `ImageRegistryBundle`: `file` is the ConfigMap key
/// naming the registry (`host` or `host..port`), `data` the CA bytes (base64 in JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRegistryBundle {
    /// The registry (`host` or `host..port`).
    pub file: String,
    /// The CA bundle.
    pub data: Vec<u8>,
}

impl ImageRegistryBundle {
    /// As the ControllerConfig carries it: `{"file": ..., "data": <base64>}`.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::json!({
            "file": self.file,
            "data": crate::gocompat::base64::std_encode(&self.data),
        })
    }
}

/// A CA field of a ControllerConfig spec that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ControllerConfig spec.{field}: {problem}")]
pub struct CaFieldError {
    /// The field (with the list index, for a registry bundle).
    pub field: String,
    /// What is wrong.
    pub problem: &'static str,
}

impl ControllerConfigSpec {
    /// The decoded bytes of one of the [`CA_BYTES_FIELDS`] (or any `[]byte` field): `None`
    /// when the field is absent or null, an error when it is not base64 text.
    pub fn ca_bytes(&self, field: &str) -> Result<Option<Vec<u8>>, CaFieldError> {
        match self.extra.get(field) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => crate::gocompat::base64::std_decode(s)
                .map(Some)
                .ok_or_else(|| CaFieldError {
                    field: field.to_string(),
                    problem: "not base64",
                }),
            Some(_) => Err(CaFieldError {
                field: field.to_string(),
                problem: "not a string",
            }),
        }
    }

    /// The registry CAs of one of the [`IMAGE_REGISTRY_BUNDLE_FIELDS`], in order (none when
    /// the field is absent or null).
    pub fn image_registry_bundles(
        &self,
        field: &str,
    ) -> Result<Vec<ImageRegistryBundle>, CaFieldError> {
        let items = match self.extra.get(field) {
            None | Some(serde_json::Value::Null) => return Ok(Vec::new()),
            Some(serde_json::Value::Array(items)) => items,
            Some(_) => {
                return Err(CaFieldError {
                    field: field.to_string(),
                    problem: "not a list",
                })
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let err = |problem| CaFieldError {
                    field: format!("{field}[{i}]"),
                    problem,
                };
                let file = item
                    .get("file")
                    .and_then(serde_json::Value::as_str)
                    .ok_or_else(|| err("no file"))?;
                let data = match item.get("data") {
                    None | Some(serde_json::Value::Null) => Vec::new(),
                    Some(serde_json::Value::String(s)) => {
                        crate::gocompat::base64::std_decode(s).ok_or_else(|| err("not base64"))?
                    }
                    Some(_) => return Err(err("data is not a string")),
                };
                Ok(ImageRegistryBundle {
                    file: file.to_string(),
                    data,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> ControllerConfigSpec {
        serde_json::from_value(v).unwrap_or_default()
    }

    #[test]
    fn ca_fields_decode_from_upstreams_json() {
        let s = spec(
            json!({"kubeAPIServerServingCAData": "Q0EK", "rootCAData": null,
            "cloudProviderCAData": "%%",
            "imageRegistryBundleData": [{"file": "r.io..5000", "data": "eA=="}],
            "imageRegistryBundleUserData": [{"data": "eA=="}]}),
        );
        assert_eq!(
            s.ca_bytes("kubeAPIServerServingCAData"),
            Ok(Some(b"CA\n".to_vec()))
        );
        assert_eq!(s.ca_bytes("rootCAData"), Ok(None));
        assert_eq!(s.ca_bytes("additionalTrustBundle"), Ok(None));
        assert!(s.ca_bytes("cloudProviderCAData").is_err());
        assert_eq!(
            s.image_registry_bundles("imageRegistryBundleData"),
            Ok(vec![ImageRegistryBundle {
                file: "r.io..5000".into(),
                data: b"x".to_vec()
            }])
        );
        let err = s.image_registry_bundles("imageRegistryBundleUserData");
        assert_eq!(
            err.map_err(|e| e.field),
            Err("imageRegistryBundleUserData[0]".to_string())
        );
        let b = ImageRegistryBundle {
            file: "a".into(),
            data: b"x".to_vec(),
        };
        assert_eq!(b.to_value(), json!({"file": "a", "data": "eA=="}));
    }
}
