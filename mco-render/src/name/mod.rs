//! Rendered MachineConfig names.
