//! The machine-config-server and the admission webhook under hostile clients, on 127.0.0.1:
//! slow heads, oversized heads, more connections than the cap, floods, huge, malformed and slow
//! bodies. Meanwhile a well-behaved client keeps asking, and every one of its requests must be
//! answered, each within a generous bound. The latencies it saw are printed (run with
//! `--nocapture`); no tight timing is asserted, so a loaded machine does not fail these.
//!
//! Every abuser is bounded in count and time; every test in [`TEST_LIMIT`].

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use mco_k8s::limits::ConnLimits;
use mco_k8s::mcs::access::AccessPolicy;
use mco_k8s::mcs::served_state::BuildOptions;
use mco_k8s::mcs::server::{self, Config, Source};
use mco_k8s::webhook::{self, WebhookLimits};
use mco_render::admission::{ClusterView, ReviewOptions};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::{self, pki_types::ServerName};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/cluster");
const ADMISSION_CLUSTER: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/admission/cluster");
const CHANGES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/admission/changes");
/// Upper bound for each test.
/// Generous: CI machines are shared, and a loaded one runs the same steps many times slower.
const TEST_LIMIT: Duration = Duration::from_secs(300);
/// The bound on each of the well-behaved client's requests: generous, a loaded 2-core machine
/// must not fail it; a starved client would.
const GOOD_BOUND: Duration = Duration::from_secs(2);
/// The webhook's bound for a valid review (it renders pools; the API server waits 10 s).
const REVIEW_BOUND: Duration = Duration::from_secs(5);
/// The bound on a hostile request being answered or cut.
const CUT_BOUND: Duration = Duration::from_secs(15);

fn cluster_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcs-abuse-{}-{name}", std::process::id()));
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

/// Median and maximum.
fn figures(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let median = v.get(v.len() / 2).copied().unwrap_or_default();
    let max = v.last().copied().unwrap_or_default();
    (median, max)
}

/// A keep-alive client connection.
async fn keep_alive<S>(io: S) -> hyper::client::conn::http1::SendRequest<Full<Bytes>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    s
}

fn get_req(method: &str, path: &str) -> hyper::Request<Full<Bytes>> {
    hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .body(Full::new(Bytes::new()))
        .expect("request")
}

/// Sends `head` (and then nothing) and reads what comes back until the server closes;
/// the status of the answer, if one came before the close.
async fn raw_exchange<S>(mut io: S, head: &[u8]) -> Option<u16>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = io.write_all(head).await;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match io.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    status_of(&got)
}

fn status_of(bytes: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(bytes.get(..12)?).ok()?;
    text.strip_prefix("HTTP/1.1 ")?.parse().ok()
}

/// Holds a connection, sending one byte of an endless head every 100 ms, until the server
/// closes it; how long that took and whether anything was answered.
async fn slowloris<S>(mut io: S) -> (Duration, Option<u16>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let started = Instant::now();
    let _ = io
        .write_all(b"GET /config/worker HTTP/1.1\r\nHost: x\r\n")
        .await;
    let trickle = b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let mut i = 0usize;
    let mut buf = [0u8; 1024];
    let mut got = Vec::new();
    loop {
        tokio::select! {
            r = io.read(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            },
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                if io.write_all(&trickle[i % trickle.len()..][..1]).await.is_err() {
                    break;
                }
                i += 1;
            }
        }
        assert!(
            started.elapsed() < CUT_BOUND,
            "a slow head held its connection {:?}",
            started.elapsed()
        );
    }
    (started.elapsed(), status_of(&got))
}

fn mcs_limits() -> ConnLimits {
    ConnLimits {
        max_connections: 32,
        header_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(3),
        max_header_bytes: 8192,
        max_headers: 32,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_config_server_holds_under_abuse() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = cluster_dir("abuse");
        let srv = server::start(Config {
            source: Source::Dir(dir.clone()),
            listen: "127.0.0.1".parse().expect("loopback"),
            secure_port: None,
            insecure_port: Some(0),
            tls: None,
            build: BuildOptions::default(),
            access: AccessPolicy::default(),
            poll_interval: Duration::from_secs(3600),
            limits: mcs_limits(),
            bootstrap: None,
        })
        .await
        .expect("server starts");
        let addr = srv.insecure_addr.expect("plain port");
        let connect = move || async move { TcpStream::connect(addr).await.expect("connect") };

        // The well-behaved client and the flooders connect first: they hold their slots.
        let mut good = keep_alive(connect().await).await;
        let expected = {
            let r = good
                .send_request(get_req("GET", "/config/worker"))
                .await
                .expect("response");
            assert_eq!(r.status(), 200);
            r.into_body().collect().await.expect("body").to_bytes()
        };
        let mut flooders = Vec::new();
        for _ in 0..4 {
            flooders.push(keep_alive(connect().await).await);
        }

        let done = Arc::new(AtomicBool::new(false));
        let mut abusers = tokio::task::JoinSet::new();
        // 16 slow heads (half the cap).
        for _ in 0..16 {
            let io = connect().await;
            abusers.spawn(async move {
                let (held, status) = slowloris(io).await;
                assert!(
                    status.is_none_or(|s| s >= 400),
                    "a slow head was answered {status:?}"
                );
                format!("slowloris cut after {held:?}")
            });
        }
        // 48 connections that send nothing: with the slow heads, twice the cap.
        for _ in 0..48 {
            abusers.spawn(async move {
                let started = Instant::now();
                let got = raw_exchange(connect().await, b"").await;
                assert_eq!(got, None, "an idle connection got an answer");
                let held = started.elapsed();
                assert!(held < CUT_BOUND, "an idle connection held {held:?}");
                format!("silent connection cut after {held:?}")
            });
        }
        // Oversized heads: one a little over the limit (answered 431), one of 1 MiB (431 or
        // cut); neither is ever served.
        for (name, size) in [("12 KiB head", 12 << 10), ("1 MiB head", 1 << 20)] {
            abusers.spawn(async move {
                let mut head = b"GET /config/worker HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
                head.resize(head.len() + size, b'a');
                head.extend_from_slice(b"\r\n\r\n");
                let mut statuses = Vec::new();
                for _ in 0..5 {
                    let started = Instant::now();
                    let got = raw_exchange(connect().await, &head).await;
                    assert!(
                        started.elapsed() < CUT_BOUND,
                        "{name} held {:?}",
                        started.elapsed()
                    );
                    statuses.push(got);
                }
                assert!(
                    statuses.iter().all(|s| s.is_none_or(|s| s == 431)),
                    "{name}: {statuses:?}"
                );
                if size < 16 << 10 {
                    assert!(
                        statuses.iter().all(|s| *s == Some(431)),
                        "{name}: {statuses:?}"
                    );
                }
                format!("{name}: {statuses:?}")
            });
        }
        // Keep-alive clients that ask once and then sit idle: closed after the idle timeout.
        for _ in 0..4 {
            abusers.spawn(async move {
                let started = Instant::now();
                let got =
                    raw_exchange(connect().await, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                        .await;
                assert_eq!(got, Some(200));
                let held = started.elapsed();
                assert!(
                    held < CUT_BOUND,
                    "an idle keep-alive connection held {held:?}"
                );
                format!("idle keep-alive cut after {held:?}")
            });
        }
        // Too many header fields, a body on GET, a method not served, hostile paths.
        abusers.spawn(async move {
            let mut many = b"GET /config/worker HTTP/1.1\r\nHost: x\r\n".to_vec();
            for i in 0..40 {
                many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
            }
            many.extend_from_slice(b"\r\n");
            let cases: Vec<(Vec<u8>, u16)> = vec![
                (many, 431),
                (
                    b"GET /config/worker HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
                        .to_vec(),
                    413,
                ),
                (
                    b"POST /config/worker HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
                        .to_vec(),
                    405,
                ),
                (
                    b"GET /config/../config/worker HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
                    404,
                ),
                (
                    b"GET /config/worker%2F..%2Fmaster HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
                    400,
                ),
                (
                    b"GET //config/worker HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
                    404,
                ),
                (
                    b"GET /config/w\xc3\xb6rker HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
                    400,
                ),
                (
                    b"GET /config/\xff HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
                    400,
                ),
            ];
            for (head, want) in cases {
                let mut head = head;
                // Close after the answer, so the exchange ends.
                if let Some(p) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                    head.splice(p + 2..p + 2, b"Connection: close\r\n".iter().copied());
                }
                let got = raw_exchange(connect().await, &head).await;
                assert_eq!(
                    got,
                    Some(want),
                    "{}",
                    String::from_utf8_lossy(&head[..40.min(head.len())])
                );
            }
            "hostile requests refused".to_string()
        });
        // HEAD/GET floods on the flooders' connections until the others are done.
        let mut floods = tokio::task::JoinSet::new();
        for (i, mut s) in flooders.into_iter().enumerate() {
            let done = done.clone();
            floods.spawn(async move {
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let method = if i % 2 == 0 { "HEAD" } else { "GET" };
                    let r = s
                        .send_request(get_req(method, "/config/worker"))
                        .await
                        .expect("flood response");
                    assert_eq!(r.status(), 200);
                    let _ = r.into_body().collect().await;
                    n += 1;
                }
                n
            });
        }

        // Meanwhile the well-behaved client asks, and is answered each time.
        let mut latencies = Vec::new();
        let mut messages = Vec::new();
        loop {
            let started = Instant::now();
            let r = good
                .send_request(get_req("GET", "/config/worker"))
                .await
                .expect("good response");
            assert_eq!(r.status(), 200);
            let body = r.into_body().collect().await.expect("good body").to_bytes();
            let took = started.elapsed();
            assert_eq!(body, expected);
            assert!(took < GOOD_BOUND, "a well-behaved request took {took:?}");
            latencies.push(took);
            if abusers.is_empty() {
                break;
            }
            while let Some(r) = abusers.try_join_next() {
                messages.push(r.expect("abuser task"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        done.store(true, Ordering::Relaxed);
        let mut flooded = 0;
        while let Some(n) = floods.join_next().await {
            flooded += n.expect("flood task");
        }

        // Past the storm, a new connection is accepted and served.
        let started = Instant::now();
        let mut fresh = keep_alive(connect().await).await;
        let r = fresh
            .send_request(get_req("GET", "/config/worker"))
            .await
            .expect("fresh response");
        assert_eq!(r.status(), 200);
        let fresh_took = started.elapsed();

        let (median, max) = figures(latencies.clone());
        let cuts: Vec<_> = messages
            .iter()
            .filter(|m| m.starts_with("slowloris"))
            .collect();
        println!(
            "mcs under abuse: {} well-behaved requests, median {median:?}, max {max:?}; \
             {flooded} flood requests; fresh connection after: {fresh_took:?}; \
             {} slow heads cut (first: {:?})",
            latencies.len(),
            cuts.len(),
            cuts.first()
        );
        let silent: Vec<_> = messages
            .iter()
            .filter(|m| m.starts_with("silent"))
            .collect();
        println!(
            "  {} silent connections (over the cap: some waited for a slot), last: {:?}",
            silent.len(),
            silent.last()
        );
        for m in messages
            .iter()
            .filter(|m| !m.starts_with("slowloris") && !m.starts_with("silent"))
        {
            println!("  {m}");
        }
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

fn client_trusting(der: &[u8]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(der.to_vec()))
        .expect("root");
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

async fn tls_connect(
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let connector = tokio_rustls::TlsConnector::from(tls.clone());
    let name = ServerName::try_from("localhost").expect("name");
    connector.connect(name, tcp).await.expect("tls handshake")
}

fn review_body(uid: &str, file: &str) -> Vec<u8> {
    let text = std::fs::read_to_string(Path::new(CHANGES).join(file)).expect("read change");
    let object: Value = serde_yaml_ng::from_str(&text).expect("yaml");
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "machineconfiguration.openshift.io", "version": "v1", "kind": "MachineConfig"},
            "resource": {"group": "machineconfiguration.openshift.io", "version": "v1", "resource": "machineconfigs"},
            "name": object["metadata"]["name"],
            "operation": "CREATE",
            "userInfo": {"username": "kubernetes-admin"},
            "object": object,
            "oldObject": null,
            "dryRun": false,
        }
    }))
    .expect("json")
}

fn post_req(body: impl Into<Bytes>) -> hyper::Request<Full<Bytes>> {
    hyper::Request::builder()
        .method("POST")
        .uri("/validate")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(body.into()))
        .expect("request")
}

/// Sends a head, then `body` in pieces of `piece` bytes every `pause` (a writer of its own),
/// reading the answer meanwhile; the status, if one came before the server closed.
async fn post_streaming(
    io: tokio_rustls::client::TlsStream<TcpStream>,
    head: String,
    body_len: usize,
    piece: usize,
    pause: Duration,
) -> Option<u16> {
    let (mut rd, mut wr) = tokio::io::split(io);
    let writer = tokio::spawn(async move {
        if wr.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let chunk = vec![b' '; piece];
        let mut sent = 0;
        while sent < body_len {
            let n = piece.min(body_len - sent);
            if wr.write_all(&chunk[..n]).await.is_err() {
                return;
            }
            sent += n;
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
    });
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match rd.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
        if got.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    writer.abort();
    status_of(&got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_holds_under_abuse() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = std::env::temp_dir().join(format!("webhook-abuse-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (cert, key, der) = self_signed(&dir);
        let m = mco_render::load::read_manifests(&[PathBuf::from(ADMISSION_CLUSTER)]).expect("cluster");
        let view = Arc::new(ClusterView::new(m, mco_render::RenderOptions::default()));
        let mut limits = WebhookLimits::default();
        limits.conn.header_timeout = Duration::from_secs(2);
        limits.body_timeout = Duration::from_secs(2);
        limits.conn.max_connections = 32;
        let srv = webhook::start(
            webhook::Config {
                listen: "127.0.0.1:0".parse().expect("addr"),
                cert,
                key,
                review: ReviewOptions::default(),
                poll_interval: Duration::from_secs(3600),
                limits,
            },
            view,
        )
        .await
        .expect("webhook starts");
        let addr = srv.addr;
        let tls = client_trusting(&der);
        let review = review_body("good", "99-worker-kargs.yaml");
        let mut good = keep_alive(tls_connect(addr, &tls).await).await;

        let mut abusers = tokio::task::JoinSet::new();
        // Malformed reviews: 400, or a denied/errored review; never a panic or a hang.
        for (name, body) in [
            ("not json", b"{not json".to_vec()),
            ("array", b"[]".to_vec()),
            ("null", b"null".to_vec()),
            ("no request", br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec()),
            ("request not an object", br#"{"kind":"AdmissionReview","request":7}"#.to_vec()),
            ("deep nesting", "[".repeat(100_000).into_bytes()),
            ("binary", (0..=255u8).cycle().take(64 << 10).collect()),
        ] {
            let tls = tls.clone();
            abusers.spawn(async move {
                let started = Instant::now();
                let mut s = keep_alive(tls_connect(addr, &tls).await).await;
                let r = s.send_request(post_req(body)).await.expect("response");
                let status = r.status().as_u16();
                let took = started.elapsed();
                assert!(took < CUT_BOUND, "{name} took {took:?}");
                assert!((400..500).contains(&status), "{name}: {status}");
                format!("{name}: {status} in {took:?}")
            });
        }
        // 20 MB, declared: 413 before the body is read.
        {
            let tls = tls.clone();
            abusers.spawn(async move {
                let started = Instant::now();
                let len = 20_000_000;
                let head = format!(
                    "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
                );
                let got = post_streaming(tls_connect(addr, &tls).await, head, len, 64 << 10, Duration::ZERO).await;
                let took = started.elapsed();
                assert_eq!(got, Some(413), "20 MB declared");
                assert!(took < CUT_BOUND, "20 MB declared took {took:?}");
                format!("20 MB with Content-Length: {got:?} in {took:?}")
            });
        }
        // 20 MB, chunked (no length said): cut at the limit, 413 or closed.
        {
            let tls = tls.clone();
            abusers.spawn(async move {
                let started = Instant::now();
                let mut io = tls_connect(addr, &tls).await;
                let head = "POST /validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
                let mut status = None;
                if io.write_all(head.as_bytes()).await.is_ok() {
                    let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, " ".repeat(1 << 20));
                    for _ in 0..20 {
                        if io.write_all(chunk.as_bytes()).await.is_err() {
                            break;
                        }
                    }
                    let mut got = Vec::new();
                    let _ = tokio::time::timeout(CUT_BOUND, io.read_to_end(&mut got)).await;
                    status = status_of(&got);
                }
                let took = started.elapsed();
                assert!(status.is_none_or(|s| s == 413), "20 MB chunked: {status:?}");
                assert!(took < CUT_BOUND, "20 MB chunked took {took:?}");
                format!("20 MB chunked: {status:?} in {took:?}")
            });
        }
        // A slow body: 408 after the body timeout.
        for _ in 0..4 {
            let tls = tls.clone();
            abusers.spawn(async move {
                let started = Instant::now();
                let head = "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n".to_string();
                let got = post_streaming(tls_connect(addr, &tls).await, head, 1000, 1, Duration::from_millis(100)).await;
                let took = started.elapsed();
                assert_eq!(got, Some(408), "slow body");
                assert!(took < CUT_BOUND, "slow body took {took:?}");
                format!("slow body: {got:?} in {took:?}")
            });
        }
        // Slow heads: cut after the head timeout.
        for _ in 0..8 {
            let tls = tls.clone();
            abusers.spawn(async move {
                let (held, status) = slowloris(tls_connect(addr, &tls).await).await;
                assert!(status.is_none_or(|s| s >= 400), "a slow head was answered {status:?}");
                format!("slowloris cut after {held:?}")
            });
        }
        // A TCP connection that never starts the handshake.
        abusers.spawn(async move {
            let started = Instant::now();
            let got = raw_exchange(TcpStream::connect(addr).await.expect("connect"), b"").await;
            assert_eq!(got, None);
            assert!(started.elapsed() < CUT_BOUND);
            format!("no handshake: cut after {:?}", started.elapsed())
        });

        let mut latencies = Vec::new();
        let mut messages = Vec::new();
        let mut uid = 0;
        loop {
            uid += 1;
            let started = Instant::now();
            let r = good.send_request(post_req(review.clone())).await.expect("good response");
            assert_eq!(r.status(), 200);
            let body = r.into_body().collect().await.expect("good body").to_bytes();
            let took = started.elapsed();
            let v: Value = serde_json::from_slice(&body).expect("review json");
            assert_eq!(v["response"]["uid"], "good", "{v}");
            assert_eq!(v["response"]["allowed"], true, "{v}");
            assert!(took < REVIEW_BOUND, "a valid review took {took:?}");
            latencies.push(took);
            if abusers.is_empty() {
                break;
            }
            while let Some(r) = abusers.try_join_next() {
                messages.push(r.expect("abuser task"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (median, max) = figures(latencies.clone());
        println!(
            "webhook under abuse: {uid} valid reviews, median {median:?}, max {max:?}"
        );
        for m in &messages {
            println!("  {m}");
        }
        // Health still answers on a new connection.
        let mut s = keep_alive(tls_connect(addr, &tls).await).await;
        let r = s.send_request(get_req("GET", "/healthz")).await.expect("health");
        assert_eq!(r.status(), 200);
        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}
