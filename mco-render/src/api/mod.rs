//! The MCO objects: MachineConfig, MachineConfigPool, ControllerConfig and their parts.

pub mod controller_config;
pub mod machine_config;
pub mod meta;
pub mod node;
pub mod pool;
pub mod selector;
pub mod value_at;

pub use controller_config::{ControllerConfig, ControllerConfigSpec};
pub use machine_config::{MachineConfig, MachineConfigSpec};
pub use meta::{ObjectMeta, OwnerReference};
pub use node::Node;
pub use pool::MachineConfigPool;
pub use selector::LabelSelector;
