//! Validating admission, as kube-apiserver runs it: every stored ValidatingWebhookConfiguration
//! whose rules match a create, update or delete is called with an AdmissionReview v1 over HTTPS
//! (trusting its `caBundle`, checking the certificate against the service's DNS name
//! `<name>.<namespace>.svc` or the URL's host), before the object is stored.
//!
//! What it keeps faithful:
//! - rules match on operation, API group, version and resource (`*` for every resource but no
//!   subresource, `*/*` and `<resource>/<sub>` for subresources: a status write matches only
//!   a rule naming `<resource>/status`), `scope` and `objectSelector`;
//! - `matchConditions` are CEL in the real server; this one evaluates the one shape the
//!   project's manifests use (`request.userInfo.username != '<name>'`, or `==`) and refuses
//!   the request with 500 for any other expression, so a test never passes on a condition it
//!   did not evaluate;
//! - a denial is `admission webhook "<name>" denied the request: <message>` with the
//!   response status's code (at least 400) and reason, as `webhookerrors.ToStatusErr` words
//!   it; warnings come back as `Warning: 299 - "<text>"` headers;
//! - a webhook that cannot be called (no route, TLS, timeout after `timeoutSeconds`, default
//!   10, a body that is not an AdmissionReview) fails the request with 500 `failed calling
//!   webhook "<name>": ...` under `failurePolicy: Fail` (the default), and is skipped under
//!   `Ignore`;
//! - the object reviewed on update is the one that would be stored (the stored status kept
//!   on a main-resource write), with `oldObject` the stored one; updates that change nothing
//!   are reviewed too, as the real server reviews them before comparing;
//! - `dryRun=All` requests are reviewed (`dryRun: true`) and never stored.
//!
//! A service is reached at the address a test routes it to ([`super::apiserver::Store::route_service`]),
//! standing in for the Service's endpoints. Every call is logged ([`Call`]).

use super::apiserver::ResourceDef;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::rustls::{self, pki_types::pem::PemObject, pki_types::ServerName};

/// The operation under admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE` (the object is `null`, the stored one `oldObject`).
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// What a webhook call came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Allowed, with the webhook's warnings.
    Allowed(Vec<String>),
    /// Denied, with the message the client got.
    Denied(String),
    /// Not called or no usable answer: the error (the request failed unless the policy is
    /// `Ignore`).
    Failed(String),
}

/// One webhook call, as [`super::apiserver::Store::admission_calls`] lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The webhook's name.
    pub webhook: String,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'static str,
    /// The object's kind.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// What came of it.
    pub outcome: Outcome,
}

/// A request under admission.
pub struct Request<'a> {
    /// The resource.
    pub def: &'a ResourceDef,
    /// The subresource written, if any.
    pub sub: Option<&'a str>,
    /// Create or update.
    pub operation: Operation,
    /// The object as it would be stored.
    pub object: &'a Value,
    /// The stored object, on update.
    pub old: Option<&'a Value>,
    /// The requesting user.
    pub user: &'a str,
    /// A dry run (`dryRun=All`): reviewed, never stored.
    pub dry_run: bool,
}

impl Request<'_> {
    /// The object's name (the stored one's on DELETE).
    fn name(&self) -> &str {
        self.object["metadata"]["name"]
            .as_str()
            .or_else(|| self.old.and_then(|o| o["metadata"]["name"].as_str()))
            .unwrap_or("")
    }
}

/// The request is refused: code, reason and message of the Status the client gets.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// HTTP code.
    pub code: u16,
    /// The Status reason.
    pub reason: String,
    /// The Status message.
    pub message: String,
}

/// The webhooks of `configurations` that apply to `req`, called in order (the real server
/// calls validating webhooks in parallel; the outcome is the same). Returns the warnings to
/// send back, and logs every call into `log`.
pub async fn admit(
    configurations: &[Value],
    routes: &(dyn Fn(&str, &str, u16) -> Option<SocketAddr> + Sync),
    req: &Request<'_>,
    log: &mut Vec<Call>,
) -> Result<Vec<String>, Refusal> {
    let mut warnings = Vec::new();
    for hook in configurations
        .iter()
        .flat_map(|c| c["webhooks"].as_array().cloned().unwrap_or_default())
    {
        if !rules_match(&hook, req) || !object_selector_matches(&hook, req) {
            continue;
        }
        let name = hook["name"].as_str().unwrap_or("").to_string();
        if !conditions_match(&hook, req).map_err(|message| Refusal {
            code: 500,
            reason: "InternalError".into(),
            message,
        })? {
            continue;
        }
        let outcome = call(&hook, routes, req).await;
        log.push(Call {
            webhook: name.clone(),
            operation: req.operation.as_str(),
            kind: req.def.kind.to_string(),
            name: req.name().to_string(),
            outcome: match &outcome {
                Ok(Answer::Allowed(w)) => Outcome::Allowed(w.clone()),
                Ok(Answer::Denied(r)) => Outcome::Denied(r.message.clone()),
                Err(e) => Outcome::Failed(e.clone()),
            },
        });
        match outcome {
            Ok(Answer::Allowed(w)) => warnings.extend(w),
            Ok(Answer::Denied(r)) => return Err(r),
            Err(_) if hook["failurePolicy"] == "Ignore" => {}
            Err(e) => {
                return Err(Refusal {
                    code: 500,
                    reason: "InternalError".into(),
                    message: format!(
                        "Internal error occurred: failed calling webhook \"{name}\": {e}"
                    ),
                })
            }
        }
    }
    Ok(warnings)
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn listed(list: &Value, item: &str) -> bool {
    strings(list).iter().any(|s| *s == "*" || *s == item)
}

fn rules_match(hook: &Value, req: &Request<'_>) -> bool {
    let resource = match req.sub {
        Some(s) => format!("{}/{s}", req.def.plural),
        None => req.def.plural.to_string(),
    };
    hook["rules"].as_array().into_iter().flatten().any(|r| {
        let resource_ok = strings(&r["resources"]).iter().any(|want| match *want {
            "*/*" => true,
            "*" => req.sub.is_none(),
            w => match (w.split_once('/'), req.sub) {
                (Some(("*", sub)), Some(s)) => sub == s,
                _ => w == resource,
            },
        });
        let scope_ok = match r["scope"].as_str().unwrap_or("*") {
            "Cluster" => !req.def.namespaced,
            "Namespaced" => req.def.namespaced,
            _ => true,
        };
        listed(&r["operations"], req.operation.as_str())
            && listed(&r["apiGroups"], req.def.group)
            && listed(&r["apiVersions"], req.def.version)
            && resource_ok
            && scope_ok
    })
}

/// `objectSelector` on the object's labels (the old object's on update, when the new one
/// does not match: the real server matches either).
fn object_selector_matches(hook: &Value, req: &Request<'_>) -> bool {
    let Some(sel) = hook.get("objectSelector").filter(|s| !s.is_null()) else {
        return true;
    };
    let Ok(sel) = serde_json::from_value::<mco_render::api::LabelSelector>(sel.clone()) else {
        return false;
    };
    let Ok(compiled) = sel.compile() else {
        return false;
    };
    let labels = |o: &Value| -> std::collections::BTreeMap<String, String> {
        o["metadata"]["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default()
    };
    compiled.matches(&labels(req.object)) || req.old.is_some_and(|o| compiled.matches(&labels(o)))
}

/// Every `matchConditions` entry true; `Err` for an expression this server cannot evaluate.
fn conditions_match(hook: &Value, req: &Request<'_>) -> Result<bool, String> {
    for c in hook["matchConditions"].as_array().into_iter().flatten() {
        let expr = c["expression"].as_str().unwrap_or("").trim();
        let parsed = ["!=", "=="].iter().find_map(|op| {
            let (lhs, rhs) = expr.split_once(op)?;
            let rhs = rhs.trim();
            let quoted = rhs
                .strip_prefix('\'')
                .and_then(|r| r.strip_suffix('\''))
                .or_else(|| rhs.strip_prefix('"').and_then(|r| r.strip_suffix('"')))?;
            (lhs.trim() == "request.userInfo.username").then_some((*op, quoted))
        });
        let Some((op, want)) = parsed else {
            return Err(format!(
                "the test API server cannot evaluate the matchCondition {expr:?} (only request.userInfo.username == / != '<name>')"
            ));
        };
        let equal = req.user == want;
        if (op == "==") != equal {
            return Ok(false);
        }
    }
    Ok(true)
}

enum Answer {
    Allowed(Vec<String>),
    Denied(Refusal),
}

/// Where a webhook is reached: address, TLS server name, path.
fn target(
    hook: &Value,
    routes: &(dyn Fn(&str, &str, u16) -> Option<SocketAddr> + Sync),
) -> Result<(SocketAddr, String, String), String> {
    let cc = &hook["clientConfig"];
    if let Some(url) = cc["url"].as_str() {
        let uri: hyper::Uri = url.parse().map_err(|e| format!("bad url {url:?}: {e}"))?;
        let host = uri.host().unwrap_or("").to_string();
        let port = uri.port_u16().unwrap_or(443);
        let addr: SocketAddr = format!("{host}:{port}")
            .parse()
            .map_err(|_| format!("Post \"{url}\": the test server only dials IP addresses"))?;
        return Ok((addr, host, uri.path().to_string()));
    }
    let svc = &cc["service"];
    let (ns, name) = (
        svc["namespace"].as_str().unwrap_or(""),
        svc["name"].as_str().unwrap_or(""),
    );
    let port = svc["port"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(443);
    let path = svc["path"].as_str().unwrap_or("/").to_string();
    let host = format!("{name}.{ns}.svc");
    let addr = routes(ns, name, port).ok_or_else(|| {
        format!("failed to call webhook: Post \"https://{host}:{port}{path}\": service \"{name}\" not found")
    })?;
    Ok((addr, host, path))
}

fn tls_config(ca_bundle: &str) -> Result<rustls::ClientConfig, String> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca_bundle.trim())
        .map_err(|e| format!("caBundle is not base64: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("caBundle: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("caBundle certificate: {e}"))?;
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
}

async fn call(
    hook: &Value,
    routes: &(dyn Fn(&str, &str, u16) -> Option<SocketAddr> + Sync),
    req: &Request<'_>,
) -> Result<Answer, String> {
    let (addr, host, path) = target(hook, routes)?;
    let tls = tls_config(hook["clientConfig"]["caBundle"].as_str().unwrap_or(""))?;
    let uid = format!(
        "{}-{}",
        req.object["metadata"]["name"].as_str().unwrap_or(""),
        req.object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("new")
    );
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": req.def.group, "version": req.def.version, "kind": req.def.kind},
            "resource": {"group": req.def.group, "version": req.def.version, "resource": req.def.plural},
            "requestKind": {"group": req.def.group, "version": req.def.version, "kind": req.def.kind},
            "requestResource": {"group": req.def.group, "version": req.def.version, "resource": req.def.plural},
            "subResource": req.sub,
            "name": req.name(),
            "operation": req.operation.as_str(),
            "userInfo": {"username": req.user, "groups": ["system:authenticated"]},
            "object": req.object,
            "oldObject": req.old,
            "dryRun": req.dry_run,
        }
    });
    let timeout = Duration::from_secs(hook["timeoutSeconds"].as_u64().unwrap_or(10));
    let url = format!("https://{host}{path}");
    let exchange = async {
        let tcp = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("Post \"{url}\": dial tcp {addr}: {e}"))?;
        let name = ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
            .connect(name, tcp)
            .await
            .map_err(|e| format!("Post \"{url}\": tls: {e}"))?;
        let (mut s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("Post \"{url}\": {e}"))?;
        tokio::spawn(conn);
        let request = hyper::Request::builder()
            .method("POST")
            .uri(&path)
            .header("host", &host)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| e.to_string())?;
        let resp = s
            .send_request(request)
            .await
            .map_err(|e| format!("Post \"{url}\": {e}"))?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("Post \"{url}\": {e}"))?
            .to_bytes();
        Ok::<_, String>((status, bytes))
    };
    let (status, bytes) = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| format!("Post \"{url}\": context deadline exceeded"))??;
    if !status.is_success() {
        return Err(format!("received invalid webhook response status {status}"));
    }
    let review: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("received invalid webhook response: {e}"))?;
    let response = &review["response"];
    if response["uid"] != json!(uid) {
        return Err(format!(
            "expected response.uid={uid:?}, got {}",
            response["uid"]
        ));
    }
    let warnings = strings(&response["warnings"])
        .into_iter()
        .map(str::to_string)
        .collect();
    if response["allowed"] == true {
        return Ok(Answer::Allowed(warnings));
    }
    let result = &response["status"];
    let name = hook["name"].as_str().unwrap_or("");
    let denied = format!("admission webhook \"{name}\" denied the request");
    let message = match (result["message"].as_str(), result["reason"].as_str()) {
        (Some(m), _) if !m.is_empty() => format!("{denied}: {m}"),
        (_, Some(r)) if !r.is_empty() => format!("{denied}: {r}"),
        _ => format!("{denied} without explanation"),
    };
    let code = result["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    Ok(Answer::Denied(Refusal {
        code,
        reason: result["reason"].as_str().unwrap_or("").to_string(),
        message,
    }))
}

/// The project's admission webhook as the manifests install it, on a test API server: served
/// on 127.0.0.1 with a certificate for its Service's name, its caches read as
/// machine-config-controller's ServiceAccount (filled before it starts), the Service routed to
/// it, and `manifests/09-webhook.yaml`'s ValidatingWebhookConfiguration stored with the
/// certificate as its `caBundle`.
pub struct InstalledWebhook {
    /// The running webhook.
    pub hook: mco_k8s::webhook::Running,
    /// Holds the certificate and key files.
    _certs: tempfile::TempDir,
}

/// Installs the webhook on `server` ([`InstalledWebhook`]), waiting up to `limit` for its caches.
pub async fn install_webhook(
    server: &super::apiserver::ApiServer,
    limit: std::time::Duration,
) -> InstalledWebhook {
    use mco_k8s::webhook::{self, cache::WebhookCache};
    use mco_render::admission::{set_ca_bundle, ReviewOptions};
    const NAMESPACE: &str = "openshift-machine-config-operator";
    const CONTROLLER_USER: &str =
        "system:serviceaccount:openshift-machine-config-operator:machine-config-controller";
    let certs = tempfile::tempdir().expect("tempdir");
    let service = format!("machine-config-controller.{NAMESPACE}.svc");
    let ck = rcgen::generate_simple_self_signed(vec![service]).expect("cert");
    let (cert, key) = (certs.path().join("tls.crt"), certs.path().join("tls.key"));
    std::fs::write(&cert, ck.cert.pem()).expect("cert");
    std::fs::write(&key, ck.key_pair.serialize_pem()).expect("key");
    let client = server.client_for(CONTROLLER_USER, "machine-config-controller");
    let caches = WebhookCache::start(&client, mco_render::RenderOptions::default());
    super::eventually_within("the webhook's caches", limit, || {
        caches.filled().then_some(())
    })
    .await;
    let hook = webhook::start(
        webhook::Config {
            listen: "127.0.0.1:0".parse().expect("addr"),
            cert,
            key,
            review: ReviewOptions::default(),
            poll_interval: std::time::Duration::from_millis(200),
            limits: webhook::WebhookLimits::default(),
        },
        caches,
    )
    .await
    .expect("webhook");
    server
        .store
        .route_service(NAMESPACE, "machine-config-controller", 443, hook.addr);
    let mut configuration = super::yaml_docs(&super::cluster::repo("manifests/09-webhook.yaml"))
        .into_iter()
        .find(|d| d["kind"] == "ValidatingWebhookConfiguration")
        .expect("the webhook configuration");
    let ca = base64::engine::general_purpose::STANDARD.encode(ck.cert.pem());
    assert!(set_ca_bundle(&mut configuration, &ca));
    server
        .store
        .create(
            super::apiserver::resource("validatingwebhookconfigurations").expect("served"),
            "",
            configuration,
        )
        .expect("configuration stored");
    InstalledWebhook {
        hook,
        _certs: certs,
    }
}
