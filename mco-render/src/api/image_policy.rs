//! ClusterImagePolicy (cluster-scoped) and ImagePolicy (namespaced), `config.openshift.io`:
//! the sigstore signature policies the registries controller writes into `policy.json`,
//! `registries.d` and CRI-O's per-namespace policies. One model for both kinds and both
//! versions (`v1` from 4.20, `v1alpha1` before; the fields read are the same).
//!
//! Byte fields (`keyData`, `rekorKeyData`, `fulcioCAData`, `caRootsData`,
//! `caIntermediatesData`) are kept as the base64 text the API carries: the signature policy
//! writes them back in the same encoding.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The API group of both kinds.
pub const GROUP: &str = "config.openshift.io";
/// The kind of the cluster-scoped policy.
pub const CLUSTER_IMAGE_POLICY: &str = "ClusterImagePolicy";
/// The kind of the namespaced policy.
pub const IMAGE_POLICY: &str = "ImagePolicy";

/// `spec.policy.rootOfTrust.policyType`.
pub mod policy_type {
    /// A public key.
    pub const PUBLIC_KEY: &str = "PublicKey";
    /// A Fulcio CA with a Rekor key.
    pub const FULCIO_CA_WITH_REKOR: &str = "FulcioCAWithRekor";
    /// A PKI (CA roots, intermediates, a certificate subject).
    pub const PKI: &str = "PKI";
}

/// `spec.policy.signedIdentity.matchPolicy`.
pub mod match_policy {
    /// The default: the signed identity matches the image's repository and digest or tag.
    pub const MATCH_REPO_DIGEST_OR_EXACT: &str = "MatchRepoDigestOrExact";
    /// The signed identity matches the image's repository.
    pub const MATCH_REPOSITORY: &str = "MatchRepository";
    /// The signed identity is one repository.
    pub const EXACT_REPOSITORY: &str = "ExactRepository";
    /// The image's prefix is remapped to a signed prefix.
    pub const REMAP_IDENTITY: &str = "RemapIdentity";
}

/// `publicKey`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublicKey {
    /// `keyData` (base64).
    #[serde(default)]
    pub key_data: String,
    /// `rekorKeyData` (base64), optional.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rekor_key_data: String,
}

/// `fulcioSubject`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FulcioSubject {
    /// `oidcIssuer`.
    #[serde(default)]
    pub oidc_issuer: String,
    /// `signedEmail`.
    #[serde(default)]
    pub signed_email: String,
}

/// `fulcioCAWithRekor`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FulcioCaWithRekor {
    /// `fulcioCAData` (base64).
    #[serde(default, rename = "fulcioCAData")]
    pub fulcio_ca_data: String,
    /// `rekorKeyData` (base64).
    #[serde(default)]
    pub rekor_key_data: String,
    /// `fulcioSubject`.
    #[serde(default)]
    pub fulcio_subject: FulcioSubject,
}

/// `pkiCertificateSubject`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PkiCertificateSubject {
    /// `email`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
    /// `hostname`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hostname: String,
}

/// `pki`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pki {
    /// `caRootsData` (base64).
    #[serde(default)]
    pub ca_roots_data: String,
    /// `caIntermediatesData` (base64), optional.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_intermediates_data: String,
    /// `pkiCertificateSubject`.
    #[serde(default)]
    pub pki_certificate_subject: PkiCertificateSubject,
}

/// `rootOfTrust`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootOfTrust {
    /// `policyType` ([`policy_type`]).
    #[serde(default)]
    pub policy_type: String,
    /// `publicKey`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<PublicKey>,
    /// `fulcioCAWithRekor`.
    #[serde(
        default,
        rename = "fulcioCAWithRekor",
        skip_serializing_if = "Option::is_none"
    )]
    pub fulcio_ca_with_rekor: Option<FulcioCaWithRekor>,
    /// `pki`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pki: Option<Pki>,
}

/// `exactRepository`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactRepository {
    /// `repository`.
    #[serde(default)]
    pub repository: String,
}

/// `remapIdentity`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemapIdentity {
    /// `prefix`.
    #[serde(default)]
    pub prefix: String,
    /// `signedPrefix`.
    #[serde(default)]
    pub signed_prefix: String,
}

/// `signedIdentity`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedIdentity {
    /// `matchPolicy` ([`match_policy`]).
    #[serde(default)]
    pub match_policy: String,
    /// `exactRepository`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_repository: Option<ExactRepository>,
    /// `remapIdentity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remap_identity: Option<RemapIdentity>,
}

/// `spec.policy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SigstorePolicy {
    /// `rootOfTrust`.
    #[serde(default)]
    pub root_of_trust: RootOfTrust,
    /// `signedIdentity` (absent: `MatchRepoDigestOrExact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_identity: Option<SignedIdentity>,
}

/// The spec of both kinds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePolicySpec {
    /// `scopes`: registries, repositories or images (`*.` wildcards for hosts).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// `policy`.
    #[serde(default)]
    pub policy: SigstorePolicy,
}

/// A ClusterImagePolicy or an ImagePolicy as the registries controller reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImagePolicy {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` (empty for a ClusterImagePolicy).
    pub namespace: String,
    /// `spec`.
    pub spec: ImagePolicySpec,
}

impl ImagePolicy {
    /// Reads one object; `Err` with the decoder's message when its spec has a wrong type.
    pub fn from_json(v: &Value) -> Result<ImagePolicy, String> {
        let s = |p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let spec = match v.get("spec") {
            None | Some(Value::Null) => ImagePolicySpec::default(),
            Some(spec) => serde_json::from_value(spec.clone()).map_err(|e| e.to_string())?,
        };
        Ok(ImagePolicy {
            name: s("/metadata/name"),
            namespace: s("/metadata/namespace"),
            spec,
        })
    }

    /// Reads a list of objects, sorted by namespace and name (the order a listing gives them
    /// to the controller does not change what it writes, except for requirements of two
    /// policies on one scope, which then come in this order). Unreadable objects are skipped.
    pub fn read_all(list: &[Value]) -> Vec<ImagePolicy> {
        let mut out: Vec<ImagePolicy> = list
            .iter()
            .filter_map(|v| ImagePolicy::from_json(v).ok())
            .collect();
        out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_a_policy_with_every_root_of_trust_field() {
        let v = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {
            "scopes": ["quay.io/a"],
            "policy": {"rootOfTrust": {"policyType": "PKI", "pki": {
                "caRootsData": "Y2E=", "caIntermediatesData": "aQ==",
                "pkiCertificateSubject": {"email": "e@x", "hostname": "h"}}},
              "signedIdentity": {"matchPolicy": "RemapIdentity",
                "remapIdentity": {"prefix": "a", "signedPrefix": "b"}}}}});
        let p = ImagePolicy::from_json(&v).expect("reads");
        assert_eq!(p.namespace, "ns");
        let pki = p.spec.policy.root_of_trust.pki.expect("pki");
        assert_eq!(pki.ca_intermediates_data, "aQ==");
        assert_eq!(pki.pki_certificate_subject.hostname, "h");
        let id = p.spec.policy.signed_identity.expect("identity");
        assert_eq!(id.remap_identity.expect("remap").signed_prefix, "b");
    }

    #[test]
    fn a_wrong_type_is_an_error_not_a_panic() {
        let v = json!({"metadata": {"name": "p"}, "spec": {"scopes": "quay.io"}});
        assert!(ImagePolicy::from_json(&v).is_err());
    }
}
