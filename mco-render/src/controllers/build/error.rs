//! Upstream's build request errors, with the object they concern and upstream's text.

use std::fmt;

/// Why the MachineOSBuild name cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashError {
    /// The MachineConfig is not a rendered one (its name).
    NotRendered(String),
    /// A required annotation is missing (key, MachineConfig).
    MissingAnnotation(&'static str, String),
    /// A required annotation is empty (key, MachineConfig).
    EmptyAnnotation(&'static str, String),
    /// The pool's name and the MachineOSConfig's pool differ (pool, MachineOSConfig's).
    PoolMismatch(String, String),
    /// An object could not be encoded.
    Encode(String),
}

impl HashError {
    pub(crate) fn encode(e: serde_json::Error) -> Self {
        HashError::Encode(e.to_string())
    }
}

impl fmt::Display for HashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = crate::gocompat::quote::go_quote;
        match self {
            HashError::NotRendered(n) => write!(
                f,
                "could not validate for hash: machineconfig failed validation: machineconfig {} is not a rendered MachineConfig",
                q(n)
            ),
            HashError::MissingAnnotation(k, n) => write!(
                f,
                "could not validate for hash: machineconfig failed validation: missing annotation {} on MachineConfig {}",
                q(k),
                q(n)
            ),
            HashError::EmptyAnnotation(k, n) => write!(
                f,
                "could not validate for hash: machineconfig failed validation: empty annotation {} value on MachineConfig {}",
                q(k),
                q(n)
            ),
            HashError::PoolMismatch(p, m) => write!(
                f,
                "could not validate for hash: name mismatch, MachineConfigPool has {}, MachineOSConfig has {}",
                q(p),
                q(m)
            ),
            HashError::Encode(e) => write!(f, "could not marshal object to YAML: {e}"),
        }
    }
}

/// The step of upstream's build request that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `NewMachineOSBuild`.
    MachineOSBuild,
    /// `NewBuildRequestFromAPI`.
    FromApi,
    /// `ConfigMaps`.
    ConfigMaps,
    /// `Secrets`.
    Secrets,
}

impl Stage {
    /// Upstream's function name.
    pub fn upstream_name(self) -> &'static str {
        match self {
            Stage::MachineOSBuild => "NewMachineOSBuild",
            Stage::FromApi => "NewBuildRequestFromAPI",
            Stage::ConfigMaps => "ConfigMaps",
            Stage::Secrets => "Secrets",
        }
    }
}

/// A build request error; `Display` is upstream's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildError {
    /// The MachineOSBuild name.
    Hash(HashError),
    /// The push spec is not a canonical image reference (the spec).
    NotCanonical(String),
    /// The MachineOSConfig has no push secret name (MachineOSConfig).
    EmptyPushSecret(String),
    /// A Secret is absent (its role: "base image pull" or "final image push", name).
    SecretNotFound(&'static str, String),
    /// The images ConfigMap is absent (resource, name).
    ObjectNotFound(&'static str, String),
    /// The images ConfigMap's `images.json` cannot be read (name, why).
    BadConfigMap(String, String),
    /// Unknown extensions (their names).
    InvalidExtensions(Vec<String>),
    /// `64k-pages` on another architecture than aarch64.
    Kernel64kPages,
    /// The Containerfile does not parse (why).
    Containerfile(String),
    /// A secret cannot be canonicalised (original secret, canonical name, why).
    Canonicalize(String, String, String),
    /// The rendered MachineConfig cannot be encoded (why).
    Encode(String),
}

impl BuildError {
    /// The upstream step this error comes from.
    pub fn stage(&self) -> Stage {
        match self {
            BuildError::Hash(_) | BuildError::NotCanonical(_) => Stage::MachineOSBuild,
            BuildError::EmptyPushSecret(_)
            | BuildError::SecretNotFound(..)
            | BuildError::ObjectNotFound(..)
            | BuildError::BadConfigMap(..) => Stage::FromApi,
            BuildError::InvalidExtensions(_)
            | BuildError::Kernel64kPages
            | BuildError::Containerfile(_)
            | BuildError::Encode(_) => Stage::ConfigMaps,
            BuildError::Canonicalize(..) => Stage::Secrets,
        }
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = crate::gocompat::quote::go_quote;
        const OPTS: &str = "could not get buildrequestopts from API";
        const CF: &str = "could not get rendered containerfile";
        match self {
            BuildError::Hash(e) => {
                write!(f, "could not get hashed name for MachineOSBuild: could not get hashed name: {e}")
            }
            BuildError::NotCanonical(_) => f.write_str("repository name must be canonical"),
            BuildError::EmptyPushSecret(m) => write!(
                f,
                "{OPTS}: could not validate MachineOSConfig: renderedImagePushSecret empty for MachineOSConfig {m}"
            ),
            BuildError::SecretNotFound(role, n) => write!(
                f,
                "{OPTS}: could not get {role} secret {n}: could not fetch secret {n}: secrets {} not found",
                q(n)
            ),
            BuildError::ObjectNotFound(kind, n) => {
                write!(f, "{OPTS}: could not get images.json config: {kind} {} not found", q(n))
            }
            BuildError::BadConfigMap(n, why) => {
                write!(f, "{OPTS}: could not get images.json config: configmap {n}: {why}")
            }
            BuildError::InvalidExtensions(exts) => {
                write!(f, "{CF}: invalid extensions found: [{}]", exts.join(" "))
            }
            BuildError::Kernel64kPages => {
                write!(f, "{CF}: 64k-pages is only supported for aarch64 architecture")
            }
            BuildError::Containerfile(why) => {
                write!(f, "{CF}: Containerfile validation failed: {why}")
            }
            BuildError::Canonicalize(orig, canon, why) => write!(
                f,
                "could not canonicalize secret {orig}: could not canonicalize pull secret {}: {why}",
                q(canon)
            ),
            BuildError::Encode(why) => write!(f, "could not encode the MachineConfig: {why}"),
        }
    }
}

impl std::error::Error for BuildError {}
impl std::error::Error for HashError {}
