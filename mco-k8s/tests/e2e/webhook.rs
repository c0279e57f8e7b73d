//! The admission webhook over HTTPS on 127.0.0.1: real AdmissionReview bodies against the
//! example cluster dump and against watch caches of the in-process API server, a rustls
//! client trusting a self-signed certificate; and the webhook configuration in manifests/.

use crate::support;

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
const TEST_LIMIT: Duration = support::PATIENCE;

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
        let (dir, cert, key, der) = temp_certs("fixed");
        let m = mco_render::load::read_manifests(&[PathBuf::from(CLUSTER)]).expect("cluster");
        let view = Arc::new(ClusterView::new(m, mco_render::RenderOptions::default()));
        let srv = webhook::start(
            Config {
                listen: "127.0.0.1:0".parse().expect("addr"),
                cert,
                key,
                review: ReviewOptions::default(),
                poll_interval: Duration::from_millis(100),
                limits: webhook::WebhookLimits::default(),
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

        // The Secret is re-issued: the new certificate is served once its files change.
        let (_, _, der2) = self_signed(&dir);
        let tls2 = client_trusting(&der2);
        let mut reloaded = false;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let tcp = TcpStream::connect(srv.addr).await.expect("connect");
            let connector = tokio_rustls::TlsConnector::from(Arc::new(tls2.clone()));
            let name = ServerName::try_from("localhost").expect("name");
            if connector.connect(name, tcp).await.is_ok() {
                reloaded = true;
                break;
            }
        }
        assert!(reloaded, "the re-issued certificate is served");
        let (status, _) = post(srv.addr, &tls2, "POST", "/validate", review_body("a-3", "99-worker-policy.yaml")).await;
        assert_eq!(status, 200);

        srv.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}

fn temp_certs(name: &str) -> (PathBuf, PathBuf, PathBuf, Vec<u8>) {
    let dir = std::env::temp_dir().join(format!("webhook-it-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (cert, key, der) = self_signed(&dir);
    (dir, cert, key, der)
}

/// Cluster mode: the view comes from watches of the in-process API server, and follows a
/// change to the cluster without any request of the webhook's own.
#[tokio::test]
async fn reviews_against_the_watch_caches() {
    use kube::api::{DynamicObject, PostParams};
    tokio::time::timeout(TEST_LIMIT, async {
        let server = support::apiserver::ApiServer::start()
            .await
            .expect("apiserver");
        let client = server.client();
        let m = mco_render::load::read_manifests(&[PathBuf::from(CLUSTER)]).expect("cluster");
        for (_, p) in &m.pools {
            let ar = mco_k8s::crd::MACHINE_CONFIG_POOL.api_resource();
            let obj: DynamicObject =
                serde_json::from_value(serde_json::to_value(p).expect("pool")).expect("pool");
            kube::Api::<DynamicObject>::all_with(client.clone(), &ar)
                .create(&PostParams::default(), &obj)
                .await
                .expect("create pool");
        }
        let mcs = kube::Api::<DynamicObject>::all_with(
            client.clone(),
            &mco_k8s::crd::MACHINE_CONFIG.api_resource(),
        );
        for (_, mc) in &m.machine_configs {
            let obj: DynamicObject =
                serde_json::from_value(serde_json::to_value(mc).expect("mc")).expect("mc");
            mcs.create(&PostParams::default(), &obj)
                .await
                .expect("create mc");
        }
        let (dir, cert, key, der) = temp_certs("cluster");
        let caches = mco_k8s::webhook::cache::WebhookCache::start(
            &client,
            mco_render::RenderOptions::default(),
        );
        for _ in 0..200 {
            if caches.filled() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(caches.filled(), "caches fill");
        let srv = webhook::start(
            Config {
                listen: "127.0.0.1:0".parse().expect("addr"),
                cert,
                key,
                review: ReviewOptions::default(),
                poll_interval: Duration::from_millis(100),
                limits: webhook::WebhookLimits::default(),
            },
            caches,
        )
        .await
        .expect("webhook starts");
        let tls = client_trusting(&der);
        // The API server's status is not written by its status subresource here: the pool
        // counts come from the objects as created.
        let (status, body) = post(
            srv.addr,
            &tls,
            "POST",
            "/validate",
            review_body("c-1", "99-worker-policy.yaml"),
        )
        .await;
        assert_eq!(status, 200);
        let v: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(v["response"]["allowed"], true, "{v}");
        let warnings = v["response"]["warnings"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(warnings.len(), 1, "{v}");
        let w = warnings[0].as_str().unwrap_or("");
        assert!(
            w.starts_with("pool worker: ")
                && w.ends_with("reload crio.service, no drain, no reboot"),
            "{w}"
        );

        // The same file already in the cluster: nothing changes, nothing to say.
        let text = std::fs::read_to_string(Path::new(CHANGES).join("99-worker-policy.yaml"))
            .expect("read");
        let obj: DynamicObject = serde_yaml_ng::from_str(&text).expect("yaml");
        mcs.create(&PostParams::default(), &obj)
            .await
            .expect("create");
        let mut quiet = false;
        for _ in 0..100 {
            let (_, body) = post(
                srv.addr,
                &tls,
                "POST",
                "/validate",
                review_body("c-2", "99-worker-policy.yaml"),
            )
            .await;
            let v: Value = serde_json::from_slice(&body).expect("json");
            if v["response"].get("warnings").is_none() {
                quiet = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(quiet, "the view follows the cluster");
        let counts = server.store.request_counts();
        srv.stop().await;
        // Only the watches' LIST and WATCH requests (an unserved kind's list counts by its
        // path), none per review.
        for (req, _) in counts
            .iter()
            .filter(|(r, _)| r.contains("machineconfig") || r.contains("controllerconfig"))
        {
            assert!(
                req.starts_with("LIST ")
                    || req.starts_with("WATCH ")
                    || req.starts_with("POST ")
                    || req.starts_with("GET /apis/"),
                "{req}: {counts:?}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .expect("test finished in time");
}

const MANIFESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests");

/// The webhook configuration is well-formed for the API server (every field known to
/// admissionregistration.k8s.io/v1: a typed round trip keeps it whole), says what the issue
/// asks, points at the Service in front of the controller's webhook port, and the in-process
/// API server stores it.
#[tokio::test]
async fn the_manifests_webhook_configuration() {
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    use k8s_openapi::api::core::v1::Service;
    let docs = support::yaml_docs(&Path::new(MANIFESTS).join("09-webhook.yaml"));
    let find = |kind: &str| -> Value {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("{kind}"))
    };
    let vwc_json = find("ValidatingWebhookConfiguration");
    let vwc: ValidatingWebhookConfiguration =
        serde_json::from_value(vwc_json.clone()).expect("typed webhook configuration");
    assert_eq!(
        serde_json::to_value(&vwc).expect("json"),
        vwc_json,
        "unknown or misspelled fields"
    );
    let svc_json = find("Service");
    let svc: Service = serde_json::from_value(svc_json.clone()).expect("typed service");
    assert_eq!(serde_json::to_value(&svc).expect("json"), svc_json);

    assert_eq!(
        vwc.metadata.name.as_deref(),
        Some(mco_render::admission::WEBHOOK_CONFIGURATION)
    );
    let hooks = vwc.webhooks.clone().unwrap_or_default();
    assert_eq!(hooks.len(), 1);
    let h = &hooks[0];
    assert_eq!(h.failure_policy.as_deref(), Some("Ignore"));
    assert_eq!(h.side_effects, "None");
    assert_eq!(h.timeout_seconds, Some(5));
    assert_eq!(h.admission_review_versions, vec!["v1".to_string()]);
    let rules = h.rules.clone().unwrap_or_default();
    let resources: Vec<String> = rules
        .iter()
        .flat_map(|r| r.resources.clone().unwrap_or_default())
        .collect();
    for r in [
        "machineconfigs",
        "kubeletconfigs",
        "containerruntimeconfigs",
        "machineconfigpools",
        "rolloutpolicies",
    ] {
        assert!(resources.iter().any(|x| x == r), "{r}");
    }
    // Writes are reviewed; of deletions, only a MachineConfig's (refused while in use).
    for r in &rules {
        let ops = r.operations.clone().unwrap_or_default();
        if ops == vec!["DELETE".to_string()] {
            assert_eq!(
                r.resources.clone().unwrap_or_default(),
                vec!["machineconfigs".to_string()]
            );
        } else {
            assert_eq!(ops, vec!["CREATE".to_string(), "UPDATE".to_string()]);
        }
    }
    assert!(rules
        .iter()
        .any(|r| r.operations.clone().unwrap_or_default() == vec!["DELETE".to_string()]));
    let target = h.client_config.service.clone().expect("service reference");
    assert_eq!(Some(target.name.clone()), svc.metadata.name.clone());
    assert_eq!(
        target.namespace,
        svc.metadata.namespace.clone().unwrap_or_default()
    );
    assert_eq!(target.path.as_deref(), Some("/validate"));
    let ports = svc.spec.clone().and_then(|s| s.ports).unwrap_or_default();
    assert!(ports.iter().any(|p| Some(p.port) == target.port));

    // The controller Deployment listens where the Service sends, with the Secret mounted.
    let ctl = support::yaml_docs(&Path::new(MANIFESTS).join("03-controller.yaml"));
    let c = &ctl[0]["spec"]["template"]["spec"];
    let cmd: Vec<&str> = c["containers"][0]["command"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let listen = cmd
        .iter()
        .position(|a| *a == "--webhook-listen")
        .map(|i| cmd[i + 1])
        .expect("--webhook-listen");
    assert!(listen.ends_with(":9443"), "{listen}");
    assert_eq!(
        c["containers"][0]["ports"][0],
        json!({"name": "webhook", "containerPort": 9443})
    );
    assert_eq!(svc_json["spec"]["ports"][0]["targetPort"], "webhook");
    assert_eq!(
        c["volumes"][0]["secret"]["secretName"],
        mco_render::admission::WEBHOOK_TLS_SECRET
    );

    let server = support::apiserver::ApiServer::start()
        .await
        .expect("apiserver");
    let api: kube::Api<ValidatingWebhookConfiguration> = kube::Api::all(server.client());
    api.create(&Default::default(), &vwc).await.expect("stored");
    let back = api
        .get("machine-config-validation")
        .await
        .expect("read back");
    assert_eq!(back.webhooks, vwc.webhooks);
}

/// The operator copies a cert-manager Secret's ca.crt into caBundle.
#[test]
fn ca_bundle_from_the_secret() {
    let docs = support::yaml_docs(&Path::new(MANIFESTS).join("09-webhook.yaml"));
    let mut vwc = docs
        .iter()
        .find(|d| d["kind"] == "ValidatingWebhookConfiguration")
        .cloned()
        .expect("vwc");
    assert!(mco_render::admission::set_ca_bundle(&mut vwc, "Q0E="));
    assert_eq!(vwc["webhooks"][0]["clientConfig"]["caBundle"], "Q0E=");
    let mut svc = docs
        .iter()
        .find(|d| d["kind"] == "Service")
        .cloned()
        .expect("svc");
    assert!(!mco_render::admission::set_ca_bundle(&mut svc, "Q0E="));
}

/// The operator applies the webhook's Service and configuration, and fills caBundle from the
/// cert-manager Secret's ca.crt once the Secret is there (without it, caBundle stays unset:
/// OpenShift's service CA injects it).
#[tokio::test]
async fn the_operator_fills_the_ca_bundle_from_the_secret() {
    use mco_k8s::operator::{embedded, Operator, Options};
    tokio::time::timeout(TEST_LIMIT, async {
        let server = support::apiserver::ApiServer::start().await.expect("apiserver");
        let op = Operator::new(
            server.client(),
            Options {
                manifests: embedded::manifests(),
                image: "quay.io/test/mco-rs:1".into(),
                version: "0.1.0".into(),
                resync: Duration::from_secs(1),
                debounce: Duration::from_millis(20),
            },
        )
        .expect("operator");
        op.sync_once().await.expect("first pass");
        let vwc_def = support::apiserver::resource("validatingwebhookconfigurations").expect("def");
        let get = || {
            server
                .store
                .get("validatingwebhookconfigurations", "", mco_render::admission::WEBHOOK_CONFIGURATION)
                .expect("the operator applied the webhook configuration")
        };
        assert!(get()["webhooks"][0]["clientConfig"].get("caBundle").is_none());
        assert!(server.store.get("services", "openshift-machine-config-operator", "machine-config-controller").is_some());

        let secret = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": mco_render::admission::WEBHOOK_TLS_SECRET, "namespace": "openshift-machine-config-operator"},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5", "ca.crt": "Q0EgUEVN"},
        });
        let secrets = support::apiserver::resource("secrets").expect("def");
        server
            .store
            .create(secrets, "openshift-machine-config-operator", secret)
            .expect("secret");
        op.sync_once().await.expect("second pass");
        assert_eq!(get()["webhooks"][0]["clientConfig"]["caBundle"], "Q0EgUEVN");
        assert_eq!(vwc_def.group, "admissionregistration.k8s.io");

        let missing = support::rbac::ungranted_to(&server.store.requests_scoped(None), "machine-config-operator");
        assert!(missing.is_empty(), "the operator's ClusterRole lacks {missing:?}");
    })
    .await
    .expect("test finished in time");
}
