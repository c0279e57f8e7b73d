//! The machine-config-server: serves each pool's rendered Ignition config to machines that boot.
//!
//! [`respond`] decides every answer without I/O; [`server`] does the networking; [`state`] holds
//! the configs encoded ahead of time; [`source`] reads pools from a folder of manifests and
//! [`cluster`] caches them from the API server.

pub mod access;
pub mod cluster;
pub mod metrics;
pub mod respond;
pub mod server;
pub mod source;
pub mod state;
pub mod tls;
