//! The writes the controllers' decisions return, typed: the adapters carry them out as they
//! are and parse nothing.

use crate::api::pool::PoolConfiguration;
use crate::api::{MachineConfig, MachineConfigPoolStatus};

/// One write a controller decided on.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Create this MachineConfig (none exists under its name).
    CreateMachineConfig(MachineConfig),
    /// Replace the stored MachineConfig of the same name with this one.
    UpdateMachineConfig(MachineConfig),
    /// Delete the MachineConfig of this name.
    DeleteMachineConfig(String),
    /// Point the pool at a rendered config (`spec.configuration`).
    SetPoolConfiguration {
        /// The pool.
        pool: String,
        /// Its new configuration.
        configuration: PoolConfiguration,
    },
    /// Write the pool's status.
    PatchPoolStatus {
        /// The pool.
        pool: String,
        /// Its new status.
        status: MachineConfigPoolStatus,
    },
}

impl Write {
    /// The MachineConfig a create or update writes.
    pub fn machine_config(&self) -> Option<&MachineConfig> {
        match self {
            Write::CreateMachineConfig(mc) | Write::UpdateMachineConfig(mc) => Some(mc),
            _ => None,
        }
    }

    /// The name of the object written.
    pub fn target(&self) -> &str {
        match self {
            Write::CreateMachineConfig(mc) | Write::UpdateMachineConfig(mc) => mc.name(),
            Write::DeleteMachineConfig(name) => name,
            Write::SetPoolConfiguration { pool, .. } | Write::PatchPoolStatus { pool, .. } => pool,
        }
    }

    /// The write as upstream's controllers log MachineConfig writes: `create <name>`,
    /// `update <name>`, `delete <name>`; pool writes as `configure <pool>` and
    /// `status <pool>`.
    pub fn describe(&self) -> String {
        let verb = match self {
            Write::CreateMachineConfig(_) => "create",
            Write::UpdateMachineConfig(_) => "update",
            Write::DeleteMachineConfig(_) => "delete",
            Write::SetPoolConfiguration { .. } => "configure",
            Write::PatchPoolStatus { .. } => "status",
        };
        format!("{verb} {}", self.target())
    }
}
