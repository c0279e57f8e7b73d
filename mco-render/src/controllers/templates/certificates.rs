//! What upstream's template controller records of a ControllerConfig's CA bundles
//! (`status.controllerCertificates`), and what the node controller copies of them into each
//! pool's status (`status.certExpirys`).
//!
//! Each bundle is read as `createNewCert` reads it: PEM blocks in order, each parsed as a
//! certificate, the first one that does not parse ending that bundle (the certificates before
//! it stay). The spec's four CA fields come first (`KubeAPIServerServingCAData`,
//! `CloudProviderCAData`, `RootCAData`, `AdditionalTrustBundle`), then the image registry
//! bundles (`imageRegistryBundleData`, then `imageRegistryBundleUserData`) under their file
//! names. Names and times are Go's ([`crate::gocompat::pkix`]).

use crate::api::controller_config::{
    CaFieldError, ControllerCertificate, ControllerConfig, ControllerConfigSpec,
};
use crate::api::CertExpiry;
use crate::gocompat::pkix;

/// The bundle name of the API server's serving CA: the only one pools report.
pub const KUBE_API_SERVER_SERVING_CA: &str = "KubeAPIServerServingCAData";

/// The spec's CA fields with the names upstream records them under, in its order.
const CA_FIELDS: [(&str, &str); 4] = [
    ("kubeAPIServerServingCAData", KUBE_API_SERVER_SERVING_CA),
    ("cloudProviderCAData", "CloudProviderCAData"),
    ("rootCAData", "RootCAData"),
    ("additionalTrustBundle", "AdditionalTrustBundle"),
];

/// The certificates of one bundle, recorded under `name`.
pub fn bundle_certificates(bundle: &[u8], name: &str) -> Vec<ControllerCertificate> {
    let mut out = Vec::new();
    for der in pkix::pem_blocks(bundle) {
        let Some(cert) = pkix::certificate(&der) else {
            break;
        };
        out.push(ControllerCertificate {
            subject: cert.subject,
            signer: cert.issuer,
            not_before: rfc3339(cert.not_before),
            not_after: rfc3339(cert.not_after),
            bundle_file: name.to_string(),
        });
    }
    out
}

fn rfc3339(unix: i64) -> Option<String> {
    jiff::Timestamp::from_second(unix)
        .ok()
        .map(crate::controllers::rollout_policy::rfc3339)
}

/// `status.controllerCertificates` for `spec`. A CA field that is not base64 is an error
/// (the API server would not have stored it).
pub fn controller_certificates(
    spec: &ControllerConfigSpec,
) -> Result<Vec<ControllerCertificate>, CaFieldError> {
    let mut out = Vec::new();
    for (field, name) in CA_FIELDS {
        if let Some(bytes) = spec.ca_bytes(field)? {
            out.extend(bundle_certificates(&bytes, name));
        }
    }
    for field in crate::api::controller_config::IMAGE_REGISTRY_BUNDLE_FIELDS {
        for b in spec.image_registry_bundles(field)? {
            out.extend(bundle_certificates(&b.data, &b.file));
        }
    }
    Ok(out)
}

/// The `status.controllerCertificates` to write for `cc`: `None` when its status already holds
/// them, or when a CA field does not decode (nothing is recorded then, as upstream records
/// nothing for a bundle it cannot read).
pub fn certificates_update(cc: &ControllerConfig) -> Option<Vec<ControllerCertificate>> {
    let want = controller_certificates(&cc.spec).ok()?;
    let have = cc
        .status
        .as_ref()
        .map(|s| s.controller_certificates.as_slice())
        .unwrap_or_default();
    (want != have).then_some(want)
}

/// A pool's `status.certExpirys`: the API server serving CA's certificates the ControllerConfig
/// records (none without one).
pub fn cert_expirys(cc: Option<&ControllerConfig>) -> Vec<CertExpiry> {
    cc.and_then(|c| c.status.as_ref())
        .map(|s| s.controller_certificates.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|c| c.bundle_file == KUBE_API_SERVER_SERVING_CA)
        .map(|c| CertExpiry {
            bundle: c.bundle_file.clone(),
            subject: c.subject.clone(),
            expiry: c.not_after.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(rfc3339(0).as_deref(), Some("1970-01-01T00:00:00Z"));
        assert_eq!(
            rfc3339(1_767_225_600).as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
    }

    #[test]
    fn pools_report_the_serving_ca_only() {
        let mut cc = ControllerConfig::default();
        let cert = |bundle: &str, subject: &str| ControllerCertificate {
            subject: subject.into(),
            signer: "CN=root".into(),
            not_before: None,
            not_after: Some("2030-01-01T00:00:00Z".into()),
            bundle_file: bundle.into(),
        };
        cc.status = Some(crate::api::ControllerConfigStatus {
            controller_certificates: vec![
                cert(KUBE_API_SERVER_SERVING_CA, "CN=lb"),
                cert("RootCAData", "CN=root"),
                cert(KUBE_API_SERVER_SERVING_CA, "CN=localhost"),
            ],
            ..Default::default()
        });
        let got = cert_expirys(Some(&cc));
        assert_eq!(
            got.iter().map(|e| e.subject.as_str()).collect::<Vec<_>>(),
            ["CN=lb", "CN=localhost"]
        );
        assert_eq!(got[0].expiry.as_deref(), Some("2030-01-01T00:00:00Z"));
        assert!(cert_expirys(None).is_empty());
    }
}
