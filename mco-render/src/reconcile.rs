//! Reconcilability of an update between two rendered MachineConfigs.
