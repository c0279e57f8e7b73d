//! The diff between two rendered MachineConfigs.
