//! The operator's MachineConfigNode sync: lists the Nodes, pools and MachineConfigNodes,
//! asks `mco_render::controllers::operator::machine_config_nodes` what to write, and writes
//! it (create, merge patch of the owner references and spec, delete).

use super::OperatorError;
use crate::objects::{self, Model};
use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mco_render::api::{MachineConfigNode, MachineConfigPool, Node};
use mco_render::controllers::operator::machine_config_nodes::sync_machine_config_nodes;
use serde_json::json;

/// The sync task name failures are reported under (upstream's).
pub const TASK: &str = "MachineConfigNode";

/// Why the sync failed, as the ClusterOperator's failure message.
#[derive(Debug, thiserror::Error)]
pub enum McnSyncError {
    /// The API server refused or failed a request.
    #[error(transparent)]
    Operator(#[from] OperatorError),
    /// A node's pool cannot be decided.
    #[error(transparent)]
    Pool(#[from] mco_render::controllers::node_pool::NodePoolError),
}

impl From<kube::Error> for McnSyncError {
    fn from(e: kube::Error) -> Self {
        McnSyncError::Operator(OperatorError::Kube(e))
    }
}

/// Every Node, listed now.
pub(super) async fn list_nodes(client: &Client) -> Result<Vec<Node>, OperatorError> {
    Api::<KubeNode>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .into_iter()
        .map(|n| {
            serde_json::to_value(n)
                .and_then(serde_json::from_value::<Node>)
                .map_err(OperatorError::Encode)
        })
        .collect()
}

/// Every pool, listed now.
pub(super) async fn list_pools(client: &Client) -> Result<Vec<MachineConfigPool>, kube::Error> {
    Ok(objects::api::<MachineConfigPool>(client)
        .list(&ListParams::default())
        .await?
        .into_iter()
        .map(MachineConfigPool::from_object)
        .collect())
}

/// Gives every Node its MachineConfigNode and deletes those of Nodes that are gone; returns
/// how many objects it wrote.
pub async fn sync(client: &Client) -> Result<usize, McnSyncError> {
    let nodes = list_nodes(client).await?;
    let pools = list_pools(client).await?;
    let api = objects::api::<MachineConfigNode>(client);
    let existing: Vec<MachineConfigNode> = api
        .list(&ListParams::default())
        .await?
        .into_iter()
        .map(MachineConfigNode::from_object)
        .collect();
    let writes = sync_machine_config_nodes(&nodes, &pools, &existing)?;
    let mut wrote = 0;
    for m in writes.create {
        tracing::info!(node = %m.metadata.name, "creating its MachineConfigNode");
        api.create(&PostParams::default(), &m.into_object()).await?;
        wrote += 1;
    }
    for m in writes.update {
        let patch = json!({
            "metadata": {"ownerReferences": m.metadata.owner_references},
            "spec": m.spec,
        });
        api.patch(
            &m.metadata.name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
        wrote += 1;
    }
    for name in writes.delete {
        tracing::info!(node = %name, "the Node is gone: deleting its MachineConfigNode");
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => wrote += 1,
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(wrote)
}
