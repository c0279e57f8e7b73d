//! The MCO objects: MachineConfig, MachineConfigPool, ControllerConfig, MachineConfigNode,
//! PinnedImageSet and their parts, and this project's RolloutPolicy.

pub mod condition;
pub mod controller_config;
pub mod custom;
pub mod image_policy;
pub mod job;
pub mod machine_config;
pub mod machine_config_node;
pub mod machine_os;
pub mod meta;
pub mod node;
pub mod pinned_image_set;
pub mod pool;
pub mod registries_conf;
pub mod rollout_policy;
pub mod schema;
pub mod selector;
pub mod value_at;

pub use condition::Condition;
pub use controller_config::{
    CaFieldError, ControllerCertificate, ControllerConfig, ControllerConfigSpec,
    ControllerConfigStatus, ImageRegistryBundle,
};
pub use custom::{
    ContainerRuntimeConfig, ContainerRuntimeConfigSpec, CustomResource, CustomResourceStatus,
    KubeletConfig, KubeletConfigSpec,
};
pub use job::JobView;
pub use machine_config::{MachineConfig, MachineConfigSpec};
pub use machine_config_node::{MachineConfigNode, MachineConfigNodeSpec, MachineConfigNodeStatus};
pub use machine_os::{
    MachineOSBuild, MachineOSBuildSpec, MachineOSBuildStatus, MachineOSConfig, MachineOSConfigSpec,
    MachineOSConfigStatus,
};
pub use meta::{ObjectMeta, OwnerReference};
pub use node::Node;
pub use pinned_image_set::{
    PinnedImageRef, PinnedImageSet, PinnedImageSetRef, PinnedImageSetSpec, PinnedImageSetStatus,
};
pub use pool::{CertExpiry, MachineConfigPool, MachineConfigPoolStatus, PoolSpec};
pub use rollout_policy::{RolloutPolicy, RolloutPolicySpec, RolloutPolicyStatus};
pub use selector::LabelSelector;
