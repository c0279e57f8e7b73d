//! The node agent: applies a rendered MachineConfig to a host root.
