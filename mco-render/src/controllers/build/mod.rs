//! On-cluster image layering's build request, pure: the MachineOSBuild for a MachineOSConfig
//! and a rendered MachineConfig, and the ConfigMaps, Secrets and Job upstream creates to
//! build it (upstream `pkg/controller/build/buildrequest`).

pub mod error;
pub mod labels;
pub mod machine_os_build;

pub use error::{BuildError, HashError, Stage};
pub use machine_os_build::{build_name, machine_os_build, BuildInputs};
pub mod config_maps;
pub mod containerfile;
pub mod job;
pub mod lifecycle;
pub mod progress;
pub mod request;
pub mod secrets;
pub mod syntax;

pub use request::{build_request, BuildObjects, RequestInputs, RequestOpts};
