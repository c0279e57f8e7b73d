use super::*;
use crate::mcs::access::Cidr;
use crate::mcs::served_state::{Encoded, PoolEntry};
use mco_ignition::SpecVersion;
use std::collections::BTreeMap;

fn state() -> ServedState {
    let mut versions = BTreeMap::new();
    versions.insert(
        SpecVersion::V3_5,
        Ok(Encoded::new(
            br#"{"ignition":{"version":"3.5.0"}}"#.to_vec(),
        )),
    );
    versions.insert(
        SpecVersion::V2_2,
        Ok(Encoded::new(
            br#"{"ignition":{"version":"2.2.0"}}"#.to_vec(),
        )),
    );
    versions.insert(SpecVersion::V3_1, Err("can't serve".to_string()));
    let mut pools = BTreeMap::new();
    pools.insert(
        "worker".to_string(),
        Ok(PoolEntry {
            rendered_name: "rendered-worker-1".into(),
            versions,
        }),
    );
    pools.insert("broken".to_string(), Err("render failed".to_string()));
    ServedState {
        pools,
        ..ServedState::default()
    }
}

fn get(path: &str) -> Request<'_> {
    Request {
        method: "GET",
        path,
        ..Request::default()
    }
}

const V35: &str = "application/vnd.coreos.ignition+json;version=3.5.0, */*;q=0.1";

fn run(req: &Request<'_>) -> Response {
    respond(req, &state(), &AccessPolicy::default(), &Metrics::default())
}

fn header<'a>(r: &'a Response, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn serves_the_negotiated_version() {
    let mut req = get("/config/worker");
    req.accept = Some(V35);
    let r = run(&req);
    assert_eq!(r.status, 200);
    assert_eq!(&r.body[..], br#"{"ignition":{"version":"3.5.0"}}"#);
    assert_eq!(header(&r, "content-type"), Some("application/json"));
    assert_eq!(header(&r, "content-length"), Some("32"));
    assert!(r.cache_hit);
    assert_eq!(r.note.rendered.as_deref(), Some("rendered-worker-1"));
}

#[test]
fn no_accept_serves_2_2() {
    let r = run(&get("/config/worker"));
    assert_eq!(r.status, 200);
    assert_eq!(&r.body[..], br#"{"ignition":{"version":"2.2.0"}}"#);
}

#[test]
fn head_has_headers_without_body() {
    let mut req = get("/config/worker");
    req.method = "HEAD";
    req.accept = Some(V35);
    let r = run(&req);
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert_eq!(header(&r, "content-length"), Some("32"));
}

#[test]
fn unsupported_version_is_400() {
    let mut req = get("/config/worker");
    req.accept = Some("application/vnd.coreos.ignition+json;version=1.0.0");
    let r = run(&req);
    assert_eq!(r.status, 400);
    assert_eq!(
        r.note.error.as_deref(),
        Some("unsupported Ignition version in Accept header: application/vnd.coreos.ignition+json;version=1.0.0")
    );
    assert_eq!(header(&r, "content-length"), Some("0"));
}

#[test]
fn routes_and_methods() {
    assert_eq!(run(&get("/healthz")).status, 200);
    assert_eq!(run(&get("/")).status, 404);
    assert_eq!(run(&get("/config")).status, 404);
    assert_eq!(run(&get("/config/")).status, 404);
    assert_eq!(run(&get("/config/a/b")).status, 404);
    assert_eq!(run(&get("/config/nope")).status, 404);
    assert_eq!(run(&get("/config/..")).status, 400);
    assert_eq!(run(&get("/config/Worker")).status, 400);
    assert_eq!(run(&get("/config/a.b")).status, 400);
    for m in ["POST", "PUT", "DELETE", "OPTIONS"] {
        for p in ["/config/worker", "/healthz", "/other"] {
            let mut req = get(p);
            req.method = m;
            assert_eq!(run(&req).status, 405, "{m} {p}");
        }
    }
}

#[test]
fn failures_are_500() {
    assert_eq!(run(&get("/config/broken")).status, 500);
    let mut req = get("/config/worker");
    req.accept = Some("application/vnd.coreos.ignition+json;version=3.1.0");
    let r = run(&req);
    assert_eq!(r.status, 500);
    assert!(r.note.error.is_some_and(|e| e.contains("can't serve")));
}

#[test]
fn etag_gives_304() {
    let mut req = get("/config/worker");
    req.accept = Some(V35);
    let first = run(&req);
    let tag = header(&first, "etag").unwrap_or("").to_string();
    assert!(tag.starts_with('"') && tag.len() == 34);
    let list = format!("\"x\", W/{tag}");
    req.if_none_match = Some(&list);
    let r = run(&req);
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    req.if_none_match = Some("\"other\"");
    assert_eq!(run(&req).status, 200);
}

#[test]
fn token_and_cidr_rules() {
    let policy = AccessPolicy {
        token: Some("s3cret".into()),
        allow: vec!["10.0.0.0/8".parse::<Cidr>().expect("valid CIDR")],
    };
    let m = Metrics::default();
    let mut req = get("/config/worker");
    req.client = Some("10.1.2.3".parse().unwrap_or(IpAddr::from([0, 0, 0, 0])));
    assert_eq!(respond(&req, &state(), &policy, &m).status, 401);
    req.authorization = Some("Bearer wrong");
    assert_eq!(respond(&req, &state(), &policy, &m).status, 401);
    req.authorization = Some("Bearer s3cret");
    assert_eq!(respond(&req, &state(), &policy, &m).status, 200);
    req.client = Some("192.0.2.1".parse().unwrap_or(IpAddr::from([0, 0, 0, 0])));
    assert_eq!(respond(&req, &state(), &policy, &m).status, 403);
    let mut health = get("/healthz");
    health.client = req.client;
    assert_eq!(respond(&health, &state(), &policy, &m).status, 200);
}

#[test]
fn metrics_are_prometheus_text() {
    let m = Metrics::default();
    m.record(200, true);
    let r = respond(&get("/metrics"), &state(), &AccessPolicy::default(), &m);
    assert_eq!(r.status, 200);
    let text = String::from_utf8_lossy(&r.body);
    assert!(text.contains("mcs_requests_total{code=\"200\"} 1"));
    assert!(text.contains("mcs_pools 2"));
}

/// Paths that try to reach another file or pool: every one is refused, none serves a config.
#[test]
fn hostile_paths_get_4xx() {
    let long = format!("/config/{}", "a".repeat(MAX_PATH_BYTES));
    let cases: &[(&str, u16)] = &[
        ("/config/../config/worker", 404),
        ("/config/./worker", 404),
        ("/config/worker/..", 404),
        ("/config/worker/", 404),
        ("/config//worker", 404),
        ("//config/worker", 404),
        ("/config/worker%2F..%2Fbroken", 400),
        ("/config/worker%2f", 400),
        ("/config/%2e%2e", 400),
        ("/config/%77orker", 400),
        ("/config/worker%00", 400),
        ("/config/worker\u{0}", 400),
        ("/config/w\u{f6}rker", 400),
        ("/config/worker.json", 400),
        ("/config/infra", 404),
        ("/CONFIG/worker", 404),
        ("/config/worker ", 400),
        ("/etc/passwd", 404),
        ("/config/../../etc/passwd", 404),
        (&long, 414),
    ];
    for (path, want) in cases {
        let r = run(&get(path));
        assert_eq!(r.status, *want, "{path:?}");
        assert!(r.body.is_empty(), "{path:?} served a body");
        assert!(!r.cache_hit, "{path:?}");
    }
    // A pool name at the longest a name may be is looked up (and not found), not refused.
    let at_limit = format!("/config/{}", "a".repeat(253));
    assert_eq!(run(&get(&at_limit)).status, 404);
}

#[test]
fn bodies_and_other_methods_are_refused() {
    let mut req = get("/config/worker");
    req.has_body = true;
    let r = run(&req);
    assert_eq!(r.status, 413);
    assert!(r.body.is_empty());
    req.method = "POST";
    let r = run(&req);
    assert_eq!(r.status, 405);
    assert_eq!(header(&r, "allow"), Some("GET, HEAD"));
    for m in ["PATCH", "CONNECT", "TRACE", "get", ""] {
        let mut req = get("/config/worker");
        req.method = m;
        assert_eq!(run(&req).status, 405, "{m:?}");
    }
}

fn many_pools() -> ServedState {
    let mut pools = BTreeMap::new();
    for name in ["worker", "master", "infra", "a-b"] {
        let mut versions = BTreeMap::new();
        versions.insert(
            SpecVersion::V2_2,
            Ok(Encoded::new(
                format!("{{\"pool\":\"{name}\"}}").into_bytes(),
            )),
        );
        pools.insert(
            name.to_string(),
            Ok(PoolEntry {
                rendered_name: format!("rendered-{name}"),
                versions,
            }),
        );
    }
    ServedState {
        pools,
        ..ServedState::default()
    }
}

/// Paths built from the pieces an attacker would use.
fn hostile_path() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let piece = prop_oneof![
        Just("/".to_string()),
        Just("/config/".to_string()),
        Just("config".to_string()),
        Just("..".to_string()),
        Just(".".to_string()),
        Just("%2F".to_string()),
        Just("%2e".to_string()),
        Just("worker".to_string()),
        Just("master".to_string()),
        Just("infra".to_string()),
        Just("a-b".to_string()),
        Just("healthz".to_string()),
        Just("metrics".to_string()),
        "[a-z-]{0,4}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

proptest::proptest! {
    /// For any path, the answer is the config of exactly the pool the path names, or no
    /// config at all.
    #[test]
    fn any_path_serves_exactly_its_pool_or_nothing(
        path in proptest::prop_oneof![hostile_path(), proptest::prelude::any::<String>()]
    ) {
        let state = many_pools();
        let r = respond(&get(&path), &state, &AccessPolicy::default(), &Metrics::default());
        let served = r.status == 200 && path != "/healthz" && path != "/metrics";
        if served {
            let pool = path.strip_prefix("/config/");
            proptest::prop_assert!(pool.is_some(), "{path:?} served");
            let pool = pool.unwrap_or_default();
            proptest::prop_assert!(state.pools.contains_key(pool), "{path:?}");
            let want = format!("{{\"pool\":\"{pool}\"}}");
            proptest::prop_assert_eq!(&r.body[..], want.as_bytes());
            proptest::prop_assert_eq!(r.note.pool.as_deref(), Some(pool));
        } else {
            proptest::prop_assert!(r.status != 200 || r.body.is_empty() || path == "/metrics");
            proptest::prop_assert!(!r.cache_hit);
        }
    }
}

/// A state whose worker config is large enough to compress.
fn big_state() -> ServedState {
    let body = format!(
        "{{\"ignition\":{{\"version\":\"3.5.0\"}},\"pad\":\"{}\"}}",
        "abc".repeat(1000)
    );
    let mut versions = BTreeMap::new();
    versions.insert(SpecVersion::V3_5, Ok(Encoded::new(body.into_bytes())));
    versions.insert(
        SpecVersion::V2_2,
        Ok(Encoded::new(
            br#"{"ignition":{"version":"2.2.0"}}"#.to_vec(),
        )),
    );
    let mut pools = BTreeMap::new();
    pools.insert(
        "worker".to_string(),
        Ok(PoolEntry {
            rendered_name: "rendered-worker-1".into(),
            versions,
        }),
    );
    ServedState {
        pools,
        ..ServedState::default()
    }
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(b), &mut out).expect("gunzip");
    out
}

#[test]
fn gzip_is_served_when_asked_and_made_once() {
    let state = big_state();
    let m = Metrics::default();
    let policy = AccessPolicy::default();
    let mut req = get("/config/worker");
    req.accept = Some(V35);
    let plain = respond(&req, &state, &policy, &m);
    assert_eq!(header(&plain, "content-encoding"), None);
    assert_eq!(header(&plain, "vary"), Some("Accept, Accept-Encoding"));
    assert!(m.render(1).contains("mcs_gzip_encodes_total 0\n"));

    req.accept_encoding = Some("gzip");
    let first = respond(&req, &state, &policy, &m);
    let second = respond(&req, &state, &policy, &m);
    assert_eq!(first.status, 200);
    assert_eq!(header(&first, "content-encoding"), Some("gzip"));
    assert_eq!(header(&first, "vary"), Some("Accept, Accept-Encoding"));
    assert_eq!(
        header(&first, "content-length"),
        Some(first.body.len().to_string().as_str())
    );
    assert!(first.body.len() < plain.body.len());
    assert_eq!(gunzip(&first.body), plain.body.to_vec());
    // The same bytes, not a copy: compressed once, shared by every request.
    assert_eq!(first.body.as_ptr(), second.body.as_ptr());
    let text = m.render(1);
    assert!(text.contains("mcs_gzip_encodes_total 1\n"), "{text}");
    assert!(text.contains("mcs_gzip_responses_total 2\n"), "{text}");
    // A different representation, a different strong tag.
    let (pt, gt) = (header(&plain, "etag"), header(&first, "etag"));
    assert_ne!(pt, gt);
    assert!(gt.is_some_and(|t| t.starts_with('"') && t.ends_with("-gzip\"")));

    // A clone of the state (a rebuild that keeps the pool) shares the gzip form.
    let kept = state.clone();
    let again = respond(&req, &kept, &policy, &m);
    assert_eq!(again.body.as_ptr(), first.body.as_ptr());
    assert!(m.render(1).contains("mcs_gzip_encodes_total 1\n"));
}

#[test]
fn gzip_refused_or_not_smaller_is_plain() {
    let state = big_state();
    let m = Metrics::default();
    let policy = AccessPolicy::default();
    let mut req = get("/config/worker");
    req.accept = Some(V35);
    for refused in [
        "gzip;q=0",
        "GZIP; Q=0.000",
        "*;q=0",
        "identity",
        "br, deflate",
        "",
    ] {
        req.accept_encoding = Some(refused);
        let r = respond(&req, &state, &policy, &m);
        assert_eq!(header(&r, "content-encoding"), None, "{refused:?}");
        assert_eq!(header(&r, "vary"), Some("Accept, Accept-Encoding"));
        assert!(r.body.starts_with(b"{\"ignition\""), "{refused:?}");
    }
    // The 2.2 body is too small to gain from gzip: sent as it is.
    req.accept = None;
    req.accept_encoding = Some("gzip");
    let r = respond(&req, &state, &policy, &m);
    assert_eq!(header(&r, "content-encoding"), None);
    assert_eq!(&r.body[..], br#"{"ignition":{"version":"2.2.0"}}"#);
}

#[test]
fn gzip_head_and_etag() {
    let state = big_state();
    let m = Metrics::default();
    let policy = AccessPolicy::default();
    let mut req = get("/config/worker");
    req.accept = Some(V35);
    req.accept_encoding = Some("deflate, gzip;q=0.9");
    let full = respond(&req, &state, &policy, &m);
    req.method = "HEAD";
    let head = respond(&req, &state, &policy, &m);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(header(&head, "content-encoding"), Some("gzip"));
    assert_eq!(
        header(&head, "content-length"),
        Some(full.body.len().to_string().as_str())
    );
    req.method = "GET";
    let gtag = header(&full, "etag").unwrap_or("").to_string();
    req.if_none_match = Some(&gtag);
    let r = respond(&req, &state, &policy, &m);
    assert_eq!(r.status, 304);
    assert_eq!(header(&r, "etag"), Some(gtag.as_str()));
    assert_eq!(header(&r, "vary"), Some("Accept, Accept-Encoding"));
    // The gzip tag does not validate the plain representation.
    req.accept_encoding = None;
    assert_eq!(respond(&req, &state, &policy, &m).status, 200);
}
