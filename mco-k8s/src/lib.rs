//! Adapters to the Kubernetes API server and HTTP.

pub mod crd;
pub mod mcs;
