//! Tests of the CA fields: which ConfigMap feeds which field, and the PEM handling.

use super::*;

/// Self-signed test certificates (openssl, P-256), subjects `OU=openshift, CN=<name>`.
const KUBE_APISERVER_TO_KUBELET_SIGNER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/certs/kube-apiserver-to-kubelet-signer.pem"
));
const OTHER_SIGNER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/certs/other-signer.pem"
));
const NEW_SIGNER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/certs/new-signer.pem"
));

fn cm(r: (&str, &str), data: Value) -> (ConfigMapRef, Value) {
    (
        ConfigMapRef::of(r),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"namespace": r.0, "name": r.1}, "data": data}),
    )
}

fn sources(cms: Vec<(ConfigMapRef, Value)>) -> CaSources {
    CaSources {
        configmaps: cms.into_iter().collect(),
        ..Default::default()
    }
}

fn decoded(fields: &Map<String, Value>, field: &str) -> Option<String> {
    let b = std_decode(fields.get(field)?.as_str()?)?;
    String::from_utf8(b).ok()
}

#[test]
fn each_configmap_feeds_its_field() {
    let src = sources(vec![
        cm(BOOTSTRAP, json!({"status": "complete"})),
        cm(
            KUBE_APISERVER_CLIENT_CA,
            json!({"ca-bundle.crt": OTHER_SIGNER}),
        ),
        cm(MACHINE_CONFIG_SERVER_CA, json!({"ca-bundle.crt": "mcs-ca"})),
        cm(ROOT_CA, json!({"ca.crt": "root-ca"})),
        cm(USER_CA_BUNDLE, json!({"ca-bundle.crt": NEW_SIGNER})),
        cm(
            KUBE_CLOUD_CONFIG,
            json!({"ca-bundle.pem": "cloud-ca", "cloud.conf": "x"}),
        ),
    ]);
    let f = ca_fields(&src).unwrap_or_default();
    assert_eq!(
        decoded(&f, "kubeAPIServerServingCAData").as_deref(),
        Some(OTHER_SIGNER)
    );
    // The managed MCS bundle wins over the installer's root CA.
    assert_eq!(decoded(&f, "rootCAData").as_deref(), Some("mcs-ca"));
    assert_eq!(
        decoded(&f, "additionalTrustBundle").as_deref(),
        Some(NEW_SIGNER)
    );
    assert_eq!(
        decoded(&f, "cloudProviderCAData").as_deref(),
        Some("cloud-ca")
    );
    // No Image `cluster`: the registry lists are not derived.
    assert!(f.get("imageRegistryBundleData").is_none());
    // Without the managed bundle, the root CA is the installer's.
    let src = sources(vec![cm(ROOT_CA, json!({"ca.crt": "root-ca"}))]);
    let f = ca_fields(&src).unwrap_or_default();
    assert_eq!(decoded(&f, "rootCAData").as_deref(), Some("root-ca"));
    assert_eq!(f.len(), 1, "{f:?}");
}

#[test]
fn nothing_is_derived_without_sources() {
    assert_eq!(ca_fields(&CaSources::default()), Ok(Map::new()));
    // Bootstrapped but without the client CA: the field is left to whoever set it.
    let src = sources(vec![cm(BOOTSTRAP, json!({}))]);
    assert_eq!(ca_fields(&src), Ok(Map::new()));
}

#[test]
fn before_bootstrap_the_initial_ca_has_the_kubelet_signer_replaced() {
    let initial = format!("{KUBE_APISERVER_TO_KUBELET_SIGNER}{OTHER_SIGNER}");
    let src = sources(vec![
        cm(
            KUBE_APISERVER_CLIENT_CA,
            json!({"ca-bundle.crt": "ignored before bootstrap"}),
        ),
        cm(
            INITIAL_KUBE_APISERVER_SERVER_CA,
            json!({"ca-bundle.crt": initial}),
        ),
        cm(
            KUBE_APISERVER_TO_KUBELET_CLIENT_CA,
            json!({"ca-bundle.crt": NEW_SIGNER}),
        ),
    ]);
    let f = ca_fields(&src).unwrap_or_default();
    assert_eq!(
        decoded(&f, "kubeAPIServerServingCAData"),
        Some(format!("{NEW_SIGNER}{OTHER_SIGNER}"))
    );
    // Without the kubelet client CA, the initial bundle as it is.
    let src = sources(vec![cm(
        INITIAL_KUBE_APISERVER_SERVER_CA,
        json!({"ca-bundle.crt": initial}),
    )]);
    let f = ca_fields(&src).unwrap_or_default();
    assert_eq!(decoded(&f, "kubeAPIServerServingCAData"), Some(initial));
}

#[test]
fn values_are_read_as_upstream_reads_them() {
    // binaryData first; data base64-decoded when it decodes, else as text.
    let both = json!({"data": {"k": "text"}, "binaryData": {"k": "Ymlu"}});
    assert_eq!(configmap_bytes(&both, "k"), Some(b"bin".to_vec()));
    let encoded = json!({"data": {"k": "aGk="}});
    assert_eq!(configmap_bytes(&encoded, "k"), Some(b"hi".to_vec()));
    let pem = json!({"data": {"k": OTHER_SIGNER}});
    assert_eq!(
        configmap_bytes(&pem, "k"),
        Some(OTHER_SIGNER.as_bytes().to_vec())
    );
    assert_eq!(configmap_bytes(&pem, "other"), None);
}

#[test]
fn a_configmap_without_its_key_fails() {
    let src = sources(vec![cm(MACHINE_CONFIG_SERVER_CA, json!({"other": "x"}))]);
    assert_eq!(
        ca_fields(&src),
        Err(CaError::MissingKey {
            namespace: "openshift-machine-config-operator".into(),
            name: "machine-config-server-ca".into(),
            key: "ca-bundle.crt"
        })
    );
}

#[test]
fn the_trust_bundle_adds_the_proxys_and_must_be_pem() {
    let mut src = sources(vec![
        cm(USER_CA_BUNDLE, json!({"ca-bundle.crt": NEW_SIGNER})),
        cm(
            (OPENSHIFT_CONFIG, "proxy-ca"),
            json!({"ca-bundle.crt": OTHER_SIGNER}),
        ),
    ]);
    src.proxy = Some(json!({"spec": {"trustedCA": {"name": "proxy-ca"}}}));
    let f = ca_fields(&src).unwrap_or_default();
    assert_eq!(
        decoded(&f, "additionalTrustBundle"),
        Some(format!("{NEW_SIGNER}{OTHER_SIGNER}"))
    );
    assert!(ca_configmaps(src.proxy.as_ref(), None)
        .contains(&ConfigMapRef::of((OPENSHIFT_CONFIG, "proxy-ca"))));
    // A proxy naming a missing ConfigMap fails; so does a bundle without a certificate.
    src.proxy = Some(json!({"spec": {"trustedCA": {"name": "gone"}}}));
    assert!(matches!(
        ca_fields(&src),
        Err(CaError::MissingConfigMap { .. })
    ));
    let src = sources(vec![cm(
        USER_CA_BUNDLE,
        json!({"ca-bundle.crt": "not a cert"}),
    )]);
    assert!(matches!(ca_fields(&src), Err(CaError::NotPem { .. })));
}

#[test]
fn registry_bundles_come_from_the_managed_and_the_images_configmaps() {
    let mut src = sources(vec![
        cm(
            IMAGE_REGISTRY_CA,
            json!({"b.example..5000": "Yg==", "a.example": "plain text"}),
        ),
        cm(
            (OPENSHIFT_CONFIG, "registry-cas"),
            json!({"user.example": "u"}),
        ),
    ]);
    if let Some(c) = src.configmaps.get_mut(&ConfigMapRef::of(IMAGE_REGISTRY_CA)) {
        c["binaryData"] = json!({"0.example": "YmluYXJ5"});
    }
    src.image = Some(json!({"spec": {"additionalTrustedCA": {"name": "registry-cas"}}}));
    let f = ca_fields(&src).unwrap_or_default();
    // data keys sorted, then binaryData keys.
    assert_eq!(
        f["imageRegistryBundleData"],
        json!([{"file": "a.example", "data": std_encode(b"plain text")},
               {"file": "b.example..5000", "data": "Yg=="},
               {"file": "0.example", "data": "YmluYXJ5"}])
    );
    assert_eq!(
        f["imageRegistryBundleUserData"],
        json!([{"file": "user.example", "data": "dQ=="}])
    );
    // With the Image `cluster` but without the ConfigMaps: empty lists (stale CAs go).
    let src = CaSources {
        image: Some(json!({"spec": {}})),
        ..Default::default()
    };
    let f = ca_fields(&src).unwrap_or_default();
    assert_eq!(f["imageRegistryBundleData"], json!([]));
    assert_eq!(f["imageRegistryBundleUserData"], json!([]));
}

#[test]
fn pem_blocks_and_subjects() {
    let blocks = pem_blocks(format!("junk\n{OTHER_SIGNER}\n{NEW_SIGNER}").as_bytes());
    assert_eq!(blocks.len(), 2);
    // Re-encoded as Go's pem.EncodeToMemory, openssl's output comes back byte for byte.
    assert_eq!(blocks[0].encode(), OTHER_SIGNER.as_bytes());
    let subject = blocks[1].der.as_slice();
    let subject = certificate_subject(subject).unwrap_or_default();
    assert!(memchr_find(subject, b"new-signer"));
    assert!(!memchr_find(subject, b"other-signer"));
    assert_eq!(certificate_subject(b"\x30\x03\x02\x01\x01"), None);
    assert_eq!(certificate_subject(b""), None);
}

#[test]
fn the_servers_ca_is_copied_for_the_daemons() {
    assert_eq!(kubeconfig_data(&CaSources::default()), None);
    let src = sources(vec![cm(
        KUBE_APISERVER_SERVER_CA,
        json!({"ca-bundle.crt": NEW_SIGNER}),
    )]);
    let cm = kubeconfig_data(&src).unwrap_or_default();
    assert_eq!(
        cm["metadata"],
        json!({"namespace": "openshift-machine-config-operator",
                                      "name": "kubeconfig-data"})
    );
    assert_eq!(
        cm["binaryData"]["ca-bundle.crt"],
        json!(std_encode(NEW_SIGNER.as_bytes()))
    );
    assert!(ca_configmaps(None, None).contains(&ConfigMapRef::of(KUBE_APISERVER_SERVER_CA)));
    let empty = sources(vec![cm_empty()]);
    assert_eq!(kubeconfig_data(&empty), None);
}

fn cm_empty() -> (ConfigMapRef, Value) {
    cm(KUBE_APISERVER_SERVER_CA, json!({"ca-bundle.crt": ""}))
}
