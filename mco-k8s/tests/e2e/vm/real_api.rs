//! The VM tier against a real kube-apiserver (`MCO_VM_KUBECONFIG`: an administrator's
//! kubeconfig of it). The test installs the project's manifests as an administrator would
//! (`kubectl apply`, the CRDs first, then the rest), seeds the example cluster's configs, and
//! runs the controller and the machine-config-server against it; the machine's agent talks to
//! it through the restricted network with a ServiceAccount token bound to its Node, verifying
//! its certificate with the cluster's CA.

use super::pki::{ders_pem, pem_ders};
use super::{repo, API_PORT, GUEST_HOST};
use mco_render::controllers::operator::NAMESPACE;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The kubeconfig naming the real API server, when the tier is to run against one.
pub fn kubeconfig() -> Option<PathBuf> {
    std::env::var_os("MCO_VM_KUBECONFIG").map(PathBuf::from)
}

pub struct RealApi {
    pub client: kube::Client,
    kubeconfig: PathBuf,
    /// The server's host as the administrator's kubeconfig names it: the name the machine
    /// verifies the certificate for (`tls-server-name`), since it reaches it at another address.
    host: String,
    pub port: u16,
    ca_pem: String,
}

/// The collection path of `plural` (cluster-scoped).
fn collection(plural: &str) -> String {
    match plural {
        "nodes" => "/api/v1/nodes".to_string(),
        p => format!("/apis/machineconfiguration.openshift.io/v1/{p}"),
    }
}

impl RealApi {
    pub async fn connect(path: &Path) -> RealApi {
        let kc = kube::config::Kubeconfig::read_from(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let host = config.cluster_url.host().unwrap_or("").to_string();
        let port = config.cluster_url.port_u16().unwrap_or(443);
        let ca_pem = ders_pem(config.root_cert.as_deref().unwrap_or(&[]));
        assert!(
            !ca_pem.is_empty() && config.cluster_url.scheme_str() == Some("https"),
            "{}: the tier needs an https server and its CA",
            path.display()
        );
        let client = kube::Client::try_from(config).unwrap();
        RealApi {
            client,
            kubeconfig: path.to_path_buf(),
            host,
            port,
            ca_pem,
        }
    }

    fn kubectl(&self, args: &[&str]) -> String {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("kubectl: {e}"));
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The manifests installed (the CRDs first, Established, then every file), the example
    /// cluster's configs and extra pools applied over them, and what an earlier run of the test
    /// left removed.
    pub async fn install(&self, test_configs: &[&str], node: &str) {
        let manifests = repo("manifests");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&manifests)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        for f in files.iter().filter(|f| {
            f.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("00-"))
        }) {
            self.kubectl(&["apply", "-f", &f.to_string_lossy()]);
        }
        self.kubectl(&[
            "wait",
            "--for",
            "condition=established",
            "--timeout=60s",
            "crd",
            "--all",
        ]);
        for f in &files {
            self.kubectl(&["apply", "-f", &f.to_string_lossy()]);
        }
        // The example cluster: its configs, its ControllerConfig, its pools but the two the
        // manifests hold, without their fixed uids.
        let mut docs = Vec::new();
        let mut examples: Vec<PathBuf> = std::fs::read_dir(crate::support::cluster::examples())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        examples.sort();
        for f in examples {
            for mut obj in crate::support::yaml_docs(&f) {
                let kind = obj["kind"].as_str().unwrap_or("").to_string();
                let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
                let keep = match kind.as_str() {
                    "MachineConfigPool" => name != "master" && name != "worker",
                    "MachineConfig" | "ControllerConfig" => true,
                    _ => false,
                };
                if keep {
                    if let Some(m) = obj["metadata"].as_object_mut() {
                        m.remove("uid");
                    }
                    docs.push(obj);
                }
            }
        }
        let list = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(
            list.path(),
            json!({"apiVersion": "v1", "kind": "List", "items": docs}).to_string(),
        )
        .unwrap();
        self.kubectl(&["apply", "-f", &list.path().to_string_lossy()]);
        for name in test_configs {
            self.kubectl(&["delete", "machineconfig", name, "--ignore-not-found"]);
        }
        self.kubectl(&["delete", "node", node, "--ignore-not-found"]);
        self.kubectl(&["delete", "machineconfignode", node, "--ignore-not-found"]);
    }

    async fn send(&self, req: http::Request<Vec<u8>>) -> Result<Value, kube::Error> {
        self.client.request::<Value>(req).await
    }

    pub async fn get(&self, plural: &str, name: &str) -> Option<Value> {
        let req = http::Request::get(format!("{}/{name}", collection(plural)))
            .body(Vec::new())
            .unwrap();
        match self.send(req).await {
            Ok(v) => Some(v),
            Err(kube::Error::Api(s)) if s.code == 404 => None,
            Err(e) => panic!("GET {plural}/{name}: {e}"),
        }
    }

    pub async fn create(&self, plural: &str, obj: &Value) -> Value {
        let req = http::Request::post(collection(plural))
            .header("content-type", "application/json")
            .body(obj.to_string().into_bytes())
            .unwrap();
        self.send(req)
            .await
            .unwrap_or_else(|e| panic!("POST {plural}: {e}"))
    }

    /// Replaces the object `name` by `f` of it (retried on a conflict).
    pub async fn edit(&self, plural: &str, name: &str, f: impl Fn(&mut Value)) {
        for _ in 0..10 {
            let mut v = self.get(plural, name).await.unwrap();
            f(&mut v);
            let req = http::Request::put(format!("{}/{name}", collection(plural)))
                .header("content-type", "application/json")
                .body(v.to_string().into_bytes())
                .unwrap();
            match self.send(req).await {
                Ok(_) => return,
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => panic!("PUT {plural}/{name}: {e}"),
            }
        }
        panic!("PUT {plural}/{name}: conflicts");
    }

    /// The Node as the kubelet registers it: created, then Ready in its status; without its
    /// role label, so that no pool selects it until [`RealApi::label`] adds it.
    pub async fn register_node(&self, node: &Value, role: &str) -> Value {
        let mut node = node.clone();
        if let Some(labels) = node["metadata"]["labels"].as_object_mut() {
            labels.remove(role);
        }
        let created = self.create("nodes", &node).await;
        let name = created["metadata"]["name"].as_str().unwrap().to_string();
        let req = http::Request::patch(format!("/api/v1/nodes/{name}/status"))
            .header("content-type", "application/merge-patch+json")
            .body(
                json!({"status": {"conditions": [{"type": "Ready", "status": "True",
                    "reason": "KubeletReady", "message": "the VM tier's machine"}]}})
                .to_string()
                .into_bytes(),
            )
            .unwrap();
        self.send(req)
            .await
            .unwrap_or_else(|e| panic!("PATCH nodes/{name}/status: {e}"));
        created
    }

    /// Labels the Node `name` with `label` (empty value).
    pub async fn label(&self, name: &str, label: &str) {
        let req = http::Request::patch(format!("/api/v1/nodes/{name}"))
            .header("content-type", "application/merge-patch+json")
            .body(
                json!({"metadata": {"labels": {label: ""}}})
                    .to_string()
                    .into_bytes(),
            )
            .unwrap();
        self.send(req)
            .await
            .unwrap_or_else(|e| panic!("PATCH nodes/{name}: {e}"));
    }

    /// A token of the agent's ServiceAccount bound to `node` (as its Pod's projected token is
    /// bound to the Pod's node), for 8 hours.
    pub async fn agent_token(&self, node: &Value) -> String {
        let req = http::Request::post(format!(
            "/api/v1/namespaces/{NAMESPACE}/serviceaccounts/machine-config-daemon/token"
        ))
        .header("content-type", "application/json")
        .body(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": 28800,
                            "boundObjectRef": {"apiVersion": "v1", "kind": "Node",
                                               "name": node["metadata"]["name"],
                                               "uid": node["metadata"]["uid"]}}})
            .to_string()
            .into_bytes(),
        )
        .unwrap();
        let r = self
            .send(req)
            .await
            .unwrap_or_else(|e| panic!("TokenRequest: {e}"));
        r["status"]["token"].as_str().unwrap().to_string()
    }

    /// The machine's kubeconfig: the server at its forwarded address, verified as the host the
    /// administrator's kubeconfig names, with the cluster's CA and the agent's token.
    pub fn guest_kubeconfig(&self, token: &str) -> String {
        use base64::Engine as _;
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        // One check that the CA read is a certificate.
        assert!(!pem_ders(self.ca_pem.as_bytes()).is_empty());
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: vm\n  cluster:\n    server: https://{GUEST_HOST}:{API_PORT}\n\
             \x20   certificate-authority-data: {ca}\n    tls-server-name: {}\n\
             users:\n- name: vm\n  user:\n    token: {token}\ncontexts:\n- name: vm\n  context:\n    cluster: vm\n    user: vm\n\
             current-context: vm\n",
            self.host
        )
    }
}
