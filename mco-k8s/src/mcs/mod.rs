//! The machine-config-server: serves each pool's rendered Ignition config to machines that boot.
//!
//! [`respond`] decides every answer without I/O; [`server`] does the networking;
//! [`served_state`] holds the configs encoded ahead of time (and their gzip forms, made once);
//! [`content_coding`] reads `Accept-Encoding`; [`source`] reads pools from a folder
//! of manifests and [`api_cache`] caches them from the API server.

pub mod access;
pub mod api_cache;
pub mod content_coding;
pub mod metrics;
pub mod respond;
pub mod served_state;
pub mod server;
pub mod source;
pub mod tls;
