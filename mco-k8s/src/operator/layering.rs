//! The operator's layering Secrets: reads the pools, the MachineOSConfigs, the Nodes of layered
//! pools, the cluster's pull secret and RHEL entitlement and their copies in the MCO namespace, asks
//! `mco_render::controllers::operator::layering` what to write, and writes it.

use super::machine_config_nodes::{list_nodes, list_pools};
use super::OperatorError;
use crate::controller::build::ignore_absent;
use crate::controller::pool_sync::absent_is_empty;
use crate::objects::{self, Model};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mco_render::api::{MachineOSConfig, Node};
use mco_render::controllers::build::request::{GLOBAL_PULL_SECRET_COPY, NAMESPACE};
use mco_render::controllers::operator::layering::{
    layered_pools, layering_secrets, LayeringError, LayeringInputs, SecretIntent,
    ENTITLEMENT_NAMESPACE, ENTITLEMENT_SECRET, PULL_SECRET, PULL_SECRET_NAMESPACE,
};
use serde_json::Value;

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

async fn secret(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>, OperatorError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    match api.get_opt(name).await? {
        Some(s) => Ok(Some(
            serde_json::to_value(s).map_err(OperatorError::Encode)?,
        )),
        None => Ok(None),
    }
}

/// Keeps the pull secret copy and the per-pool entitlement copies the layered pools' builds
/// read; returns how many Secrets it wrote. Without the MachineOSConfig API (its CRD not
/// installed) no pool is layered.
pub async fn sync(client: &Client) -> Result<usize, LayeringSyncError> {
    let pools = list_pools(client).await?;
    let moscs: Vec<MachineOSConfig> = absent_is_empty(
        objects::api::<MachineOSConfig>(client)
            .list(&ListParams::default())
            .await,
    )?
    .into_iter()
    .map(MachineOSConfig::from_object)
    .collect();
    // The nodes only matter (must run CoreOS) while a pool is layered.
    let nodes: Vec<Node> = if layered_pools(&pools, &moscs).is_empty() {
        Vec::new()
    } else {
        list_nodes(client).await?
    };
    let pull = secret(client, PULL_SECRET_NAMESPACE, PULL_SECRET).await?;
    let entitlement = secret(client, ENTITLEMENT_NAMESPACE, ENTITLEMENT_SECRET).await?;
    let mut namespace_secrets = Vec::new();
    let names = std::iter::once(GLOBAL_PULL_SECRET_COPY.to_string()).chain(
        pools
            .iter()
            .map(|p| format!("{ENTITLEMENT_SECRET}-{}", p.name())),
    );
    for name in names {
        namespace_secrets.extend(secret(client, NAMESPACE, &name).await?);
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
                api.create(&PostParams::default(), &s).await?;
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
