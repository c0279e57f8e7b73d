//! The operator's decisions, pure: manifests and observed cluster objects in, the objects to
//! apply and the ClusterOperator status out.
//!
//! The operator keeps the controller, server and agent deployed from the manifests folder at
//! one image and version ([`desired`]), builds the `machine-config-controller`
//! ControllerConfig from the manifest's and the cluster's config objects and the release's
//! OS images ([`controller_config`]), writes only the fields it owns on objects that exist
//! ([`ownership`]: never a pool's spec, never an empty placeholder over a ControllerConfig
//! value), keeps one MachineConfigNode per Node ([`machine_config_nodes`]), and reports how
//! far the rollout got in the `machine-config` ClusterOperator ([`status`]). Reading and writing the API server is the adapter's job.

pub mod certificates;
pub mod controller_config;
pub mod desired;
pub mod layering;
pub mod machine_config_nodes;
pub mod machine_configuration;
pub mod ownership;
pub mod pointer_config;
pub mod status;

pub use controller_config::{
    build_controller_config, os_images_from_configmap, ClusterConfigObjects, OsImages,
    OsImagesError, OS_IMAGE_URL_CONFIGMAP,
};
pub use desired::{desired_objects, parse_manifests, DesiredOptions, ManifestsError};
pub use ownership::{update_for, MergePatch, Ownership};
pub use status::{
    compute_status, ClusterOperatorStatus, OperandVersion, RelatedObject, StatusInput, SyncFailure,
};

/// The namespace the MCO's workloads run in.
pub const NAMESPACE: &str = "openshift-machine-config-operator";

/// The name of the ClusterOperator the operator reports in.
pub const CLUSTER_OPERATOR_NAME: &str = "machine-config";

/// The annotation (on workloads, their pod templates and the ControllerConfig) naming the
/// version the operator deployed them at.
pub const VERSION_ANNOTATION: &str = "machineconfiguration.openshift.io/generated-by-version";

/// The image name the manifests carry, replaced by the operator's `--image`.
pub const IMAGE_PLACEHOLDER: &str = "mco-rs:latest";

/// The name of the operator's own Deployment, which it never applies (whoever installed the
/// operator owns it).
pub const OPERATOR_DEPLOYMENT: &str = "machine-config-operator";

/// The name of the ControllerConfig the operator builds and the controller renders with.
pub const CONTROLLER_CONFIG_NAME: &str = "machine-config-controller";
