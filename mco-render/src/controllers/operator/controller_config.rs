//! The `machine-config-controller` ControllerConfig: the manifest's, with the cluster's
//! config.openshift.io/v1 `cluster` objects and the release's OS images folded in the way
//! upstream fills the spec.
//!
//! The operator owns only the spec fields it derives ([`OWNED_SPEC_FIELDS`]), and only when
//! it has a value for them: everything else in a live ControllerConfig (the OS images when
//! the release names none, fields an administrator added) is left as it is.

use super::{CONTROLLER_CONFIG_NAME, VERSION_ANNOTATION};
use crate::api::machine_config::RELEASE_IMAGE_VERSION_ANNOTATION;
use crate::api::value_at::{str_at, strings_at};
use serde_json::{json, Map, Value};
use std::net::IpAddr;

/// The ConfigMap in the operator's namespace naming the release's OS images (as upstream's
/// release payload ships it): `baseOSContainerImage`, `baseOSExtensionsContainerImage` and
/// the `releaseVersion` they belong to.
pub const OS_IMAGE_URL_CONFIGMAP: &str = "machine-config-osimageurl";

/// The ControllerConfig spec fields the operator owns: those [`build_controller_config`]
/// derives from the cluster's config objects, the release's OS images and the CA ConfigMaps
/// ([`super::certificates`]). On an existing
/// ControllerConfig only these are written, and only with a value (not null or `""`).
pub const OWNED_SPEC_FIELDS: &[&str] = &[
    "infra",
    "platform",
    "networkType",
    "ipFamilies",
    "clusterDNSIP",
    "dns",
    "proxy",
    "baseOSContainerImage",
    "baseOSExtensionsContainerImage",
    "kubeAPIServerServingCAData",
    "rootCAData",
    "additionalTrustBundle",
    "imageRegistryBundleData",
    "imageRegistryBundleUserData",
    "cloudProviderCAData",
];

/// The release's OS images; `None` where the release names none (the ControllerConfig's
/// value, whoever set it, is then kept).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OsImages {
    /// The OS image (`spec.baseOSContainerImage`).
    pub base_os_container_image: Option<String>,
    /// The OS extensions image (`spec.baseOSExtensionsContainerImage`).
    pub base_os_extensions_container_image: Option<String>,
}

/// An OS images ConfigMap the operator refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OsImagesError {
    /// The ConfigMap is for another release than the operator's: its images would roll the
    /// nodes to another release's OS.
    #[error(
        "refusing the OS images of ConfigMap \
         openshift-machine-config-operator/machine-config-osimageurl: they are for release \
         {found:?}, the operator is at {operator:?}"
    )]
    OtherRelease {
        /// The ConfigMap's `releaseVersion`.
        found: String,
        /// The operator's version.
        operator: String,
    },
}

/// The OS images of the `machine-config-osimageurl` ConfigMap, for an operator at
/// `operator_version`. Empty or missing keys name no image. A ConfigMap whose
/// `releaseVersion` is set and differs from the operator's version is refused, as upstream
/// does.
pub fn os_images_from_configmap(
    configmap: &Value,
    operator_version: &str,
) -> Result<OsImages, OsImagesError> {
    let release = str_at(configmap, "/data/releaseVersion");
    if !release.is_empty() && release != operator_version {
        return Err(OsImagesError::OtherRelease {
            found: release.to_string(),
            operator: operator_version.to_string(),
        });
    }
    let image = |key: &str| match str_at(configmap, &format!("/data/{key}")).trim() {
        "" => None,
        v => Some(v.to_string()),
    };
    Ok(OsImages {
        base_os_container_image: image("baseOSContainerImage"),
        base_os_extensions_container_image: image("baseOSExtensionsContainerImage"),
    })
}

/// The operator's inputs to the ControllerConfig: the cluster's config.openshift.io/v1
/// objects named `cluster`, when they exist, and the release's OS images.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterConfigObjects {
    /// The Infrastructure.
    pub infrastructure: Option<Value>,
    /// The Network.
    pub network: Option<Value>,
    /// The DNS.
    pub dns: Option<Value>,
    /// The Proxy.
    pub proxy: Option<Value>,
    /// The release's OS images.
    pub os_images: OsImages,
    /// The CA fields derived from the CA ConfigMaps ([`super::certificates::ca_fields`]);
    /// a field whose source does not exist is absent.
    pub certificates: Map<String, Value>,
    /// The `kubeconfig-data` ConfigMap to apply beside the ControllerConfig
    /// ([`super::certificates::kubeconfig_data`]), when the kube-apiserver's serving CA exists.
    pub kubeconfig_data: Option<Value>,
}

/// The object as the ControllerConfig carries it: identity, spec and status, without the
/// server-managed metadata that changes on every write.
fn embedded(obj: &Value) -> Value {
    let mut out = Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = obj.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    out.insert(
        "metadata".into(),
        json!({"name": str_at(obj, "/metadata/name")}),
    );
    for key in ["spec", "status"] {
        out.insert(key.into(), obj.get(key).cloned().unwrap_or(json!({})));
    }
    Value::Object(out)
}

/// The platform name of an Infrastructure, lowercase (`none` when unset).
fn platform(infra: &Value) -> String {
    let t = match str_at(infra, "/status/platformStatus/type") {
        "" => str_at(infra, "/status/platform"),
        t => t,
    };
    match t {
        "" => "none".to_string(),
        t => t.to_ascii_lowercase(),
    }
}

/// The Network's service CIDRs: the status's when set, else the spec's.
fn service_networks(network: &Value) -> Vec<String> {
    let status = strings_at(network, "/status/serviceNetwork");
    if status.is_empty() {
        strings_at(network, "/spec/serviceNetwork")
    } else {
        status
    }
}

/// The cluster DNS service address: the tenth address of the first service network.
pub fn cluster_dns_ip(cidr: &str) -> Option<String> {
    let (addr, _) = cidr.split_once('/')?;
    match addr.parse::<IpAddr>().ok()? {
        IpAddr::V4(a) => Some(std::net::Ipv4Addr::from(u32::from(a).checked_add(10)?).to_string()),
        IpAddr::V6(a) => Some(std::net::Ipv6Addr::from(u128::from(a).checked_add(10)?).to_string()),
    }
}

/// The IP families of the service networks: `IPv4`, `IPv6`, or dual stack (`DualStack` when
/// IPv4 comes first, `DualStackIPv6Primary` otherwise).
pub fn ip_families(cidrs: &[String]) -> Option<&'static str> {
    let v6: Vec<bool> = cidrs
        .iter()
        .filter_map(|c| c.split('/').next()?.parse::<IpAddr>().ok())
        .map(|a| a.is_ipv6())
        .collect();
    let first = *v6.first()?;
    let mixed = v6.iter().any(|&b| b != first);
    Some(match (first, mixed) {
        (false, false) => "IPv4",
        (true, false) => "IPv6",
        (false, true) => "DualStack",
        (true, true) => "DualStackIPv6Primary",
    })
}

/// Builds the ControllerConfig from the manifest's (or an empty one) and the cluster objects:
/// `spec.infra` and `spec.platform` from the Infrastructure, `spec.networkType`,
/// `spec.ipFamilies` and `spec.clusterDNSIP` from the Network, `spec.dns` from the DNS,
/// `spec.proxy` from the Proxy's status, the OS images from the release's, the CA fields
/// from the CA ConfigMaps, and the version and release image version annotations. Fields the inputs do not provide keep the manifest's values, except empty
/// placeholders (null or `""`), which are dropped; the status is dropped (the controller
/// owns it). The manifest's fields only seed a new ControllerConfig: on an existing one the
/// operator writes [`OWNED_SPEC_FIELDS`] alone.
pub fn build_controller_config(
    manifest: Option<&Value>,
    cluster: &ClusterConfigObjects,
    version: &str,
) -> Value {
    let mut cc = manifest.cloned().unwrap_or_else(|| json!({}));
    if !cc.is_object() {
        cc = json!({});
    }
    cc["apiVersion"] = json!("machineconfiguration.openshift.io/v1");
    cc["kind"] = json!("ControllerConfig");
    if let Some(m) = cc.as_object_mut() {
        m.remove("status");
    }
    if !cc["metadata"].is_object() {
        cc["metadata"] = json!({});
    }
    cc["metadata"]["name"] = json!(CONTROLLER_CONFIG_NAME);
    if !cc["metadata"]["annotations"].is_object() {
        cc["metadata"]["annotations"] = json!({});
    }
    cc["metadata"]["annotations"][VERSION_ANNOTATION] = json!(version);
    // Rendered configs carry it (upstream's operator stamps its release version here); the
    // MachineOSBuild of a layered pool is named from it.
    cc["metadata"]["annotations"][RELEASE_IMAGE_VERSION_ANNOTATION] = json!(version);
    if !cc["spec"].is_object() {
        cc["spec"] = json!({});
    }
    let spec = &mut cc["spec"];
    if let Some(m) = spec.as_object_mut() {
        m.retain(|_, v| !is_placeholder(v));
    }
    let images = &cluster.os_images;
    if let Some(image) = &images.base_os_container_image {
        spec["baseOSContainerImage"] = json!(image);
    }
    if let Some(image) = &images.base_os_extensions_container_image {
        spec["baseOSExtensionsContainerImage"] = json!(image);
    }
    if let Some(infra) = &cluster.infrastructure {
        spec["infra"] = embedded(infra);
        spec["platform"] = json!(platform(infra));
    }
    if let Some(network) = &cluster.network {
        let network_type = match str_at(network, "/status/networkType") {
            "" => str_at(network, "/spec/networkType"),
            t => t,
        };
        if !network_type.is_empty() {
            spec["networkType"] = json!(network_type);
        }
        let cidrs = service_networks(network);
        if let Some(f) = ip_families(&cidrs) {
            spec["ipFamilies"] = json!(f);
        }
        if let Some(ip) = cidrs.first().and_then(|c| cluster_dns_ip(c)) {
            spec["clusterDNSIP"] = json!(ip);
        }
    }
    if let Some(dns) = &cluster.dns {
        spec["dns"] = embedded(dns);
    }
    for (field, value) in &cluster.certificates {
        spec[field.as_str()] = value.clone();
    }
    if let Some(status) = cluster.proxy.as_ref().and_then(|p| p.get("status")) {
        if status.as_object().is_some_and(|m| !m.is_empty()) {
            spec["proxy"] = status.clone();
        }
    }
    cc
}

/// Whether a value is an empty placeholder (null or `""`) rather than a value to write.
pub fn is_placeholder(v: &Value) -> bool {
    v.is_null() || v.as_str().is_some_and(|s| s.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Value {
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "ControllerConfig",
               "metadata": {"name": "machine-config-controller"},
               "spec": {"baseOSContainerImage": "os:1", "baseOSExtensionsContainerImage": ""},
               "status": {"observedGeneration": 3}})
    }

    #[test]
    fn keeps_the_manifest_and_adds_the_version() {
        let cc =
            build_controller_config(Some(&manifest()), &ClusterConfigObjects::default(), "4.1");
        assert_eq!(cc["spec"]["baseOSContainerImage"], "os:1");
        // An empty placeholder is not a value.
        assert!(cc["spec"].get("baseOSExtensionsContainerImage").is_none());
        assert_eq!(cc["metadata"]["annotations"][VERSION_ANNOTATION], "4.1");
        assert_eq!(
            cc["metadata"]["annotations"][RELEASE_IMAGE_VERSION_ANNOTATION],
            "4.1"
        );
        assert!(cc.get("status").is_none());
        assert!(cc["spec"].get("infra").is_none());
    }

    #[test]
    fn without_a_manifest_builds_a_skeleton() {
        let cc = build_controller_config(None, &ClusterConfigObjects::default(), "v");
        assert_eq!(cc["metadata"]["name"], CONTROLLER_CONFIG_NAME);
        assert_eq!(cc["kind"], "ControllerConfig");
        assert_eq!(cc["spec"], json!({}));
    }

    #[test]
    fn folds_infrastructure() {
        let infra = json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
            "metadata": {"name": "cluster", "resourceVersion": "77", "uid": "u"},
            "spec": {"platformSpec": {"type": "AWS"}},
            "status": {"platformStatus": {"type": "AWS", "aws": {"region": "us-east-1"}},
                       "infrastructureName": "c-1"}});
        let cluster = ClusterConfigObjects {
            infrastructure: Some(infra),
            ..Default::default()
        };
        let cc = build_controller_config(Some(&manifest()), &cluster, "v");
        assert_eq!(cc["spec"]["platform"], "aws");
        assert_eq!(cc["spec"]["infra"]["status"]["infrastructureName"], "c-1");
        assert_eq!(cc["spec"]["infra"]["metadata"], json!({"name": "cluster"}));
        let none = json!({"metadata": {"name": "cluster"}, "status": {}});
        assert_eq!(platform(&none), "none");
        let legacy = json!({"status": {"platform": "BareMetal"}});
        assert_eq!(platform(&legacy), "baremetal");
    }

    #[test]
    fn folds_network_dns_and_proxy() {
        let cluster = ClusterConfigObjects {
            network: Some(json!({"metadata": {"name": "cluster"},
                "spec": {"networkType": "OpenShiftSDN", "serviceNetwork": ["10.0.0.0/16"]},
                "status": {"networkType": "OVNKubernetes",
                           "serviceNetwork": ["172.30.0.0/16", "fd02::/112"]}})),
            dns: Some(
                json!({"metadata": {"name": "cluster"}, "spec": {"baseDomain": "example.com"}}),
            ),
            proxy: Some(json!({"metadata": {"name": "cluster"},
                "status": {"httpProxy": "http://p:3128", "noProxy": ".cluster.local"}})),
            ..Default::default()
        };
        let cc = build_controller_config(Some(&manifest()), &cluster, "v");
        assert_eq!(cc["spec"]["networkType"], "OVNKubernetes");
        assert_eq!(cc["spec"]["ipFamilies"], "DualStack");
        assert_eq!(cc["spec"]["clusterDNSIP"], "172.30.0.10");
        assert_eq!(cc["spec"]["dns"]["spec"]["baseDomain"], "example.com");
        assert_eq!(cc["spec"]["proxy"]["httpProxy"], "http://p:3128");
        let empty_proxy = ClusterConfigObjects {
            proxy: Some(json!({"metadata": {"name": "cluster"}, "status": {}})),
            ..Default::default()
        };
        let cc = build_controller_config(Some(&manifest()), &empty_proxy, "v");
        assert!(cc["spec"].get("proxy").is_none());
    }

    #[test]
    fn service_network_rules() {
        assert_eq!(cluster_dns_ip("fd02::/112").as_deref(), Some("fd02::a"));
        assert_eq!(cluster_dns_ip("nonsense"), None);
        assert_eq!(ip_families(&["fd02::/112".into()]), Some("IPv6"));
        assert_eq!(
            ip_families(&["fd02::/112".into(), "10.0.0.0/8".into()]),
            Some("DualStackIPv6Primary")
        );
        assert_eq!(ip_families(&[]), None);
    }

    fn osimageurl(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": OS_IMAGE_URL_CONFIGMAP, "namespace": super::super::NAMESPACE},
               "data": data})
    }

    #[test]
    fn os_images_come_from_the_release_configmap() {
        let cm = osimageurl(
            json!({"releaseVersion": "4.1", "baseOSContainerImage": "os:2",
            "baseOSExtensionsContainerImage": "ext:2", "osImageURL": ""}),
        );
        assert_eq!(
            os_images_from_configmap(&cm, "4.1"),
            Ok(OsImages {
                base_os_container_image: Some("os:2".into()),
                base_os_extensions_container_image: Some("ext:2".into()),
            })
        );
        // Empty values name no image; no releaseVersion is any release's.
        let cm = osimageurl(json!({"baseOSContainerImage": "os:2",
            "baseOSExtensionsContainerImage": " "}));
        assert_eq!(
            os_images_from_configmap(&cm, "4.1"),
            Ok(OsImages {
                base_os_container_image: Some("os:2".into()),
                base_os_extensions_container_image: None,
            })
        );
        assert_eq!(
            os_images_from_configmap(&json!({}), "4.1"),
            Ok(OsImages::default())
        );
    }

    #[test]
    fn another_releases_os_images_are_refused() {
        let cm = osimageurl(json!({"releaseVersion": "4.0", "baseOSContainerImage": "os:old"}));
        let err = os_images_from_configmap(&cm, "4.1");
        assert_eq!(
            err,
            Err(OsImagesError::OtherRelease {
                found: "4.0".into(),
                operator: "4.1".into()
            })
        );
        let msg = err.map_err(|e| e.to_string()).err().unwrap_or_default();
        assert!(
            msg.contains(&format!(
                "{}/{OS_IMAGE_URL_CONFIGMAP}",
                super::super::NAMESPACE
            )),
            "{msg}"
        );
    }

    #[test]
    fn the_release_images_replace_the_manifests() {
        let cluster = ClusterConfigObjects {
            os_images: OsImages {
                base_os_container_image: Some("os:2".into()),
                base_os_extensions_container_image: Some("ext:2".into()),
            },
            ..Default::default()
        };
        let cc = build_controller_config(Some(&manifest()), &cluster, "v");
        assert_eq!(cc["spec"]["baseOSContainerImage"], "os:2");
        assert_eq!(cc["spec"]["baseOSExtensionsContainerImage"], "ext:2");
        // Without release images the manifest's non-empty value seeds a new ControllerConfig.
        let cc = build_controller_config(Some(&manifest()), &ClusterConfigObjects::default(), "v");
        assert_eq!(cc["spec"]["baseOSContainerImage"], "os:1");
    }

    #[test]
    fn every_derived_field_is_owned() {
        let cluster = ClusterConfigObjects {
            infrastructure: Some(json!({"metadata": {"name": "cluster"},
                "status": {"platformStatus": {"type": "AWS"}}})),
            network: Some(json!({"metadata": {"name": "cluster"},
                "status": {"networkType": "OVNKubernetes", "serviceNetwork": ["172.30.0.0/16"]}})),
            dns: Some(json!({"metadata": {"name": "cluster"}, "spec": {"baseDomain": "e.com"}})),
            proxy: Some(json!({"metadata": {"name": "cluster"}, "status": {"httpProxy": "p"}})),
            os_images: OsImages {
                base_os_container_image: Some("os:2".into()),
                base_os_extensions_container_image: Some("ext:2".into()),
            },
            certificates: super::super::certificates::ca_fields(&full_ca_sources())
                .unwrap_or_default(),
            kubeconfig_data: None,
        };
        let cc = build_controller_config(None, &cluster, "v");
        let mut set: Vec<&str> = cc["spec"]
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        set.sort_unstable();
        let mut owned = OWNED_SPEC_FIELDS.to_vec();
        owned.sort_unstable();
        assert_eq!(set, owned);
    }

    /// Every CA ConfigMap, so that every CA field is derived.
    fn full_ca_sources() -> super::super::certificates::CaSources {
        use super::super::certificates::*;
        let cms = [
            (BOOTSTRAP, "x", "v"),
            (KUBE_APISERVER_CLIENT_CA, "ca-bundle.crt", "client-ca"),
            (MACHINE_CONFIG_SERVER_CA, "ca-bundle.crt", "mcs-ca"),
            (
                USER_CA_BUNDLE,
                "ca-bundle.crt",
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            ),
            (IMAGE_REGISTRY_CA, "r.example", "r"),
            (KUBE_CLOUD_CONFIG, "ca-bundle.pem", "cloud"),
        ];
        CaSources {
            configmaps: cms
                .iter()
                .map(|((ns, name), k, v)| {
                    (
                        ConfigMapRef {
                            namespace: ns.to_string(),
                            name: name.to_string(),
                        },
                        json!({"metadata": {"namespace": ns, "name": name}, "data": {*k: v}}),
                    )
                })
                .collect(),
            image: Some(json!({"metadata": {"name": "cluster"}, "spec": {}})),
            proxy: None,
        }
    }

    #[test]
    fn ca_fields_are_written_and_an_administrators_value_is_kept_without_a_source() {
        use super::super::ownership::update_for;
        let live = json!({"apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "ControllerConfig",
            "metadata": {"name": CONTROLLER_CONFIG_NAME, "resourceVersion": "5",
                         "annotations": {VERSION_ANNOTATION: "v"}},
            "spec": {"kubeAPIServerServingCAData": "YWRtaW4=", "rootCAData": "b2xk",
                     "cloudProviderCAData": "YWRtaW4tY2xvdWQ="}});
        // Only the machine-config-server CA exists: rootCAData is the operator's; the
        // administrator's serving and cloud CAs (no source for them) stay.
        let mut src = super::super::certificates::CaSources {
            configmaps: full_ca_sources()
                .configmaps
                .into_iter()
                .filter(|(r, _)| r.name == "machine-config-server-ca")
                .collect(),
            ..Default::default()
        };
        let cluster = ClusterConfigObjects {
            certificates: super::super::certificates::ca_fields(&src).unwrap_or_default(),
            ..Default::default()
        };
        let desired = build_controller_config(None, &cluster, "v");
        let patch = update_for(&desired, &live).map(|p| p.0).unwrap_or_default();
        assert_eq!(patch["spec"], json!({"rootCAData": "bWNzLWNh"}), "{patch}");
        // Once the cloud config exists, its CA replaces the administrator's.
        src.configmaps = full_ca_sources()
            .configmaps
            .into_iter()
            .filter(|(r, _)| r.name == "kube-cloud-config")
            .collect();
        let cluster = ClusterConfigObjects {
            certificates: super::super::certificates::ca_fields(&src).unwrap_or_default(),
            ..Default::default()
        };
        let desired = build_controller_config(None, &cluster, "v");
        let patch = update_for(&desired, &live).map(|p| p.0).unwrap_or_default();
        assert_eq!(
            patch["spec"],
            json!({"cloudProviderCAData": "Y2xvdWQ="}),
            "{patch}"
        );
    }

    #[test]
    fn placeholders() {
        assert!(is_placeholder(&json!(null)));
        assert!(is_placeholder(&json!("")));
        assert!(is_placeholder(&json!("  ")));
        assert!(!is_placeholder(&json!("x")));
        assert!(!is_placeholder(&json!({})));
        assert!(!is_placeholder(&json!(false)));
    }
}
