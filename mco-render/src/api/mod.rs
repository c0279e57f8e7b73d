//! The MCO objects: MachineConfig, MachineConfigPool, ControllerConfig and their parts.

pub mod selector;
