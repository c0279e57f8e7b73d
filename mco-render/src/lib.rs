//! Render MachineConfigPools exactly as the Machine Config Operator does.
//!
//! Pure: no I/O, clocks, randomness or global state. The same inputs give the same bytes.

pub mod api;
pub mod diff;
pub mod name;
pub mod plan;
pub mod reconcile;
pub mod serve;
