//! Every controller's decisions, pure: objects in, intended writes out. Render sync, rollout,
//! pool status, drain and garbage collection (upstream's render and node controllers, the
//! drain controller), the MachineConfigs generated from custom resources (the kubelet-config
//! and container-runtime-config controllers), the template controller, and the operator.
//!
//! Nothing here talks to an API server. The adapters in `mco-k8s` read objects, call these
//! functions and carry out what they return.

pub mod backoff;
pub mod build;
pub mod drain;
pub mod gc;
pub mod generate;
pub mod layered;
pub mod node_pool;
pub mod operator;
pub mod pinned_image_sets;
pub mod pool_metrics;
pub mod pool_status;
pub mod render_sync;
pub mod rollout;
pub mod rollout_policy;
pub mod templates;
pub mod validation_overrides;
pub mod write;

pub use write::Write;
