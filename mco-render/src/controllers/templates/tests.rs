use super::*;
use serde_json::json;

fn cc(platform: &str, topology: &str) -> ControllerConfig {
    let v = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "ControllerConfig",
        "metadata": {"name": "machine-config-controller", "uid": "u-1"},
        "spec": {
            "clusterDNSIP": "172.30.0.10",
            "infra": {"status": {
                "platformStatus": {"type": platform},
                "controlPlaneTopology": topology,
            }},
        },
    });
    serde_json::from_value(v).unwrap_or_default()
}

fn file(path: &str, text: &str) -> String {
    format!("path: {path}\nmode: 420\ncontents:\n  inline: {text:?}\n")
}

/// `path -> text` of every file in a MachineConfig.
fn files_of(mc: &MachineConfig) -> Vec<(String, String)> {
    let cfg = mc.spec.config.clone().unwrap_or_default();
    cfg.pointer("/storage/files")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|f| {
                    let src = f["contents"]["source"].as_str().unwrap_or("");
                    let bytes =
                        mco_ignition::dataurl::decode_contents(src, None).unwrap_or_default();
                    (
                        f["path"].as_str().unwrap_or("").to_string(),
                        String::from_utf8_lossy(&bytes).into_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn tree() -> TemplateTree {
    let mut t = TemplateTree::new();
    t.insert("common/_base/files/common.yaml", file("/etc/common", "c"));
    t.insert("common/aws/files/common.yaml", file("/etc/common", "c-aws"));
    t.insert(
        "worker/00-worker/_base/files/a.yaml",
        file("/etc/a", "base"),
    );
    t.insert(
        "worker/00-worker/_base/files/b.yaml",
        file("/etc/b", "base"),
    );
    t.insert(
        "worker/00-worker/_base/files/gone.yaml",
        file("/etc/gone", "x"),
    );
    t.insert(
        "worker/00-worker/on-prem/files/a.yaml",
        file("/etc/a", "on-prem"),
    );
    t.insert(
        "worker/00-worker/baremetal/files/a.yaml",
        file("/etc/a", "baremetal"),
    );
    t.insert("worker/00-worker/aws/files/b.yaml", file("/etc/b", "aws"));
    t.insert("worker/00-worker/aws/files/gone.yaml", "");
    t.insert(
        "worker/00-worker/aws/files/blank.yaml",
        "{{if eq .ClusterDNSIP \"nope\"}}path: /etc/blank{{end}}\n",
    );
    t.insert("worker/00-worker/sno/files/a.yaml", file("/etc/a", "sno"));
    t.insert("worker/00-worker/_base/extensions/usbguard", "yes");
    t.insert(
        "worker/01-worker-kubelet/_base/files/k.yaml",
        file("/etc/k", "{{.ClusterDNSIP}}"),
    );
    t.insert(
        "worker/01-worker-kubelet/_base/units/kubelet.service.yaml",
        "name: kubelet.service\nenabled: true\ncontents: |\n  [Service]\n  ExecStart=/usr/bin/kubelet {{credentialProviderConfigFlag .}}\n",
    );
    t.insert(
        "master/00-master/_base/files/a.yaml",
        file("/etc/a", "master"),
    );
    t.insert(
        "arbiter/00-arbiter/_base/files/a.yaml",
        file("/etc/a", "arbiter"),
    );
    t.insert("README.md", "not a role");
    t
}

fn render(platform: &str, topology: &str) -> Vec<MachineConfig> {
    generate_template_machine_configs(
        &tree(),
        &cc(platform, topology),
        &TemplateOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn find<'a>(mcs: &'a [MachineConfig], name: &str) -> &'a MachineConfig {
    mcs.iter()
        .find(|m| m.name() == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn roles_and_names() {
    let mcs = render("AWS", "HighlyAvailable");
    let names: Vec<&str> = mcs.iter().map(MachineConfig::name).collect();
    assert_eq!(names, ["00-master", "00-worker", "01-worker-kubelet"]);
    let with_arbiter = render("AWS", "HighlyAvailableArbiter");
    assert!(with_arbiter.iter().any(|m| m.name() == "00-arbiter"));
}

#[test]
fn base_overlays_and_platform_win_in_order() {
    let mcs = render("AWS", "HighlyAvailable");
    assert_eq!(
        files_of(find(&mcs, "00-worker")),
        [
            ("/etc/a".to_string(), "base".to_string()),
            ("/etc/b".to_string(), "aws".to_string()),
            ("/etc/common".to_string(), "c-aws".to_string()),
        ]
    );
    let bm = render("BareMetal", "HighlyAvailable");
    let files = files_of(find(&bm, "00-worker"));
    assert!(
        files.contains(&("/etc/a".into(), "baremetal".into())),
        "{files:?}"
    );
    assert!(
        files.contains(&("/etc/gone".into(), "x".into())),
        "{files:?}"
    );
    let sno = render("BareMetal", "SingleReplica");
    assert!(files_of(find(&sno, "00-worker")).contains(&("/etc/a".into(), "sno".into())));
}

#[test]
fn common_templates_go_to_the_first_config_only() {
    let mcs = render("AWS", "HighlyAvailable");
    let kubelet = files_of(find(&mcs, "01-worker-kubelet"));
    assert_eq!(kubelet, [("/etc/k".to_string(), "172.30.0.10".to_string())]);
    assert!(files_of(find(&mcs, "00-master"))
        .iter()
        .any(|(p, _)| p == "/etc/common"));
}

#[test]
fn extensions_units_and_metadata() {
    let mcs = render("AWS", "HighlyAvailable");
    let w = find(&mcs, "00-worker");
    assert_eq!(w.spec.extensions, ["usbguard"]);
    assert_eq!(
        w.metadata.labels.get(ROLE_LABEL).map(String::as_str),
        Some("worker")
    );
    assert_eq!(w.generated_by(), Some(crate::CONTROLLER_VERSION));
    let owner = &w.metadata.owner_references[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("ControllerConfig", "machine-config-controller", "u-1")
    );
    assert_eq!(owner.controller, Some(true));
    let k = find(&mcs, "01-worker-kubelet");
    let units = &k
        .spec
        .config
        .as_ref()
        .map(|c| c["systemd"]["units"].clone());
    let contents = units
        .as_ref()
        .and_then(|u| u[0]["contents"].as_str())
        .unwrap_or("");
    assert!(contents.contains("--image-credential-provider-config=/etc/kubernetes/credential-providers/ecr-credential-provider.yaml"), "{contents}");
}

#[test]
fn platforms() {
    let p = |t: &str| platform_name(&json!({"infra": {"status": {"platformStatus": {"type": t}}}}));
    assert_eq!(p("oVirt").ok().as_deref(), Some("ovirt"));
    assert_eq!(p("SomethingNew").ok().as_deref(), Some("none"));
    assert!(p("").is_err());
    assert!(p("_base").is_err());
    let alt = json!({"infra": {"status": {"platformStatus": {"type": "GCP", "gcp": {
        "cloudLoadBalancerConfig": {"dnsType": "ClusterHosted", "clusterHosted": {}}}}}}});
    assert_eq!(
        overlays(&alt).ok(),
        Some(vec![
            "_base".into(),
            "cloud-platform-alt-dns".into(),
            "gcp".into()
        ])
    );
    let onprem = json!({"infra": {"status": {"platformStatus": {"type": "VSphere"}, "controlPlaneTopology": "DualReplica"}}});
    assert_eq!(
        overlays(&onprem).ok(),
        Some(vec![
            "_base".into(),
            "on-prem".into(),
            "vsphere".into(),
            "two-node-with-fencing".into()
        ])
    );
}

#[test]
fn template_errors_name_the_file() {
    let mut t = tree();
    t.insert("worker/01-worker-kubelet/_base/files/bad.yaml", "{{if}}");
    let e = generate_template_machine_configs(&t, &cc("AWS", ""), &TemplateOptions::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.starts_with("failed to render template worker/01-worker-kubelet/_base/files/bad.yaml"),
        "{e}"
    );
    let none = generate_template_machine_configs(&t, &cc("", ""), &TemplateOptions::default());
    assert!(none.is_err());
}

#[test]
fn render_data_reads_like_upstreams_render_config() {
    let mut c = cc("AWS", "HighlyAvailable");
    c.spec
        .extra
        .insert("additionalTrustBundle".into(), json!("YnVuZGxlCg=="));
    c.spec.extra.insert("images".into(), json!({}));
    if let Some(status) = c
        .spec
        .extra
        .get_mut("infra")
        .and_then(|i| i.get_mut("status"))
        .and_then(Value::as_object_mut)
    {
        status.insert(
            "apiServerInternalURI".into(),
            json!("https://api-int.x:6443"),
        );
    }
    let opts = TemplateOptions {
        pull_secret: "{}".into(),
        ..TemplateOptions::default()
    };
    let data = render_data(&c, &opts);
    let r = |src: &str| engine::render_with(src, &data, RENDER_OPTIONS).unwrap_or_default();
    assert_eq!(r("{{.AdditionalTrustBundle | toString}}"), "bundle\n");
    assert_eq!(
        r("{{urlHost .Infra.Status.APIServerInternalURL}}"),
        "api-int.x"
    );
    assert_eq!(
        r("{{.Constants.APIServerURLFile}}"),
        "/etc/kubernetes/apiserver-url.env"
    );
    assert_eq!(
        r("{{if .Images}}y{{else}}n{{end}} {{.Images.pause}}"),
        "n <no value>"
    );
    assert_eq!(r("{{.PullSecret}} {{.TLSMinVersion}}"), "{} VersionTLS12");
    assert_eq!(r("{{if .Infra.Status}}struct{{end}}"), "struct");
}

#[test]
fn compact_json_keeps_strings_and_key_order() {
    assert_eq!(
        compact_json("{ \"a b\" : [1, 2],\n \"c\": \"x \\\" y\" }"),
        "{\"a b\":[1,2],\"c\":\"x \\\" y\"}"
    );
}
