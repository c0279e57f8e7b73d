//! The node's on-disk truth: the current config and the agent's state.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::desired_config::{DesiredConfig, LoadError};
use crate::root::{sync_dirs, Entry, HostRoot, RootError};

/// Where the applied rendered MachineConfig is kept.
pub const CURRENT_CONFIG: &str = "/etc/machine-config-daemon/currentconfig";
/// Where this agent keeps its state when there is no cluster to report to.
pub const STATE_FILE: &str = "/etc/machine-config-daemon/state.json";
/// Upstream caps the reason annotation at this many characters.
pub const MAX_REASON: usize = 2000;

/// The agent's state (upstream's `state` node annotation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeState {
    /// The current config is applied.
    Done,
    /// An update is running.
    Working,
    /// An update failed or the host drifted.
    Degraded,
    /// The update cannot be applied in place.
    Unreconcilable,
}

/// State with its reason and the configs involved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    /// State.
    pub state: NodeState,
    /// Why (empty when Done or Working).
    pub reason: String,
    /// Config on disk.
    pub current_config: String,
    /// Config asked for.
    pub desired_config: String,
}

impl AgentStatus {
    /// A status with the reason cut to [`MAX_REASON`] characters.
    pub fn new(state: NodeState, reason: &str, current: &str, desired: &str) -> AgentStatus {
        AgentStatus {
            state,
            reason: reason.chars().take(MAX_REASON).collect(),
            current_config: current.into(),
            desired_config: desired.into(),
        }
    }
}

/// Reads the current config from the root; an empty config when there is none yet.
pub fn read_current(root: &HostRoot) -> Result<DesiredConfig, LoadError> {
    match root.entry(CURRENT_CONFIG)? {
        Entry::Absent => Ok(DesiredConfig::empty()),
        Entry::File { data, .. } => DesiredConfig::from_bytes(&data, CURRENT_CONFIG),
        _ => Err(LoadError::Invalid {
            source_name: CURRENT_CONFIG.into(),
            message: "not a regular file".into(),
        }),
    }
}

/// Writes the agent's state file (outside any transaction: it is status, not config).
pub fn write_status(root: &HostRoot, status: &AgentStatus) -> Result<(), RootError> {
    let mut bytes = serde_json::to_vec_pretty(status).unwrap_or_default();
    bytes.push(b'\n');
    let mut dirty = BTreeSet::new();
    root.write_atomic(STATE_FILE, &bytes, 0o644, None, 0o755, false, &mut dirty)?;
    sync_dirs(&dirty).map_err(|e| RootError::Io {
        path: STATE_FILE.into(),
        source: e,
    })
}

/// Reads the agent's state file, if any.
pub fn read_status(root: &HostRoot) -> Option<AgentStatus> {
    match root.entry(STATE_FILE) {
        Ok(Entry::File { data, .. }) => serde_json::from_slice(&data).ok(),
        _ => None,
    }
}
