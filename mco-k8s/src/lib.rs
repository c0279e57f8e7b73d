//! Adapters to the Kubernetes API server and HTTP.

pub mod mcs;
