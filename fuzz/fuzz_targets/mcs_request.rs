//! The machine-config-server's request handling (`mco-k8s/src/mcs/respond.rs`, which is pure)
//! over the served state of `examples/cluster`, with the request's method, path, `Accept`,
//! `If-None-Match`, `Authorization` and `Accept-Encoding` headers, an allow-list and a client
//! address taken from the input's lines (a gzip body must decompress to the config). Whatever comes in, the server only ever answers 200 with a pool's encoded
//! config for the negotiated version (`mco_render::serve::accept`), `/healthz` or `/metrics`.
//!
//! The server's modules are compiled into this target from their files: `mco-k8s` itself would
//! bring kube, tokio and rustls into the fuzz build, and `respond` needs none of them.
#![no_main]
#![allow(dead_code)]

#[path = "../../mco-k8s/src/mcs/access.rs"]
mod access;
#[path = "../../mco-k8s/src/mcs/content_coding.rs"]
mod content_coding;
#[path = "../../mco-k8s/src/mcs/metrics.rs"]
mod metrics;
#[path = "../../mco-k8s/src/mcs/respond.rs"]
mod respond;
#[path = "../../mco-k8s/src/mcs/served_state.rs"]
mod served_state;

use access::{AccessPolicy, Cidr};
use libfuzzer_sys::fuzz_target;
use mco_render::manifests::Manifests;
use mco_render::serve::accept;
use metrics::Metrics;
use respond::{respond, Request};
use served_state::{BuildOptions, ServedState};
use std::net::IpAddr;
use std::sync::OnceLock;

fn state() -> &'static ServedState {
    static STATE: OnceLock<ServedState> = OnceLock::new();
    STATE.get_or_init(|| {
        let mut m = Manifests::default();
        for (name, text) in [
            ("00", include_str!("../../examples/cluster/00-pools.yaml")),
            (
                "01",
                include_str!("../../examples/cluster/01-controllerconfig.yaml"),
            ),
            (
                "10m",
                include_str!("../../examples/cluster/10-master-chrony.yaml"),
            ),
            (
                "10w",
                include_str!("../../examples/cluster/10-worker-chrony.yaml"),
            ),
            (
                "20m",
                include_str!("../../examples/cluster/20-master-ssh.yaml"),
            ),
            (
                "20w",
                include_str!("../../examples/cluster/20-worker-ssh.yaml"),
            ),
            (
                "30",
                include_str!("../../examples/cluster/30-worker-kargs.yaml"),
            ),
            (
                "40",
                include_str!("../../examples/cluster/40-worker-usbguard.yaml"),
            ),
            (
                "50",
                include_str!("../../examples/cluster/50-worker-registries.yaml"),
            ),
            (
                "60",
                include_str!("../../examples/cluster/60-infra-inventory.yaml"),
            ),
        ] {
            m.add_file(&format!("{name}.yaml"), text)
                .expect("the example cluster reads");
        }
        let s = ServedState::build(&m, &BuildOptions::default(), None);
        assert!(
            s.pools.values().any(|p| p.is_ok()),
            "the example serves pools"
        );
        s
    })
}

fn line<'a>(lines: &[&'a str], i: usize) -> Option<&'a str> {
    lines.get(i).copied().filter(|l| !l.is_empty())
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let method = line(&lines, 0).unwrap_or("GET");
    let path = lines.get(1).copied().unwrap_or("");
    let accept_header = line(&lines, 2);
    let mut policy = AccessPolicy::default();
    if let Some(allow) = line(&lines, 5) {
        for c in allow.split(',') {
            match c.parse::<Cidr>() {
                Ok(cidr) => policy.allow.push(cidr),
                Err(e) => assert_eq!(e.0, c, "the CIDR error names it"),
            }
        }
    }
    policy.token = line(&lines, 6).map(str::to_string);
    let client = line(&lines, 7).and_then(|a| a.parse::<IpAddr>().ok());
    let req = Request {
        method,
        path,
        accept: accept_header,
        if_none_match: line(&lines, 3),
        authorization: line(&lines, 4),
        client,
        accept_encoding: line(&lines, 8),
        has_body: false,
    };
    let metrics = Metrics::default();
    let r = respond(&req, state(), &policy, &metrics);
    let length = r
        .headers
        .iter()
        .find(|(k, _)| *k == "content-length")
        .map(|(_, v)| v.clone());
    if r.status != 304 {
        assert!(length.is_some(), "content-length always sent");
    }
    if r.status != 200 {
        assert!(r.body.is_empty(), "only 200 has a body");
        return;
    }
    assert!(
        method == "GET" || method == "HEAD",
        "200 for method {method:?}"
    );
    if method == "HEAD" {
        assert!(r.body.is_empty(), "HEAD has no body");
    } else {
        assert_eq!(length, Some(r.body.len().to_string()));
    }
    if path == "/healthz" || path == "/metrics" {
        return;
    }
    let pool = path
        .strip_prefix("/config/")
        .unwrap_or_else(|| panic!("200 for path {path:?}"));
    assert!(respond::valid_pool_name(pool), "200 for pool {pool:?}");
    let entry = match state().pools.get(pool) {
        Some(Ok(e)) => e,
        _ => panic!("200 for a pool not served: {pool:?}"),
    };
    let version = accept::negotiate(accept_header).expect("200 only for a negotiated version");
    assert_eq!(r.note.version.as_deref(), Some(version.as_str()));
    let encoded = entry.versions[&version]
        .as_ref()
        .expect("200 only for an encoded version");
    let gzip = r
        .headers
        .iter()
        .any(|(k, v)| *k == "content-encoding" && v == "gzip");
    if method == "GET" && gzip {
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&r.body[..]), &mut plain)
            .expect("the gzip body decompresses");
        assert_eq!(plain, encoded.body, "the gzip body is the pool's config");
    } else if method == "GET" {
        assert_eq!(r.body, encoded.body, "the body is the pool's config");
    }
});
