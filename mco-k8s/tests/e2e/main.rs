//! The adapters' integration tests, one test binary.
//!
//! Each module was once a test binary of its own. Every one of them links kube, k8s-openapi,
//! tokio and hyper, and twenty-odd copies of those took gigabytes of disk and most of the link
//! time of `cargo test`. Tests still run two at a time (the harness's default on two cores), as
//! they did within each binary; pick some out by module: `cargo test -p mco-k8s --test e2e
//! faults_e2e::`.

#[path = "../support/mod.rs"]
mod support;

mod admission_policy;
mod agent_idle;
mod alerts;
mod apiserver;
mod apply_in_any_order;
mod certificates_e2e;
mod cluster_config_e2e;
mod controller_binary;
mod controller_certificates_e2e;
mod controller_e2e;
mod crds;
mod custom_resources_e2e;
mod delete_guard_e2e;
mod drain_e2e;
mod events;
mod faults_e2e;
mod idle_traffic;
mod kubectl_mco;
mod layering_e2e;
mod layering_system_e2e;
mod leader_election;
mod least_privilege;
mod machine_config_server;
mod manifest_commands;
mod operator_e2e;
mod pinned_images_e2e;
mod relist_e2e;
mod rollout_policy_e2e;
mod server_abuse;
mod system_e2e;
mod validation_overrides_e2e;
mod versions;
mod vm;
mod watch_caches;
mod webhook;
