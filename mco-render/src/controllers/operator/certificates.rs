//! The CA data of the `machine-config-controller` ControllerConfig, from the ConfigMaps
//! upstream's operator reads (`pkg/operator/sync.go`: `syncRenderConfig`, `getMCSCABundle`,
//! `getTrustedBundle`, `getImageRegistryBundles`, `syncCloudConfig`):
//!
//! | spec field | ConfigMap (namespace/name), key |
//! |---|---|
//! | `kubeAPIServerServingCAData` | once `kube-system/bootstrap` exists: `openshift-config-managed/kube-apiserver-client-ca`, `ca-bundle.crt`; before: `openshift-config/initial-kube-apiserver-server-ca`, `ca-bundle.crt`, its `kube-apiserver-to-kubelet-signer` certificate replaced by `openshift-kube-apiserver-operator/kube-apiserver-to-kubelet-client-ca`, `ca-bundle.crt` |
//! | `rootCAData` | `openshift-machine-config-operator/machine-config-server-ca`, `ca-bundle.crt`; without it `kube-system/root-ca`, `ca.crt` |
//! | `additionalTrustBundle` | `openshift-config/user-ca-bundle`, `ca-bundle.crt`, then the Proxy `cluster`'s `spec.trustedCA` ConfigMap in `openshift-config`, `ca-bundle.crt` |
//! | `imageRegistryBundleData` | every key of `openshift-config-managed/image-registry-ca` |
//! | `imageRegistryBundleUserData` | every key of the Image `cluster`'s `spec.additionalTrustedCA` ConfigMap in `openshift-config` |
//! | `cloudProviderCAData` | `openshift-config-managed/kube-cloud-config`, `ca-bundle.pem` |
//!
//! The operator also copies `openshift-config-managed/kube-apiserver-server-ca` into
//! `openshift-machine-config-operator/kubeconfig-data` ([`kubeconfig_data`]), which the
//! daemons read for their kubeconfig's CA.
//!
//! A value is read as upstream's `GetCAsFromConfigMap` reads it: `binaryData` first, else
//! `data`, base64-decoded when it decodes (Go's `StdEncoding`), as text otherwise.
//!
//! Where upstream fails the sync because a source is missing, this project leaves the field
//! alone instead (clusters that are not OpenShift have none of these ConfigMaps, and an
//! administrator may set the field there): a field is derived, and owned, only when its
//! source exists. The registry lists are owned as soon as the Image `cluster` exists, as
//! upstream requires it: a missing registry ConfigMap then means an empty list.

use crate::api::value_at::str_at;
use crate::api::ImageRegistryBundle;
use crate::gocompat::base64::{std_decode, std_encode};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The namespace of the cluster-wide config ConfigMaps administrators write.
pub const OPENSHIFT_CONFIG: &str = "openshift-config";
/// The namespace of the config ConfigMaps OpenShift's operators publish.
pub const OPENSHIFT_CONFIG_MANAGED: &str = "openshift-config-managed";
/// `kube-system`.
pub const KUBE_SYSTEM: &str = "kube-system";
/// The ConfigMap whose existence says the cluster finished bootstrapping.
pub const BOOTSTRAP: (&str, &str) = (KUBE_SYSTEM, "bootstrap");
/// The kube-apiserver's client CA bundle (after bootstrap).
pub const KUBE_APISERVER_CLIENT_CA: (&str, &str) =
    (OPENSHIFT_CONFIG_MANAGED, "kube-apiserver-client-ca");
/// The installer's kube-apiserver serving CA (before bootstrap completes).
pub const INITIAL_KUBE_APISERVER_SERVER_CA: (&str, &str) =
    (OPENSHIFT_CONFIG, "initial-kube-apiserver-server-ca");
/// The kube-apiserver-to-kubelet client CA, merged into the initial one.
pub const KUBE_APISERVER_TO_KUBELET_CLIENT_CA: (&str, &str) = (
    "openshift-kube-apiserver-operator",
    "kube-apiserver-to-kubelet-client-ca",
);
/// The machine-config-server's CA bundle, managed in the MCO's namespace.
pub const MACHINE_CONFIG_SERVER_CA: (&str, &str) = (
    "openshift-machine-config-operator",
    "machine-config-server-ca",
);
/// The installer's root CA, used when [`MACHINE_CONFIG_SERVER_CA`] does not exist.
pub const ROOT_CA: (&str, &str) = (KUBE_SYSTEM, "root-ca");
/// The administrator's trust bundle.
pub const USER_CA_BUNDLE: (&str, &str) = (OPENSHIFT_CONFIG, "user-ca-bundle");
/// The image registry CAs OpenShift publishes (one key per registry).
pub const IMAGE_REGISTRY_CA: (&str, &str) = (OPENSHIFT_CONFIG_MANAGED, "image-registry-ca");
/// The kube-apiserver's serving CA bundle, which nodes' kubeconfigs trust.
pub const KUBE_APISERVER_SERVER_CA: (&str, &str) =
    (OPENSHIFT_CONFIG_MANAGED, "kube-apiserver-server-ca");
/// The copy of [`KUBE_APISERVER_SERVER_CA`] in the MCO's namespace that the daemons read
/// (`binaryData`, `ca-bundle.crt`) for their kubeconfig.
pub const KUBECONFIG_DATA: (&str, &str) = ("openshift-machine-config-operator", "kubeconfig-data");
/// The cloud provider config, whose `ca-bundle.pem` is the cloud CA.
pub const KUBE_CLOUD_CONFIG: (&str, &str) = (OPENSHIFT_CONFIG_MANAGED, "kube-cloud-config");

/// The subject of the certificate in the initial serving CA that the
/// kube-apiserver-to-kubelet client CA replaces.
const KUBELET_SIGNER_SUBJECT: &str = "kube-apiserver-to-kubelet-signer";

/// A ConfigMap by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConfigMapRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl ConfigMapRef {
    fn of((namespace, name): (&str, &str)) -> Self {
        ConfigMapRef {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

/// The Proxy `cluster`'s trusted CA ConfigMap in `openshift-config`, when it names one other
/// than `user-ca-bundle` (that one is read anyway).
fn proxy_trusted_ca(proxy: Option<&Value>) -> Option<ConfigMapRef> {
    let name = str_at(proxy?, "/spec/trustedCA/name");
    (!name.is_empty() && name != USER_CA_BUNDLE.1)
        .then(|| ConfigMapRef::of((OPENSHIFT_CONFIG, name)))
}

/// The Image `cluster`'s additional trusted CA ConfigMap in `openshift-config`.
fn image_additional_trusted_ca(image: Option<&Value>) -> Option<ConfigMapRef> {
    let name = str_at(image?, "/spec/additionalTrustedCA/name");
    (!name.is_empty()).then(|| ConfigMapRef::of((OPENSHIFT_CONFIG, name)))
}

/// Every ConfigMap [`ca_fields`] may read, given the Proxy and Image `cluster` objects (they
/// name two of them). The adapter reads (and watches) these.
pub fn ca_configmaps(proxy: Option<&Value>, image: Option<&Value>) -> Vec<ConfigMapRef> {
    let mut out: Vec<ConfigMapRef> = [
        BOOTSTRAP,
        KUBE_APISERVER_CLIENT_CA,
        INITIAL_KUBE_APISERVER_SERVER_CA,
        KUBE_APISERVER_TO_KUBELET_CLIENT_CA,
        MACHINE_CONFIG_SERVER_CA,
        ROOT_CA,
        USER_CA_BUNDLE,
        IMAGE_REGISTRY_CA,
        KUBE_CLOUD_CONFIG,
        KUBE_APISERVER_SERVER_CA,
    ]
    .into_iter()
    .map(ConfigMapRef::of)
    .collect();
    out.extend(proxy_trusted_ca(proxy));
    out.extend(image_additional_trusted_ca(image));
    out.sort();
    out.dedup();
    out
}

/// What [`ca_fields`] reads: the ConfigMaps found (a missing one is absent) and the Proxy
/// and Image `cluster` objects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaSources {
    /// The ConfigMaps that exist, by reference.
    pub configmaps: BTreeMap<ConfigMapRef, Value>,
    /// The Proxy `cluster` (config.openshift.io/v1), when it exists.
    pub proxy: Option<Value>,
    /// The Image `cluster` (config.openshift.io/v1), when it exists.
    pub image: Option<Value>,
}

impl CaSources {
    fn get(&self, r: (&str, &str)) -> Option<&Value> {
        self.configmaps.get(&ConfigMapRef::of(r))
    }
}

/// A CA source the operator refuses, failing the pass as upstream does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaError {
    /// The ConfigMap exists without the key.
    #[error("{key} not found in {namespace}/{name}")]
    MissingKey {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The key.
        key: &'static str,
    },
    /// A ConfigMap a config object names does not exist.
    #[error("configmap {namespace}/{name} not found")]
    MissingConfigMap {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A trust bundle holds no certificate.
    #[error("configmap {namespace}/{name} doesn't have a valid PEM bundle")]
    NotPem {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

/// A ConfigMap value as upstream reads a CA: `binaryData[key]` (base64 in JSON), else
/// `data[key]` base64-decoded when it decodes, else its text; `None` without the key.
pub fn configmap_bytes(cm: &Value, key: &str) -> Option<Vec<u8>> {
    if let Some(b) = cm.get("binaryData").and_then(|d| d.get(key)) {
        return Some(b.as_str().and_then(std_decode).unwrap_or_default());
    }
    let d = cm.get("data")?.get(key)?.as_str()?;
    Some(std_decode(d).unwrap_or_else(|| d.as_bytes().to_vec()))
}

/// Every key of a ConfigMap as a registry bundle: `data`'s keys sorted (each value decoded
/// as [`configmap_bytes`] does), then `binaryData`'s sorted.
pub fn registry_bundles(cm: &Value) -> Vec<ImageRegistryBundle> {
    let mut out = Vec::new();
    for section in ["data", "binaryData"] {
        let Some(map) = cm.get(section).and_then(Value::as_object) else {
            continue;
        };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        for key in keys {
            let text = map[key.as_str()].as_str().unwrap_or("");
            let data = match section {
                "data" => std_decode(text).unwrap_or_else(|| text.as_bytes().to_vec()),
                _ => std_decode(text).unwrap_or_default(),
            };
            out.push(ImageRegistryBundle {
                file: key.clone(),
                data,
            });
        }
    }
    out
}

fn read(cm: &Value, r: (&str, &str), key: &'static str) -> Result<Vec<u8>, CaError> {
    configmap_bytes(cm, key).ok_or_else(|| CaError::MissingKey {
        namespace: r.0.to_string(),
        name: r.1.to_string(),
        key,
    })
}

/// Sets a `[]byte` field, base64 as Go encodes it; an empty value is no value (it would be
/// a placeholder, which never overwrites what is there).
fn put_bytes(out: &mut Map<String, Value>, field: &str, b: &[u8]) {
    if !b.is_empty() {
        out.insert(field.into(), json!(std_encode(b)));
    }
}

/// The CA fields of the ControllerConfig spec derivable from `src` (see the module
/// documentation for which source feeds which field). Fields whose source does not exist,
/// or holds nothing, are not in the result.
pub fn ca_fields(src: &CaSources) -> Result<Map<String, Value>, CaError> {
    let mut out = Map::new();
    if let Some(ca) = kube_apiserver_serving_ca(src)? {
        put_bytes(&mut out, "kubeAPIServerServingCAData", &ca);
    }
    let root = match src.get(MACHINE_CONFIG_SERVER_CA) {
        Some(cm) => Some(read(cm, MACHINE_CONFIG_SERVER_CA, "ca-bundle.crt")?),
        None => match src.get(ROOT_CA) {
            Some(cm) => Some(read(cm, ROOT_CA, "ca.crt")?),
            None => None,
        },
    };
    if let Some(root) = root {
        put_bytes(&mut out, "rootCAData", &root);
    }
    if let Some(bundle) = trust_bundle(src)? {
        put_bytes(&mut out, "additionalTrustBundle", &bundle);
    }
    if src.image.is_some() {
        let data = src
            .get(IMAGE_REGISTRY_CA)
            .map(registry_bundles)
            .unwrap_or_default();
        // Upstream only warns when the named ConfigMap is missing: no user bundles then.
        let user = image_additional_trusted_ca(src.image.as_ref())
            .and_then(|r| src.configmaps.get(&r))
            .map(registry_bundles)
            .unwrap_or_default();
        for (field, list) in [
            ("imageRegistryBundleData", data),
            ("imageRegistryBundleUserData", user),
        ] {
            let items: Vec<Value> = list.iter().map(ImageRegistryBundle::to_value).collect();
            out.insert(field.into(), Value::Array(items));
        }
    }
    if let Some(ca) = src
        .get(KUBE_CLOUD_CONFIG)
        .and_then(|cm| configmap_bytes(cm, "ca-bundle.pem"))
    {
        put_bytes(&mut out, "cloudProviderCAData", &ca);
    }
    Ok(out)
}

/// The `kubeconfig-data` ConfigMap to apply: [`KUBE_APISERVER_SERVER_CA`]'s `ca-bundle.crt`
/// under `binaryData`, as upstream's operator copies it for the daemons (`None` while the
/// serving CA does not exist or is empty). Upstream also waits a minute for the bundle to
/// settle before copying a change; this copies it on the pass that sees it.
pub fn kubeconfig_data(src: &CaSources) -> Option<Value> {
    let ca = configmap_bytes(src.get(KUBE_APISERVER_SERVER_CA)?, "ca-bundle.crt")?;
    if ca.is_empty() {
        return None;
    }
    Some(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": KUBECONFIG_DATA.0, "name": KUBECONFIG_DATA.1},
        "binaryData": {"ca-bundle.crt": std_encode(&ca)},
    }))
}

/// `kubeAPIServerServingCAData`: the client CA once bootstrapped, else the initial serving
/// CA with the kubelet signer replaced by the current kube-apiserver-to-kubelet client CA.
fn kube_apiserver_serving_ca(src: &CaSources) -> Result<Option<Vec<u8>>, CaError> {
    if src.get(BOOTSTRAP).is_some() {
        return match src.get(KUBE_APISERVER_CLIENT_CA) {
            Some(cm) => read(cm, KUBE_APISERVER_CLIENT_CA, "ca-bundle.crt").map(Some),
            None => Ok(None),
        };
    }
    let Some(cm) = src.get(INITIAL_KUBE_APISERVER_SERVER_CA) else {
        return Ok(None);
    };
    let initial = read(cm, INITIAL_KUBE_APISERVER_SERVER_CA, "ca-bundle.crt")?;
    let kubelet = src
        .get(KUBE_APISERVER_TO_KUBELET_CLIENT_CA)
        .and_then(|cm| configmap_bytes(cm, "ca-bundle.crt"));
    Ok(Some(match kubelet {
        Some(new) => replace_certificate(&initial, &new, KUBELET_SIGNER_SUBJECT),
        None => initial,
    }))
}

/// `additionalTrustBundle`: `user-ca-bundle` then the Proxy's trusted CA, each required to
/// hold a certificate; `None` when neither exists.
fn trust_bundle(src: &CaSources) -> Result<Option<Vec<u8>>, CaError> {
    let mut sources = vec![(ConfigMapRef::of(USER_CA_BUNDLE), false)];
    sources.extend(proxy_trusted_ca(src.proxy.as_ref()).map(|r| (r, true)));
    let mut bundle: Option<Vec<u8>> = None;
    for (r, required) in sources {
        let Some(cm) = src.configmaps.get(&r) else {
            if required {
                return Err(CaError::MissingConfigMap {
                    namespace: r.namespace,
                    name: r.name,
                });
            }
            continue;
        };
        let data = configmap_bytes(cm, "ca-bundle.crt").ok_or_else(|| CaError::MissingKey {
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            key: "ca-bundle.crt",
        })?;
        let acc = bundle.get_or_insert_with(Vec::new);
        if data.is_empty() {
            continue;
        }
        if !pem_blocks(&data).iter().any(|b| b.label == "CERTIFICATE") {
            return Err(CaError::NotPem {
                namespace: r.namespace,
                name: r.name,
            });
        }
        acc.extend_from_slice(&data);
    }
    Ok(bundle)
}

/// One PEM block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PemBlock {
    /// The type (`CERTIFICATE`).
    pub label: String,
    /// The decoded body.
    pub der: Vec<u8>,
}

impl PemBlock {
    /// The block as Go's `pem.EncodeToMemory` writes it (64-column base64 lines).
    pub fn encode(&self) -> Vec<u8> {
        let b64 = std_encode(&self.der);
        let mut out = format!("-----BEGIN {}-----\n", self.label);
        for chunk in b64.as_bytes().chunks(64) {
            out.push_str(&String::from_utf8_lossy(chunk));
            out.push('\n');
        }
        out.push_str(&format!("-----END {}-----\n", self.label));
        out.into_bytes()
    }
}

/// The PEM blocks of `data` whose body decodes, in order (text around and between them is
/// skipped, as Go's `pem.Decode` skips it).
pub fn pem_blocks(data: &[u8]) -> Vec<PemBlock> {
    let text = String::from_utf8_lossy(data);
    let mut out = Vec::new();
    let mut rest: &str = &text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + "-----BEGIN ".len()..];
        let Some(label_end) = after.find("-----") else {
            break;
        };
        let label = &after[..label_end];
        let body_start = &after[label_end + 5..];
        let end_marker = format!("-----END {label}-----");
        let Some(body_end) = body_start.find(&end_marker) else {
            break;
        };
        let body: String = body_start[..body_end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if let Some(der) = std_decode(&body) {
            out.push(PemBlock {
                label: label.to_string(),
                der,
            });
        }
        rest = &body_start[body_end + end_marker.len()..];
    }
    out
}

/// One DER element: its tag, its contents, the whole element, and the bytes after it.
type Tlv<'a> = (u8, &'a [u8], &'a [u8], &'a [u8]);

/// Reads one DER TLV at the start of `b`.
fn der_tlv(b: &[u8]) -> Option<Tlv<'_>> {
    let tag = *b.first()?;
    let first = *b.get(1)?;
    let (len, header) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | usize::from(*b.get(2 + i)?);
        }
        (len, 2 + n)
    };
    let end = header.checked_add(len)?;
    let contents = b.get(header..end)?;
    Some((tag, contents, &b[..end], &b[end..]))
}

/// The DER of an X.509 certificate's subject name, or `None` when `der` is not one.
pub fn certificate_subject(der: &[u8]) -> Option<&[u8]> {
    let (0x30, cert, _, _) = der_tlv(der)? else {
        return None;
    };
    let (0x30, tbs, _, _) = der_tlv(cert)? else {
        return None;
    };
    let mut rest = tbs;
    let (tag, _, _, after) = der_tlv(rest)?;
    if tag == 0xa0 {
        rest = after;
    }
    // serialNumber, signature, issuer, validity, then the subject.
    for _ in 0..4 {
        let (_, _, _, after) = der_tlv(rest)?;
        rest = after;
    }
    let (0x30, _, subject, _) = der_tlv(rest)? else {
        return None;
    };
    Some(subject)
}

/// `initial` with each certificate whose subject names `subject` replaced by `new` (as
/// upstream's `mergeCertWithCABundle`); the others re-encoded as Go encodes PEM. Blocks that
/// are not certificates are dropped (upstream never gets past one).
pub fn replace_certificate(initial: &[u8], new: &[u8], subject: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for block in pem_blocks(initial) {
        let Some(s) = certificate_subject(&block.der) else {
            continue;
        };
        if memchr_find(s, subject.as_bytes()) {
            out.extend_from_slice(new);
        } else {
            out.extend_from_slice(&block.encode());
        }
    }
    out
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests;
