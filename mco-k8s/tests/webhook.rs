//! The admission webhook over HTTPS on 127.0.0.1: real AdmissionReview bodies against the
//! example cluster dump, a rustls client trusting a self-signed certificate.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use mco_k8s::webhook::{self, Config};
use mco_render::admission::{ClusterView, ReviewOptions};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::rustls::{self, pki_types::ServerName};

const CLUSTER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/admission/cluster");
const CHANGES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/admission/changes");
const TEST_LIMIT: Duration = Duration::from_secs(60);

fn self_signed(dir: &Path) -> (PathBuf, PathBuf, Vec<u8>) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let cert = dir.join("tls.crt");
    let key = dir.join("tls.key");
    std::fs::write(&cert, ck.cert.pem()).expect("write cert");
    std::fs::write(&key, ck.key_pair.serialize_pem()).expect("write key");
    (cert, key, ck.cert.der().to_vec())
}

fn client_trusting(der: &[u8]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(der.to_vec()))
        .expect("root");
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

async fn post(
    addr: SocketAddr,
    tls: &rustls::ClientConfig,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> (u16, Bytes) {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls.clone()));
    let name = ServerName::try_from("localhost").expect("name");
    let stream = connector.connect(name, tcp).await.expect("tls handshake");
    let (mut s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("request");
    let resp = s.send_request(req).await.expect("response");
    let status = resp.status().as_u16();
    (
        status,
        resp.into_body().collect().await.expect("body").to_bytes(),
    )
}

/// The AdmissionReview the API server sends for creating the MachineConfig in `file`.
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
            "requestKind": {"group": "machineconfiguration.openshift.io", "version": "v1", "kind": "MachineConfig"},
            "requestResource": {"group": "machineconfiguration.openshift.io", "version": "v1", "resource": "machineconfigs"},
            "name": object["metadata"]["name"],
            "operation": "CREATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
            "object": object,
            "oldObject": null,
            "dryRun": true,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl-client-side-apply"},
        }
    }))
    .expect("json")
}

#[tokio::test]
async fn https_admission_reviews() {
    tokio::time::timeout(TEST_LIMIT, async {
        let dir = std::env::temp_dir().join(format!("webhook-it-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (cert, key, der) = self_signed(&dir);
        let m = mco_render::load::read_manifests(&[PathBuf::from(CLUSTER)]).expect("cluster");
        let view = Arc::new(ClusterView::new(m, mco_render::RenderOptions::default()));
        let srv = webhook::start(
            Config {
                listen: "127.0.0.1:0".parse().expect("addr"),
                cert,
                key,
                review: ReviewOptions::default(),
                poll_interval: Duration::from_millis(100),
            },
            view,
        )
        .await
        .expect("webhook starts");
        let tls = client_trusting(&der);

        let (status, body) = post(srv.addr, &tls, "POST", "/validate", review_body("a-1", "99-worker-kargs.yaml")).await;
        assert_eq!(status, 200);
        let v: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(
            v,
            json!({
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {
                    "uid": "a-1",
                    "allowed": true,
                    "warnings": ["pool worker: 250 nodes will drain and reboot (kernelArguments changed); about 21h at maxUnavailable 1"],
                }
            })
        );

        let (status, body) = post(srv.addr, &tls, "POST", "/validate", review_body("a-2", "99-worker-broken.yaml")).await;
        assert_eq!(status, 200);
        let v: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(v["response"]["uid"], "a-2");
        assert_eq!(v["response"]["allowed"], false);
        assert_eq!(
            v["response"]["status"],
            json!({"code": 422, "reason": "Invalid", "status": "Failure",
                   "message": "99-worker-broken: spec.config.storage.files[0].path: path not absolute"})
        );

        let (status, _) = post(srv.addr, &tls, "POST", "/validate", b"{not json".to_vec()).await;
        assert_eq!(status, 400);
        let (status, _) = post(srv.addr, &tls, "GET", "/validate", Vec::new()).await;
        assert_eq!(status, 405);
        let (status, body) = post(srv.addr, &tls, "GET", "/healthz", Vec::new()).await;
        assert_eq!((status, &body[..]), (200, &b"ok\n"[..]));
        let (status, _) = post(srv.addr, &tls, "POST", "/other", Vec::new()).await;
        assert_eq!(status, 404);

        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}
