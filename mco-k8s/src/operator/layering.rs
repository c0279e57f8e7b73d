//! The operator's layering Secrets: reads the pools, the MachineOSConfigs, the Nodes of layered
//! pools, the cluster's pull secret and RHEL entitlement and their copies in the MCO namespace
//! (from the watch caches in the running operator), asks
//! `mco_render::controllers::operator::layering` what to write, and writes it.

use super::machine_config_nodes::{nodes, pools};
use super::reads::Reader;
use super::OperatorError;
use crate::controller::build::{ignore_absent, ignore_exists};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mco_render::api::{MachineOSConfig, Node};
use mco_render::controllers::build::request::{GLOBAL_PULL_SECRET_COPY, NAMESPACE};
use mco_render::controllers::operator::layering::{
    layered_pools, layering_secrets, LayeringError, LayeringInputs, SecretIntent,
    ENTITLEMENT_NAMESPACE, ENTITLEMENT_SECRET, PULL_SECRET, PULL_SECRET_NAMESPACE,
};

pub use mco_render::controllers::operator::layering::TASK;

/// Why the sync failed, as the ClusterOperator's failure message.
#[derive(Debug, thiserror::Error)]
pub enum LayeringSyncError {
    /// The API server refused or failed a request.
    #[error(transparent)]
    Operator(#[from] OperatorError),
    /// The Secrets cannot be kept.
    #[error(transparent)]
    Layering(#[from] LayeringError),
}

impl From<kube::Error> for LayeringSyncError {
    fn from(e: kube::Error) -> Self {
        LayeringSyncError::Operator(OperatorError::Kube(e))
    }
}

/// Keeps the pull secret copy and the per-pool entitlement copies the layered pools' builds
/// read; returns how many Secrets it wrote. Without the MachineOSConfig API (its CRD not
/// installed) no pool is layered.
pub async fn sync(client: &Client, reader: &Reader<'_>) -> Result<usize, LayeringSyncError> {
    let pools = pools(reader).await?;
    let moscs: Vec<MachineOSConfig> = reader.list_as("MachineOSConfig", None).await?;
    // The nodes only matter (must run CoreOS) while a pool is layered.
    let nodes: Vec<Node> = if layered_pools(&pools, &moscs).is_empty() {
        Vec::new()
    } else {
        nodes(reader).await?
    };
    let pull = reader
        .get("Secret", Some(PULL_SECRET_NAMESPACE), PULL_SECRET)
        .await?;
    let entitlement = reader
        .get("Secret", Some(ENTITLEMENT_NAMESPACE), ENTITLEMENT_SECRET)
        .await?;
    let mut namespace_secrets = Vec::new();
    let names = std::iter::once(GLOBAL_PULL_SECRET_COPY.to_string()).chain(
        pools
            .iter()
            .map(|p| format!("{ENTITLEMENT_SECRET}-{}", p.name())),
    );
    for name in names {
        namespace_secrets.extend(reader.get("Secret", Some(NAMESPACE), &name).await?);
    }
    let intents = layering_secrets(&LayeringInputs {
        pools: &pools,
        moscs: &moscs,
        nodes: &nodes,
        pull_secret: pull.as_ref(),
        entitlement: entitlement.as_ref(),
        namespace_secrets: &namespace_secrets,
    })?;
    let api: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let mut wrote = 0;
    for intent in intents {
        let name = intent.name().to_string();
        match intent {
            SecretIntent::Create(s) => {
                let s: Secret = serde_json::from_value(s).map_err(OperatorError::Encode)?;
                tracing::info!("creating {name}");
                // Created meanwhile (or the caches have not seen it yet): the next pass looks.
                if ignore_exists(api.create(&PostParams::default(), &s).await)?.is_none() {
                    continue;
                }
            }
            SecretIntent::PatchData { patch, .. } => {
                tracing::info!("updating {name}");
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
            SecretIntent::Delete(_) => {
                tracing::info!("deleting {name}");
                ignore_absent(
                    api.delete(&name, &DeleteParams::default())
                        .await
                        .map(|_| ()),
                )?;
            }
        }
        wrote += 1;
    }
    Ok(wrote)
}
