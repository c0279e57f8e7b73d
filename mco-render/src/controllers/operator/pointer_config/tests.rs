use super::*;

const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

fn infra(status: Value) -> Value {
    json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
           "metadata": {"name": "cluster"}, "status": status})
}

#[test]
fn the_host_is_the_internal_api_urls_with_the_servers_port() {
    let i = infra(
        json!({"apiServerInternalURI": "https://api-int.c1.example.com:6443",
                         "platformStatus": {"type": "AWS"}}),
    );
    assert_eq!(ignition_host(&i).unwrap(), "api-int.c1.example.com:22623");
    // An IPv6 host from the URL loses its brackets, as upstream's does.
    let i = infra(json!({"apiServerInternalURI": "https://[fd00::5]:6443"}));
    assert_eq!(ignition_host(&i).unwrap(), "fd00::5:22623");
}

#[test]
fn bare_metal_and_vsphere_use_the_first_internal_ip() {
    let i = infra(
        json!({"apiServerInternalURI": "https://api-int.c1.example.com:6443",
        "platformStatus": {"type": "BareMetal",
                           "baremetal": {"apiServerInternalIPs": ["192.168.111.5", "fd00::5"]}}}),
    );
    assert_eq!(ignition_host(&i).unwrap(), "192.168.111.5:22623");
    let i = infra(
        json!({"apiServerInternalURI": "https://api-int.c1.example.com:6443",
        "platformStatus": {"type": "OpenStack",
                           "openstack": {"apiServerInternalIPs": ["fd00::5"]}}}),
    );
    assert_eq!(ignition_host(&i).unwrap(), "[fd00::5]:22623");
    // vSphere without internal IPs (a UPI install) falls back to the URL.
    let i = infra(
        json!({"apiServerInternalURI": "https://api-int.c1.example.com:6443",
        "platformStatus": {"type": "VSphere", "vsphere": {}}}),
    );
    assert_eq!(ignition_host(&i).unwrap(), "api-int.c1.example.com:22623");
}

#[test]
fn no_host_is_an_error_not_a_pointer_to_nowhere() {
    assert!(matches!(
        ignition_host(&infra(json!({}))),
        Err(PointerConfigError::NoHost(_))
    ));
    assert!(matches!(
        ignition_host(&infra(json!({"apiServerInternalURI": "https://:6443"}))),
        Err(PointerConfigError::NoHost(_))
    ));
}

#[test]
fn the_bundle_is_the_servers_ca_configmap_else_the_root_ca() {
    let mcs = json!({"data": {"ca-bundle.crt": "MCS"}});
    let root = json!({"data": {"ca.crt": "ROOT"}});
    assert_eq!(ca_bundle(Some(&mcs), Some(&root)).unwrap(), b"MCS");
    assert_eq!(ca_bundle(None, Some(&root)).unwrap(), b"ROOT");
    assert_eq!(ca_bundle(None, None), Err(PointerConfigError::NoCa));
    assert_eq!(
        ca_bundle(Some(&json!({"data": {}})), Some(&root)),
        Err(PointerConfigError::NoCa)
    );
}

#[test]
fn the_pointer_is_the_json_upstream_marshals() {
    let p = pointer_config(
        "192.168.111.5:22623",
        "worker",
        PEM.as_bytes(),
        SpecVersion::V3_5,
    );
    let ca = ca_data_url(PEM.as_bytes());
    assert_eq!(
        pointer_config_bytes(&p),
        format!(
            "{{\"ignition\":{{\"config\":{{\"merge\":[{{\"source\":\"https://192.168.111.5:22623/config/worker\",\
             \"verification\":{{}}}}],\"replace\":{{\"verification\":{{}}}}}},\"proxy\":{{}},\
             \"security\":{{\"tls\":{{\"certificateAuthorities\":[{{\"source\":\"{ca}\",\"verification\":{{}}}}]}}}},\
             \"timeouts\":{{}},\"version\":\"3.5.0\"}},\"kernelArguments\":{{}},\"passwd\":{{}},\
             \"storage\":{{}},\"systemd\":{{}}}}"
        )
    );
    assert!(ca.starts_with("data:text/plain;charset=utf-8;base64,"));
    // Before spec 3.3 there is no kernelArguments section.
    let p = pointer_config("h:22623", "infra", PEM.as_bytes(), SpecVersion::V3_2);
    assert!(p.get("kernelArguments").is_none());
    assert_eq!(p["ignition"]["version"], "3.2.0");
}

#[test]
fn the_pointer_parses_as_ignition_and_trusts_exactly_the_bundle() {
    for v in [SpecVersion::V3_0, SpecVersion::V3_3, SpecVersion::V3_5] {
        let p = pointer_config("10.0.2.100:22623", "worker", PEM.as_bytes(), v);
        let bytes = pointer_config_bytes(&p);
        let parsed = mco_ignition::parse::parse_bytes(bytes.as_bytes());
        assert!(parsed.is_ok(), "{v}: {bytes}: {parsed:?}");
        assert_eq!(pointer_cas(&p), vec![PEM.as_bytes().to_vec()]);
    }
}

#[test]
fn the_secret_carries_the_pointer_and_is_owned_by_its_pool() {
    let p = pointer_config("h:22623", "worker", PEM.as_bytes(), SpecVersion::V3_4);
    let s = user_data_secret("worker", "uid-1", &p);
    assert_eq!(s["metadata"]["name"], "worker-user-data-managed");
    assert_eq!(s["metadata"]["namespace"], "openshift-machine-api");
    assert_eq!(s["metadata"]["labels"][MANAGED_CA_LABEL], "");
    assert_eq!(s["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    assert_eq!(s["data"]["disableTemplating"], "dHJ1ZQo=");
    assert_eq!(pointer_of_secret(&s), Some(p));
}
