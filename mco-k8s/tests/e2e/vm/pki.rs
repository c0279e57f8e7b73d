//! The machine-config-server's TLS in the VM tier, as a cluster has it: a CA made by the test,
//! the server's certificate for the address the machine reaches it at, and the pointer config
//! of the operator's `worker-user-data-managed` Secret (made by
//! `mco_render::controllers::operator::pointer_config`), which trusts that CA and no other.

use super::GUEST_HOST;
use mco_ignition::SpecVersion;
use mco_render::controllers::operator::pointer_config::{
    ca_bundle, ignition_host, pointer_config, user_data_secret, USER_DATA_KEY,
};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The spec version of the VM's pointer config. Upstream writes the newest its Ignition library
/// knows (3.5.0 from 4.19); the machine's Ignition (Debian's 2.14) reads up to 3.3.0.
pub const POINTER_VERSION: SpecVersion = SpecVersion::V3_3;

/// A CA made for one test.
pub struct Pki {
    ca: rcgen::Certificate,
    key: KeyPair,
}

impl Pki {
    pub fn new(name: &str) -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let ca = params.self_signed(&key).unwrap();
        Pki { ca, key }
    }

    /// The CA's certificate (PEM).
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// A serving certificate for `sans` (IP addresses or names) signed by the CA, written to
    /// `dir` as `tls.crt` and `tls.key`.
    pub fn serving(&self, dir: &Path, sans: &[&str]) -> (PathBuf, PathBuf) {
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "system:machine-config-server");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca, &self.key).unwrap();
        let (crt, k) = (dir.join("tls.crt"), dir.join("tls.key"));
        std::fs::write(&crt, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        (crt, k)
    }
}

/// The Infrastructure of the VM's cluster: its internal API at the address the machine reaches
/// the host's servers at (as on bare metal, an address, not a name to resolve).
pub fn infrastructure() -> Value {
    json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
           "metadata": {"name": "cluster"},
           "status": {"apiServerInternalURI": format!("https://{GUEST_HOST}:6443"),
                      "platformStatus": {"type": "None"}}})
}

/// The worker pool's user-data Secret as the operator makes it: the pointer to this cluster's
/// server, trusting the bundle of the `machine-config-server-ca` ConfigMap holding `ca_pem`.
pub fn worker_user_data(ca_pem: &str, pool_uid: &str) -> Value {
    let host = ignition_host(&infrastructure()).unwrap();
    let configmap = json!({"data": {"ca-bundle.crt": ca_pem}});
    let bundle = ca_bundle(Some(&configmap), None).unwrap();
    let pointer = pointer_config(&host, "worker", &bundle, POINTER_VERSION);
    user_data_secret("worker", pool_uid, &pointer)
}

/// The bytes a machine boots with: the Secret's `userData`, decoded.
pub fn user_data_bytes(secret: &Value) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(secret["data"][USER_DATA_KEY].as_str().unwrap())
        .unwrap()
}

/// The DER certificates of a PEM bundle.
pub fn pem_ders(pem: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines() {
        match (line.trim(), body.as_mut()) {
            ("-----BEGIN CERTIFICATE-----", None) => body = Some(String::new()),
            ("-----END CERTIFICATE-----", Some(b)) => {
                out.push(
                    base64::engine::general_purpose::STANDARD
                        .decode(&b)
                        .unwrap(),
                );
                body = None;
            }
            (l, Some(b)) => b.push_str(l),
            _ => {}
        }
    }
    out
}

/// The PEM form of DER certificates.
pub fn ders_pem(ders: &[Vec<u8>]) -> String {
    use base64::Engine as _;
    let mut out = String::new();
    for d in ders {
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        let b64 = base64::engine::general_purpose::STANDARD.encode(d);
        for chunk in b64.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(chunk).unwrap());
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::apiserver::ApiServer;
    use crate::support::cluster::seed_examples;
    use mco_render::controllers::operator::pointer_config::pointer_cas;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::{self, pki_types::ServerName};

    /// `GET /healthz` over TLS to `addr`, trusting `cas` and naming the server `name`: the
    /// response's status line, or why the handshake failed.
    async fn healthz(
        addr: std::net::SocketAddr,
        cas: &[Vec<u8>],
        name: &str,
    ) -> Result<String, String> {
        let mut roots = rustls::RootCertStore::empty();
        for der in cas {
            roots
                .add(rustls::pki_types::CertificateDer::from(der.clone()))
                .unwrap();
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let server_name = ServerName::try_from(name.to_string()).unwrap();
        let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(server_name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        let _ = tls.read_to_end(&mut out).await;
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .next()
            .unwrap_or("")
            .to_string())
    }

    /// What the VM tier's machine checks at boot, without a machine: the pointer config of the
    /// user-data Secret trusts the CA that signed the server's certificate, for the host the
    /// pointer names; another CA, or another name for the same server, fails the handshake.
    #[tokio::test]
    async fn the_pointers_ca_verifies_the_served_certificate_and_nothing_else() {
        let pki = Pki::new("machine-config-server-ca");
        let dir = tempfile::tempdir().unwrap();
        let (crt, key) = pki.serving(dir.path(), &[GUEST_HOST]);
        let server = ApiServer::start().await.unwrap();
        seed_examples(&server);
        let mcs =
            super::super::start_mcs(&server.client_as("machine-config-server"), (crt, key)).await;
        let addr = mcs.secure_addr.unwrap();

        let secret = worker_user_data(&pki.ca_pem(), "uid");
        let pointer: Value = serde_json::from_slice(&user_data_bytes(&secret)).unwrap();
        let source = pointer["ignition"]["config"]["merge"][0]["source"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(source, format!("https://{GUEST_HOST}:22623/config/worker"));
        assert_eq!(pointer["ignition"]["version"], "3.3.0");
        let cas: Vec<Vec<u8>> = pointer_cas(&pointer)
            .iter()
            .flat_map(|pem| pem_ders(pem))
            .collect();
        assert_eq!(cas.len(), 1);

        let ok = healthz(addr, &cas, GUEST_HOST).await;
        assert_eq!(ok.as_deref(), Ok("HTTP/1.1 200 OK"), "{ok:?}");
        let other = Pki::new("another-ca");
        let refused = healthz(addr, &pem_ders(other.ca_pem().as_bytes()), GUEST_HOST).await;
        assert!(
            matches!(&refused, Err(e) if e.contains("UnknownIssuer")),
            "a pointer trusting another CA: {refused:?}"
        );
        let misnamed = healthz(addr, &cas, "10.0.2.2").await;
        assert!(
            matches!(&misnamed, Err(e) if e.contains("not valid for name")),
            "the server under a name its certificate does not hold: {misnamed:?}"
        );
        mcs.stop().await;
    }
}
