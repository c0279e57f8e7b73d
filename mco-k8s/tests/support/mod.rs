//! Test support: an in-process Kubernetes API server.

#![allow(dead_code)]

pub mod apiserver;
pub mod patch;
pub mod rbac;
