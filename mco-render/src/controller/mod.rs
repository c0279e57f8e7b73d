//! The cluster controllers' decisions, pure: objects in, intended writes out.
//!
//! Nothing here talks to an API server. The adapters in `mco-k8s` read objects, call these
//! functions and carry out what they return.

pub mod drain;
pub mod gc;
pub mod node;
pub mod node_pool;
pub mod render_sync;
pub mod rollout;
pub mod status;

pub use node::Node;
