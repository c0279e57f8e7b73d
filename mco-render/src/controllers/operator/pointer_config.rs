//! The pointer config a new machine boots with, and the `<pool>-user-data-managed` Secret that
//! carries it, as upstream's operator makes them (`PointerConfig` in
//! `pkg/controller/common/helpers.go`, `getIgnitionHost`, `getMCSCABundle` and the user-data
//! loop of `syncMachineConfigPools` in `pkg/operator/sync.go`,
//! `manifests/userdata_secret.yaml`).
//!
//! A pointer config is the whole of a machine's first input: it merges the pool's config from
//! the machine-config-server (`https://<host>:22623/config/<pool>`) and trusts the server's CA,
//! given inline as a data URL, so that Ignition verifies the server's certificate before it
//! takes anything from it.

use crate::controllers::operator::NAMESPACE;
use mco_ignition::gocompat::json::to_go_compact;
use mco_ignition::SpecVersion;
use serde_json::{json, Value};

/// The machine-config-server's TLS port, the one every pointer config names.
pub const SECURE_PORT: u16 = 22623;

/// The namespace the user-data Secrets live in (the machine API's).
pub const USER_DATA_NAMESPACE: &str = "openshift-machine-api";

/// The key of the pointer config in a user-data Secret.
pub const USER_DATA_KEY: &str = "userData";

/// The label of the Secrets whose CA comes from the `machine-config-server-ca` ConfigMap.
pub const MANAGED_CA_LABEL: &str =
    "machineconfiguration.openshift.io/managed-ca-bundle-derived-from-configmap";

/// The ConfigMap (in the MCO namespace) holding every CA the server's certificate may be
/// signed by, under [`MCS_CA_KEY`].
pub const MCS_CA_CONFIGMAP: &str = "machine-config-server-ca";
/// The key of the bundle in [`MCS_CA_CONFIGMAP`].
pub const MCS_CA_KEY: &str = "ca-bundle.crt";
/// The cluster's root CA ConfigMap (in `kube-system`), read when [`MCS_CA_CONFIGMAP`] is absent.
pub const ROOT_CA_CONFIGMAP: &str = "root-ca";
/// The namespace of [`ROOT_CA_CONFIGMAP`].
pub const ROOT_CA_NAMESPACE: &str = "kube-system";
/// The key of the certificate in [`ROOT_CA_CONFIGMAP`].
pub const ROOT_CA_KEY: &str = "ca.crt";

/// Why no pointer config can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PointerConfigError {
    /// The Infrastructure names no host for the internal API (and its platform no internal IP).
    #[error("the Infrastructure's status.apiServerInternalURI names no host: {0:?}")]
    NoHost(String),
    /// Neither CA ConfigMap holds a bundle.
    #[error(
        "no CA bundle for the machine-config-server: neither ConfigMap {NAMESPACE}/{MCS_CA_CONFIGMAP} \
         ({MCS_CA_KEY}) nor {ROOT_CA_NAMESPACE}/{ROOT_CA_CONFIGMAP} ({ROOT_CA_KEY})"
    )]
    NoCa,
}

/// The CA bundle the pointer configs carry: the `machine-config-server-ca` ConfigMap's bundle
/// when that ConfigMap exists, else the cluster's root CA (`kube-system/root-ca`), as upstream's
/// `getMCSCABundle` reads them.
pub fn ca_bundle(
    mcs_ca: Option<&Value>,
    root_ca: Option<&Value>,
) -> Result<Vec<u8>, PointerConfigError> {
    let (cm, key) = match mcs_ca {
        Some(cm) => (cm, MCS_CA_KEY),
        None => (root_ca.ok_or(PointerConfigError::NoCa)?, ROOT_CA_KEY),
    };
    cm["data"][key]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(|s| s.as_bytes().to_vec())
        .ok_or(PointerConfigError::NoCa)
}

/// Where machines fetch their config: `<host>:22623`, the host being the internal API URL's
/// (`status.apiServerInternalURI` of the Infrastructure `cluster`), or, on bare metal,
/// OpenStack, oVirt and vSphere with internal IPs, the first internal API IP (upstream's
/// `getIgnitionHost`). As upstream, an IPv6 host from the URL is not bracketed; one from the
/// IPs is.
pub fn ignition_host(infra: &Value) -> Result<String, PointerConfigError> {
    let status = &infra["status"];
    let platform = &status["platformStatus"];
    let ips = |key: &str| -> Option<String> {
        platform[key]["apiServerInternalIPs"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .map(|ip| join_host_port(ip, SECURE_PORT))
    };
    match platform["type"].as_str().unwrap_or("") {
        "BareMetal" => return ips("baremetal").ok_or_else(|| no_host(status)),
        "OpenStack" => return ips("openstack").ok_or_else(|| no_host(status)),
        "Ovirt" => return ips("ovirt").ok_or_else(|| no_host(status)),
        "VSphere" => {
            if let Some(h) = ips("vsphere") {
                return Ok(h);
            }
        }
        _ => {}
    }
    let url = status["apiServerInternalURI"].as_str().unwrap_or("");
    let host = url_hostname(url).ok_or_else(|| no_host(status))?;
    Ok(format!("{host}:{SECURE_PORT}"))
}

fn no_host(status: &Value) -> PointerConfigError {
    PointerConfigError::NoHost(
        status["apiServerInternalURI"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

/// Go's `net.JoinHostPort`: an IPv6 host in brackets.
fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The host of a URL without its port or IPv6 brackets (Go's `url.URL.Hostname`), `None` when
/// it has none.
fn url_hostname(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = hostport.strip_prefix('[') {
        v6.split_once(']')?.0
    } else {
        hostport.split_once(':').map_or(hostport, |(h, _)| h)
    };
    (!host.is_empty()).then_some(host)
}

/// The CA as upstream's pointer carries it (`dataurl.EncodeBytes`: base64, the media type Go
/// detects for PEM text).
pub fn ca_data_url(ca: &[u8]) -> String {
    use base64::Engine as _;
    format!(
        "data:text/plain;charset=utf-8;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(ca)
    )
}

/// The pointer config of `pool`: spec `version`, merging `https://<ignition_host>/config/<pool>`
/// and trusting `ca` (PEM), as the JSON upstream marshals (its struct order, its empty
/// sections). Upstream writes it at the newest spec its Ignition library knows (the release's
/// rendered spec); a machine whose Ignition is older needs one it reads (3.0.0 has every field
/// a pointer uses).
pub fn pointer_config(ignition_host: &str, pool: &str, ca: &[u8], version: SpecVersion) -> Value {
    let mut config = json!({
        "ignition": {
            "config": {
                "merge": [{"source": format!("https://{ignition_host}/config/{pool}"),
                           "verification": {}}],
                "replace": {"verification": {}}
            },
            "proxy": {},
            "security": {"tls": {"certificateAuthorities": [
                {"source": ca_data_url(ca), "verification": {}}
            ]}},
            "timeouts": {},
            "version": version.as_str()
        }
    });
    if version >= SpecVersion::V3_3 {
        config["kernelArguments"] = json!({});
    }
    config["passwd"] = json!({});
    config["storage"] = json!({});
    config["systemd"] = json!({});
    config
}

/// The pointer config's bytes as upstream stores them (Go's compact JSON, struct order).
pub fn pointer_config_bytes(pointer: &Value) -> String {
    to_go_compact(pointer)
}

/// The `<pool>-user-data-managed` Secret of `pool` carrying `pointer`, owned by the pool.
pub fn user_data_secret(pool: &str, pool_uid: &str, pointer: &Value) -> Value {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": user_data_secret_name(pool),
            "namespace": USER_DATA_NAMESPACE,
            "labels": {MANAGED_CA_LABEL: ""},
            "ownerReferences": [{
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfigPool",
                "name": pool,
                "uid": pool_uid
            }]
        },
        "type": "Opaque",
        "data": {
            "disableTemplating": b64("true\n"),
            USER_DATA_KEY: b64(&pointer_config_bytes(pointer))
        }
    })
}

/// The name of `pool`'s user-data Secret.
pub fn user_data_secret_name(pool: &str) -> String {
    format!("{pool}-user-data-managed")
}

/// The pointer config a user-data Secret carries, `None` when it carries none that parses.
pub fn pointer_of_secret(secret: &Value) -> Option<Value> {
    use base64::Engine as _;
    let data = secret["data"][USER_DATA_KEY].as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The CA bundles (PEM) a pointer config trusts, decoded from their data URLs.
pub fn pointer_cas(pointer: &Value) -> Vec<Vec<u8>> {
    pointer["ignition"]["security"]["tls"]["certificateAuthorities"]
        .as_array()
        .map(|cas| {
            cas.iter()
                .filter_map(|c| c["source"].as_str())
                .filter_map(|s| mco_ignition::dataurl::parse(s).ok())
                .map(|d| d.data)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
