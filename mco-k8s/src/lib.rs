//! Adapters to the Kubernetes API server and HTTP.

pub mod controller;
pub mod crd;
pub mod events;
pub mod kubeclient;
pub mod leader;
pub mod limits;
pub mod mcs;
pub mod metrics;
pub mod objects;
pub mod operator;
pub mod plugin;
pub mod reflect;
pub mod tasks;
pub mod webhook;
