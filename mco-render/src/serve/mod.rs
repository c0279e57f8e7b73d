//! What the machine-config-server serves.

pub mod accept;
