//! Arbitrary bytes as a template (Go text/template subset) executed over a ControllerConfig
//! spec: parsing and execution return errors, never panic or loop.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let cc = json!({
        "ControllerConfig": {"platform": "aws", "clusterDNSIP": "172.30.0.10",
            "infra": {"status": {"platformStatus": {"type": "AWS"}}},
            "images": {"a": "b"}, "ipFamilies": "IPv4"},
        "Role": "worker",
        "PullSecret": "{}",
        "list": [1, 2, 3],
    });
    let _ = mco_render::gocompat::template::render(src, &cc);
});
