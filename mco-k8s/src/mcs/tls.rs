//! TLS for the secure port: TLS 1.2 and 1.3, HTTP/1.1 only (as upstream), and a certificate that
//! is swapped in when its files change.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{self, ServerConfig};

/// The certificate or key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Reading or decoding a PEM file failed.
    #[error("{path}: {message}")]
    Pem {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// rustls refused the configuration or key.
    #[error("tls: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Loads a certificate chain and its private key from PEM files.
pub fn load_certified_key(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let pem = |p: &Path, e: &dyn std::fmt::Display| TlsError::Pem {
        path: p.display().to_string(),
        message: e.to_string(),
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| pem(cert, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| pem(cert, &e))?;
    if chain.is_empty() {
        return Err(pem(cert, &"no certificate found"));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| pem(key, &e))?;
    let signing = ring::sign::any_supported_type(&key_der)?;
    Ok(CertifiedKey::new(chain, signing))
}

/// Serves whichever certificate was loaded last.
#[derive(Debug)]
pub struct ReloadingCert {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<(Arc<CertifiedKey>, Stamp)>,
}

type Stamp = (Option<SystemTime>, Option<SystemTime>);

fn stamp(cert: &Path, key: &Path) -> Stamp {
    let m = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    (m(cert), m(key))
}

impl ReloadingCert {
    /// Loads the files once; fails if they cannot be used.
    pub fn new(cert: PathBuf, key: PathBuf) -> Result<Self, TlsError> {
        let s = stamp(&cert, &key);
        let ck = load_certified_key(&cert, &key)?;
        Ok(ReloadingCert {
            cert,
            key,
            current: RwLock::new((Arc::new(ck), s)),
        })
    }

    /// Reloads when either file changed; a pair that does not load leaves the current one.
    /// Returns whether a new certificate is now served.
    pub fn reload_if_changed(&self) -> Result<bool, TlsError> {
        let s = stamp(&self.cert, &self.key);
        let unchanged = self.current.read().map(|c| c.1 == s).unwrap_or(false);
        if unchanged {
            return Ok(false);
        }
        let ck = load_certified_key(&self.cert, &self.key)?;
        if let Ok(mut cur) = self.current.write() {
            *cur = (Arc::new(ck), s);
        }
        Ok(true)
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|c| c.0.clone())
    }
}

/// The secure port's TLS settings.
pub fn server_config(resolver: Arc<ReloadingCert>) -> Result<ServerConfig, TlsError> {
    let mut cfg = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS12, &rustls::version::TLS13])?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}
