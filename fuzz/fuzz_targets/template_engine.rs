//! Arbitrary bytes as a template (Go text/template subset) with its functions. The first byte
//! picks the data: a small map (objects as maps), or the render data of
//! `examples/cluster`'s ControllerConfig on one of several platforms, read as the templates
//! controller reads it (`RENDER_OPTIONS`: objects as structs), so the platform helpers
//! (`onPremPlatformAPIServerInternalIPs`, `cloudPlatformAPILoadBalancerIPs`, `urlHost`, ...)
//! run on data that has what they look for. Parsing and execution return errors, never panic
//! or loop; executing the same template twice gives the same text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_render::api::ControllerConfig;
use mco_render::controllers::templates::{render_data, TemplateOptions, RENDER_OPTIONS};
use mco_render::gocompat::template::{ExecOptions, Template};
use serde_json::{json, Value};
use std::sync::OnceLock;

fn platform_status(i: usize) -> Value {
    match i {
        0 => json!({"type": "AWS"}),
        1 => json!({"type": "BareMetal", "baremetal": {
            "apiServerInternalIPs": ["192.0.2.5", "2001:db8::5"],
            "ingressIPs": ["192.0.2.6"],
            "loadBalancer": {"type": "OpenShiftManagedDefault"}}}),
        2 => json!({"type": "GCP", "gcp": {"cloudLoadBalancerConfig": {
            "dnsType": "ClusterHosted",
            "clusterHosted": {"apiIntLoadBalancerIPs": ["10.0.0.2"],
                "apiLoadBalancerIPs": ["10.0.0.3"], "ingressLoadBalancerIPs": ["10.0.0.4"]}}}}),
        3 => json!({"type": "VSphere", "vsphere": {"apiServerInternalIPs": ["192.0.2.9"],
            "loadBalancer": {"type": "UserManaged"}}}),
        _ => json!({"type": "None"}),
    }
}

fn data() -> &'static [Value] {
    static DATA: OnceLock<Vec<Value>> = OnceLock::new();
    DATA.get_or_init(|| {
        let base: ControllerConfig = serde_yaml_ng::from_str(include_str!(
            "../../examples/cluster/01-controllerconfig.yaml"
        ))
        .expect("the example ControllerConfig reads");
        let mut out = vec![json!({
            "ControllerConfig": {"platform": "aws", "clusterDNSIP": "172.30.0.10",
                "infra": {"status": {"platformStatus": {"type": "AWS"}}},
                "images": {"a": "b"}, "ipFamilies": "IPv4"},
            "Role": "worker",
            "PullSecret": "{}",
            "list": [1, 2, 3],
        })];
        for i in 0..5 {
            let mut v = serde_json::to_value(&base).expect("serialises");
            v["spec"]["infra"]["status"]["platformStatus"] = platform_status(i);
            let cc: ControllerConfig = serde_json::from_value(v).expect("reads back");
            out.push(render_data(&cc, &TemplateOptions::default()));
        }
        out
    })
}

fuzz_target!(|data_in: &[u8]| {
    let Some((&which, rest)) = data_in.split_first() else {
        return;
    };
    let Ok(src) = std::str::from_utf8(rest) else {
        return;
    };
    let Ok(t) = Template::parse(src) else {
        return;
    };
    let all = data();
    let i = usize::from(which) % all.len();
    let opts = if i == 0 {
        ExecOptions::default()
    } else {
        RENDER_OPTIONS
    };
    let first = t.execute_with(&all[i], opts);
    let second = t.execute_with(&all[i], opts);
    assert_eq!(first, second, "execution is deterministic");
});
