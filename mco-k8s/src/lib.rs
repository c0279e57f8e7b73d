//! Adapters to the Kubernetes API server and HTTP.

pub mod controller;
pub mod crd;
pub mod mcs;
pub mod objects;
pub mod operator;
