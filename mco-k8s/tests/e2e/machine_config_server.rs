//! The machine-config-server over real sockets: file mode on a temporary copy of the example
//! cluster, ephemeral ports on 127.0.0.1, a hyper client (with rustls for the TLS port).

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::HeaderMap;
use hyper_util::rt::TokioIo;
use mco_ignition::SpecVersion;
use mco_k8s::mcs::access::AccessPolicy;
use mco_k8s::mcs::served_state::BuildOptions;
use mco_k8s::mcs::server::{self, Config, Running, Source};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::rustls::{self, pki_types::ServerName};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/conformance");
const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/cluster");
/// Upper bound for each test.
/// Generous: CI machines are shared, and a loaded one runs the same steps many times slower.
const TEST_LIMIT: Duration = Duration::from_secs(300);

/// A fresh folder holding a copy of the example cluster.
fn cluster_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcs-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    for e in std::fs::read_dir(EXAMPLE).expect("example cluster") {
        let p = e.expect("entry").path();
        if let Some(n) = p.file_name() {
            std::fs::copy(&p, dir.join(n)).expect("copy manifest");
        }
    }
    dir
}

fn config(dir: &Path, tls: Option<(PathBuf, PathBuf)>) -> Config {
    Config {
        source: Source::Dir(dir.to_path_buf()),
        listen: "127.0.0.1".parse().expect("loopback"),
        secure_port: tls.as_ref().map(|_| 0),
        insecure_port: Some(0),
        tls,
        build: BuildOptions::default(),
        access: AccessPolicy::default(),
        poll_interval: Duration::from_millis(100),
        limits: mco_k8s::limits::ConnLimits::default(),
        bootstrap: None,
    }
}

async fn start(cfg: Config) -> Running {
    server::start(cfg).await.expect("server starts")
}

struct Reply {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

/// One request on a new connection.
async fn send(
    addr: SocketAddr,
    tls: Option<&rustls::ClientConfig>,
    method: &str,
    path: &str,
    headers: &[(&str, &[u8])],
) -> Reply {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost");
    for (k, v) in headers {
        req = req.header(
            *k,
            hyper::header::HeaderValue::from_bytes(v).expect("header value"),
        );
    }
    let req = req.body(Empty::<Bytes>::new()).expect("request");
    let resp = match tls {
        None => {
            let (mut s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .expect("handshake");
            tokio::spawn(conn);
            s.send_request(req).await.expect("response")
        }
        Some(cfg) => {
            let connector = tokio_rustls::TlsConnector::from(Arc::new(cfg.clone()));
            let name = ServerName::try_from("localhost").expect("name");
            let stream = connector.connect(name, tcp).await.expect("tls handshake");
            let (mut s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .expect("handshake");
            tokio::spawn(conn);
            s.send_request(req).await.expect("response")
        }
    };
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    Reply {
        status,
        headers,
        body,
    }
}

async fn get(addr: SocketAddr, path: &str, accept: Option<&str>) -> Reply {
    match accept {
        Some(a) => send(addr, None, "GET", path, &[("accept", a.as_bytes())]).await,
        None => send(addr, None, "GET", path, &[]).await,
    }
}

fn ignition_version(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.pointer("/ignition/version")?.as_str().map(str::to_string)
}

/// Whether the conversion to `v` is available in this build (the down-translation may lag).
fn convertible(v: SpecVersion) -> bool {
    let empty = serde_json::json!({"ignition": {"version": "3.5.0"}});
    mco_render::serve::convert(&empty, v).is_ok()
}

#[tokio::test]
async fn accept_header_corpus() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = cluster_dir("accept");
        let srv = start(config(&dir, None)).await;
        let addr = srv.insecure_addr.expect("plain port");
        let text = std::fs::read_to_string(format!("{CORPUS}/accept-headers.json")).expect("corpus");
        let cases: Vec<Value> = serde_json::from_str(&text).expect("corpus json");
        assert_eq!(cases.len(), 200);
        let (mut ok, mut refused, mut unconvertible) = (0, 0, 0);
        for case in &cases {
            let header = case["header"].as_str().unwrap_or("");
            let r = send(addr, None, "GET", "/config/worker", &[("accept", header.as_bytes())]).await;
            let expected = &case["expected"];
            if expected["error"].is_string() {
                assert_eq!(r.status, 400, "{header:?}");
                assert!(r.body.is_empty());
                refused += 1;
                continue;
            }
            let want = expected["version"].as_str().unwrap_or("");
            let v = SpecVersion::parse(want).expect("known version");
            if convertible(v) {
                assert_eq!(r.status, 200, "{header:?}");
                assert_eq!(ignition_version(&r.body).as_deref(), Some(want), "{header:?}");
                assert_eq!(
                    r.headers.get("content-type").and_then(|v| v.to_str().ok()),
                    Some("application/json")
                );
                ok += 1;
            } else {
                assert_eq!(r.status, 500, "{header:?}: {want} is not convertible yet");
                unconvertible += 1;
            }
        }
        eprintln!("accept corpus: {ok} served, {refused} refused, {unconvertible} not convertible in this build");
        assert_eq!(ok + refused + unconvertible, 200);
        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}

#[tokio::test]
async fn routes_methods_head_and_etag() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = cluster_dir("routes");
        let srv = start(config(&dir, None)).await;
        let addr = srv.insecure_addr.expect("plain port");
        let v35 = Some("application/vnd.coreos.ignition+json;version=3.5.0");

        assert_eq!(get(addr, "/healthz", None).await.status, 200);
        assert_eq!(get(addr, "/nope", None).await.status, 404);
        assert_eq!(get(addr, "/config/nope", v35).await.status, 404);
        assert_eq!(get(addr, "/config/a/b", v35).await.status, 404);
        assert_eq!(get(addr, "/config/a.b", v35).await.status, 400);
        assert_eq!(
            send(addr, None, "POST", "/config/worker", &[]).await.status,
            405
        );
        assert_eq!(
            send(addr, None, "DELETE", "/healthz", &[]).await.status,
            405
        );

        let full = get(addr, "/config/worker?x=1", v35).await;
        assert_eq!(full.status, 200);
        let served: Value = serde_json::from_slice(&full.body).expect("json body");
        let paths: Vec<&str> = served["storage"]["files"]
            .as_array()
            .map(|a| a.iter().filter_map(|f| f["path"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            paths.last(),
            Some(&"/etc/ignition-machine-config-encapsulated.json")
        );
        assert!(paths.contains(&"/etc/machine-config-daemon/node-annotations.json"));

        let head = send(
            addr,
            None,
            "HEAD",
            "/config/worker",
            &[(
                "accept",
                b"application/vnd.coreos.ignition+json;version=3.5.0",
            )],
        )
        .await;
        assert_eq!(head.status, 200);
        assert!(head.body.is_empty());
        assert_eq!(
            head.headers
                .get("content-length")
                .and_then(|v| v.to_str().ok()),
            Some(full.body.len().to_string().as_str())
        );

        let etag = full
            .headers
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .expect("etag")
            .to_string();
        let cached = send(
            addr,
            None,
            "GET",
            "/config/worker",
            &[
                (
                    "accept",
                    b"application/vnd.coreos.ignition+json;version=3.5.0",
                ),
                ("if-none-match", etag.as_bytes()),
            ],
        )
        .await;
        assert_eq!(cached.status, 304);
        assert!(cached.body.is_empty());

        let big = vec![b'a'; 32 * 1024];
        let r = send(addr, None, "GET", "/healthz", &[("x-big", &big)]).await;
        assert_eq!(r.status, 431);

        let metrics = get(addr, "/metrics", None).await;
        let text = String::from_utf8_lossy(&metrics.body);
        assert!(
            text.contains("mcs_requests_total{code=\"304\"} 1"),
            "{text}"
        );
        assert!(text.contains("mcs_cache_hits_total"));
        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}

#[tokio::test]
async fn rerenders_when_a_manifest_changes() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = cluster_dir("reload");
        let srv = start(config(&dir, None)).await;
        let addr = srv.insecure_addr.expect("plain port");
        let v35 = Some("application/vnd.coreos.ignition+json;version=3.5.0");
        let before = get(addr, "/config/worker", v35).await;
        assert_eq!(before.status, 200);
        let tag_before = before.headers.get("etag").cloned();

        let mc = r#"apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-test-reload
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.5.0
    storage:
      files:
      - path: /etc/reload-marker
        mode: 420
        contents:
          source: data:,reloaded
"#;
        std::fs::write(dir.join("99-worker-test-reload.yaml"), mc).expect("write manifest");

        let mut changed = None;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let r = get(addr, "/config/worker", v35).await;
            if r.status == 200 && r.headers.get("etag").cloned() != tag_before {
                changed = Some(r);
                break;
            }
        }
        let r = changed.expect("the served config changed after the manifest was added");
        assert!(String::from_utf8_lossy(&r.body).contains("/etc/reload-marker"));

        // A manifest that breaks the pool keeps the last good config served.
        std::fs::write(
            dir.join("99-worker-test-reload.yaml"),
            mc.replace("3.5.0", "9.9.9"),
        )
        .expect("write");
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let m = get(addr, "/metrics", None).await;
            if String::from_utf8_lossy(&m.body).contains("mcs_reloads_total 2") {
                break;
            }
        }
        let still = get(addr, "/config/worker", v35).await;
        assert_eq!(still.status, 200);
        assert_eq!(still.headers.get("etag"), r.headers.get("etag"));
        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}

fn self_signed(dir: &Path) -> (PathBuf, PathBuf, Vec<u8>) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let cert = dir.join("tls.crt");
    let key = dir.join("tls.key");
    std::fs::write(&cert, ck.cert.pem()).expect("write cert");
    std::fs::write(&key, ck.key_pair.serialize_pem()).expect("write key");
    (cert, key, ck.cert.der().to_vec())
}

fn client_trusting(ders: &[&[u8]]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for d in ders {
        roots
            .add(rustls::pki_types::CertificateDer::from(d.to_vec()))
            .expect("root");
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

#[tokio::test]
async fn tls_port_and_certificate_reload() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = cluster_dir("tls");
        let certs = dir.join("certs-outside-manifests");
        std::fs::create_dir_all(&certs).expect("certs dir");
        let (cert, key, der1) = self_signed(&certs);
        let srv = start(config(&dir, Some((cert.clone(), key.clone())))).await;
        let addr = srv.secure_addr.expect("tls port");
        let c1 = client_trusting(&[&der1]);
        let accept: &[(&str, &[u8])] = &[(
            "accept",
            b"application/vnd.coreos.ignition+json;version=3.5.0",
        )];
        let r = send(addr, Some(&c1), "GET", "/config/worker", accept).await;
        assert_eq!(r.status, 200);
        assert_eq!(ignition_version(&r.body).as_deref(), Some("3.5.0"));

        let (_, _, der2) = self_signed(&certs);
        let c2 = client_trusting(&[&der2]);
        let mut reloaded = false;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let tcp = TcpStream::connect(addr).await.expect("connect");
            let connector = tokio_rustls::TlsConnector::from(Arc::new(c2.clone()));
            let name = ServerName::try_from("localhost").expect("name");
            if connector.connect(name, tcp).await.is_ok() {
                reloaded = true;
                break;
            }
        }
        assert!(
            reloaded,
            "the new certificate is served after its files change"
        );
        let r = send(addr, Some(&c2), "GET", "/healthz", &[]).await;
        assert_eq!(r.status, 200);
        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}

/// The file paths a served config writes.
fn served_paths(body: &[u8]) -> Vec<String> {
    let served: Value = serde_json::from_slice(body).expect("json body");
    served["storage"]["files"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .filter_map(|f| f["path"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn renders_with_the_templates_folder() {
    tokio::time::timeout(TEST_LIMIT, async {
        let templates = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../templates"));
        let v35 = Some("application/vnd.coreos.ignition+json;version=3.5.0");
        let dir = cluster_dir("templates");

        let plain = start(config(&dir, None)).await;
        let addr = plain.insecure_addr.expect("plain port");
        let without = get(addr, "/config/worker", v35).await;
        assert_eq!(without.status, 200);
        assert!(!served_paths(&without.body).contains(&"/etc/example-mco/node-role".to_string()));
        plain.stop().await;

        let mut cfg = config(&dir, None);
        cfg.source = Source::DirTemplates {
            dir: dir.clone(),
            templates,
        };
        let srv = start(cfg).await;
        let addr = srv.insecure_addr.expect("plain port");
        let with = get(addr, "/config/worker", v35).await;
        assert_eq!(with.status, 200);
        let paths = served_paths(&with.body);
        // templates/worker/00-worker/_base/files/node-role.yaml, through the 00-worker
        // MachineConfig the template controller generates.
        assert!(
            paths.contains(&"/etc/example-mco/node-role".to_string()),
            "{paths:?}"
        );
        // The manifests' own MachineConfigs are still there.
        assert!(paths.len() > served_paths(&without.body).len());
        let master = get(addr, "/config/master", v35).await;
        assert_eq!(master.status, 200);
        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("within the test limit");
}

/// The bootstrap kubeconfig a served config writes, decoded.
fn served_kubeconfig(body: &[u8]) -> String {
    let served: Value = serde_json::from_slice(body).expect("json body");
    let file = served["storage"]["files"]
        .as_array()
        .and_then(|fs| {
            fs.iter()
                .find(|f| f["path"] == "/etc/kubernetes/kubeconfig")
                .cloned()
        })
        .expect("a kubeconfig is served");
    let source = file["contents"]["source"].as_str().expect("a source");
    let compression = file["contents"]["compression"].as_str();
    let bytes = mco_ignition::dataurl::decode_contents(source, compression).expect("decodes");
    String::from_utf8(bytes).expect("utf-8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_bootstrap_token_or_ca_reaches_the_next_machine() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = cluster_dir("bootstrap");
        let secret = tempfile::tempdir().expect("tempdir");
        let (token, ca) = (secret.path().join("token"), secret.path().join("ca.crt"));
        std::fs::write(&token, "token-one\n").expect("write");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\nONE\n").expect("write");
        let mut cfg = config(&dir, None);
        cfg.bootstrap = Some(server::BootstrapFiles {
            apiserver_url: "https://api-int.example:6443".into(),
            token: token.clone(),
            ca: ca.clone(),
        });
        let srv = start(cfg).await;
        let addr = srv.insecure_addr.expect("plain port");
        let v33 = Some("application/vnd.coreos.ignition+json;version=3.3.0");
        let first = served_kubeconfig(&get(addr, "/config/worker", v33).await.body);
        assert!(first.contains("token: token-one"), "{first}");
        assert!(
            first.contains("server: https://api-int.example:6443"),
            "{first}"
        );

        // The kubelet swaps a mounted Secret's files: the next machine gets the new ones.
        std::fs::write(&token, "token-two\n").expect("write");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\nTWO\n").expect("write");
        let mut rotated = None;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let k = served_kubeconfig(&get(addr, "/config/worker", v33).await.body);
            if k.contains("token: token-two") {
                rotated = Some(k);
                break;
            }
        }
        let k = rotated.expect("the served kubeconfig follows the token file");
        assert_ne!(k, first);
        assert!(!k.contains("token-one"));
        // A token file that goes away keeps the last good kubeconfig.
        std::fs::remove_file(&token).expect("remove");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let kept = served_kubeconfig(&get(addr, "/config/worker", v33).await.body);
        assert_eq!(kept, k);
        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(b), &mut out).expect("gunzip");
    out
}

fn header_str<'a>(r: &'a Reply, name: &str) -> Option<&'a str> {
    r.headers.get(name).and_then(|v| v.to_str().ok())
}

/// A counter's value in the server's /metrics text.
async fn counter(addr: SocketAddr, name: &str) -> Option<u64> {
    let m = get(addr, "/metrics", None).await;
    String::from_utf8_lossy(&m.body)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_string))
        .and_then(|v| v.parse().ok())
}

/// For every spec version served, a client that accepts gzip (as Go's HTTP client, which
/// Ignition uses, does) gets a gzip body that decompresses to exactly the plain body, with
/// `Content-Encoding`, its own length and `Vary`; the compression runs once per version, not
/// once per request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_bodies_decompress_to_the_plain_ones_and_are_made_once() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = cluster_dir("gzip");
        let srv = start(config(&dir, None)).await;
        let addr = srv.insecure_addr.expect("plain port");
        let mut versions = 0;
        for v in SpecVersion::ALL {
            if !convertible(v) {
                continue;
            }
            versions += 1;
            let accept = format!(
                "application/vnd.coreos.ignition+json;version={}",
                v.as_str()
            );
            let plain = send(
                addr,
                None,
                "GET",
                "/config/worker",
                &[("accept", accept.as_bytes())],
            )
            .await;
            assert_eq!(plain.status, 200, "{v:?}");
            assert_eq!(header_str(&plain, "content-encoding"), None);
            assert_eq!(header_str(&plain, "vary"), Some("Accept, Accept-Encoding"));
            // Several clients at once, each asking for gzip in its own words.
            let asks: [&[u8]; 4] = [b"gzip", b"gzip, deflate", b"br;q=1.0, GZIP;q=0.5", b"*"];
            let replies = futures::future::join_all(asks.iter().map(|ae| {
                let accept = accept.clone();
                async move {
                    send(
                        addr,
                        None,
                        "GET",
                        "/config/worker",
                        &[("accept", accept.as_bytes()), ("accept-encoding", ae)],
                    )
                    .await
                }
            }))
            .await;
            for (ae, z) in asks.iter().zip(&replies) {
                let what = format!("{v:?} {}", String::from_utf8_lossy(ae));
                assert_eq!(z.status, 200, "{what}");
                assert_eq!(header_str(z, "content-encoding"), Some("gzip"), "{what}");
                assert_eq!(
                    header_str(z, "vary"),
                    Some("Accept, Accept-Encoding"),
                    "{what}"
                );
                assert_eq!(
                    header_str(z, "content-length"),
                    Some(z.body.len().to_string().as_str()),
                    "{what}"
                );
                assert!(z.body.len() < plain.body.len(), "{what}");
                assert_eq!(gunzip(&z.body), plain.body.to_vec(), "{what}");
                assert_eq!(z.body, replies[0].body, "{what}");
                assert_ne!(z.headers.get("etag"), plain.headers.get("etag"), "{what}");
            }
            // HEAD: the gzip form's headers, no body.
            let head = send(
                addr,
                None,
                "HEAD",
                "/config/worker",
                &[("accept", accept.as_bytes()), ("accept-encoding", b"gzip")],
            )
            .await;
            assert_eq!(head.status, 200);
            assert!(head.body.is_empty());
            assert_eq!(header_str(&head, "content-encoding"), Some("gzip"));
            assert_eq!(
                header_str(&head, "content-length"),
                Some(replies[0].body.len().to_string().as_str())
            );
        }
        assert!(versions >= 1, "no spec version converts");
        // Once per version, however many requests asked.
        assert_eq!(
            counter(addr, "mcs_gzip_encodes_total").await,
            Some(versions)
        );
        assert_eq!(
            counter(addr, "mcs_gzip_responses_total").await,
            Some(4 * versions)
        );
        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}

/// `gzip;q=0` (in any case, and `*;q=0`) refuses gzip: the plain body, as upstream serves it,
/// still with `Vary`. Several `Accept-Encoding` lines are one list.
#[tokio::test]
async fn gzip_refused_with_q0_gets_the_plain_body() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = cluster_dir("gzip-q0");
        let srv = start(config(&dir, None)).await;
        let addr = srv.insecure_addr.expect("plain port");
        let accept: (&str, &[u8]) = (
            "accept",
            b"application/vnd.coreos.ignition+json;version=3.5.0",
        );
        let plain = send(addr, None, "GET", "/config/worker", &[accept]).await;
        assert_eq!(plain.status, 200);
        for refused in [
            &b"gzip;q=0"[..],
            b"GZIP; Q=0.000",
            b"*;q=0",
            b"identity",
            b"deflate, br",
            b"",
        ] {
            let r = send(
                addr,
                None,
                "GET",
                "/config/worker",
                &[accept, ("accept-encoding", refused)],
            )
            .await;
            let what = String::from_utf8_lossy(refused);
            assert_eq!(r.status, 200, "{what}");
            assert_eq!(header_str(&r, "content-encoding"), None, "{what}");
            assert_eq!(
                header_str(&r, "vary"),
                Some("Accept, Accept-Encoding"),
                "{what}"
            );
            assert_eq!(r.body, plain.body, "{what}");
            assert_eq!(r.headers.get("etag"), plain.headers.get("etag"), "{what}");
        }
        // Two header lines: "deflate" then "gzip" is a list naming gzip.
        let r = send(
            addr,
            None,
            "GET",
            "/config/worker",
            &[
                accept,
                ("accept-encoding", b"deflate"),
                ("accept-encoding", b"gzip"),
            ],
        )
        .await;
        assert_eq!(header_str(&r, "content-encoding"), Some("gzip"));
        assert_eq!(gunzip(&r.body), plain.body.to_vec());
        // A gzip ETag answers 304 only to a client that would get gzip again.
        let tag = r.headers.get("etag").cloned().expect("etag");
        let again = send(
            addr,
            None,
            "GET",
            "/config/worker",
            &[
                accept,
                ("accept-encoding", b"gzip"),
                ("if-none-match", tag.as_bytes()),
            ],
        )
        .await;
        assert_eq!(again.status, 304);
        assert_eq!(header_str(&again, "vary"), Some("Accept, Accept-Encoding"));
        let plain_again = send(
            addr,
            None,
            "GET",
            "/config/worker",
            &[accept, ("if-none-match", tag.as_bytes())],
        )
        .await;
        assert_eq!(plain_again.status, 200);
        assert_eq!(plain_again.body, plain.body);
        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}

/// Over TLS the gzip body is the same as over plain HTTP.
#[tokio::test]
async fn gzip_over_tls() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = cluster_dir("gzip-tls");
        let certs = dir.join("certs-outside-manifests");
        std::fs::create_dir_all(&certs).expect("certs dir");
        let (cert, key, der) = self_signed(&certs);
        let srv = start(config(&dir, Some((cert, key)))).await;
        let c = client_trusting(&[&der]);
        let hdrs: &[(&str, &[u8])] = &[
            (
                "accept",
                b"application/vnd.coreos.ignition+json;version=3.5.0",
            ),
            ("accept-encoding", b"gzip"),
        ];
        let tls = send(
            srv.secure_addr.expect("tls port"),
            Some(&c),
            "GET",
            "/config/worker",
            hdrs,
        )
        .await;
        let plain = send(
            srv.insecure_addr.expect("plain port"),
            None,
            "GET",
            "/config/worker",
            hdrs,
        )
        .await;
        assert_eq!(header_str(&tls, "content-encoding"), Some("gzip"));
        assert_eq!(tls.body, plain.body);
        assert_eq!(
            ignition_version(&gunzip(&tls.body)).as_deref(),
            Some("3.5.0")
        );
        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}

/// The version of the empty Ignition config in a served config's encapsulated MachineConfig.
fn encapsulated_version(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let source = v["storage"]["files"]
        .as_array()?
        .iter()
        .find(|f| f["path"] == "/etc/ignition-machine-config-encapsulated.json")?["contents"]
        ["source"]
        .as_str()?
        .to_string();
    let data = mco_ignition::dataurl::parse(&source).ok()?.data;
    let mc: Value = serde_json::from_slice(&data).ok()?;
    mc.pointer("/spec/config/ignition/version")?
        .as_str()
        .map(str::to_string)
}

/// A cluster whose ControllerConfig names 4.16 is served as 4.16 serves: its configs in spec
/// 3.4.0 (a request for 3.5.0 falls in 4.16's newest band), with 4.16's encapsulated empty
/// config; without the annotation, as the newest release.
#[tokio::test]
async fn the_cluster_release_is_served_as_that_release_serves() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = cluster_dir("release");
        // 4.16 reads no 3.5.0 configs: the example's, written as 3.4.0.
        for e in std::fs::read_dir(&dir).expect("dir") {
            let p = e.expect("entry").path();
            let text = std::fs::read_to_string(&p).expect("read");
            std::fs::write(&p, text.replace("version: 3.5.0", "version: 3.4.0")).expect("write");
        }
        let accept = Some("application/vnd.coreos.ignition+json;version=3.5.0");
        let newest = start(config(&dir, None)).await;
        let r = get(newest.insecure_addr.expect("port"), "/config/worker", accept).await;
        assert_eq!(r.status, 200);
        assert_eq!(ignition_version(&r.body).as_deref(), Some("3.5.0"));
        assert_eq!(encapsulated_version(&r.body).as_deref(), Some("3.5.0"));
        drop(newest);

        let cc = dir.join("01-controllerconfig.yaml");
        let text = std::fs::read_to_string(&cc).expect("controllerconfig");
        std::fs::write(
            &cc,
            text.replacen(
                "metadata:\n",
                "metadata:\n  annotations:\n    machineconfiguration.openshift.io/release-image-version: 4.16.3\n",
                1,
            ),
        )
        .expect("write");
        let old = start(config(&dir, None)).await;
        let r = get(old.insecure_addr.expect("port"), "/config/worker", accept).await;
        assert_eq!(r.status, 200);
        assert_eq!(ignition_version(&r.body).as_deref(), Some("3.4.0"));
        assert_eq!(encapsulated_version(&r.body).as_deref(), Some("3.4.0"));
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("within the limit");
}
