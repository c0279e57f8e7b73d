//! The operator's MachineConfigNode sync: reads the Nodes, pools and MachineConfigNodes (from
//! the watch caches in the running operator), asks
//! `mco_render::controllers::operator::machine_config_nodes` what to write, and writes it
//! (create, merge patch of the owner references and spec, delete).

use super::reads::Reader;
use super::OperatorError;
use crate::objects::{self, Model};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Client;
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

/// Every Node.
pub(super) async fn nodes(reader: &Reader<'_>) -> Result<Vec<Node>, OperatorError> {
    reader.list_as("Node", None).await
}

/// Every pool.
pub(super) async fn pools(reader: &Reader<'_>) -> Result<Vec<MachineConfigPool>, OperatorError> {
    reader.list_as("MachineConfigPool", None).await
}

/// Gives every Node its MachineConfigNode and deletes those of Nodes that are gone; returns
/// how many objects it wrote. A MachineConfigNode created meanwhile (or whose creation the
/// caches have not seen yet) is left to the next pass.
pub async fn sync(client: &Client, reader: &Reader<'_>) -> Result<usize, McnSyncError> {
    let nodes = nodes(reader).await?;
    let pools = pools(reader).await?;
    let existing: Vec<MachineConfigNode> = reader.list_as("MachineConfigNode", None).await?;
    let writes = sync_machine_config_nodes(&nodes, &pools, &existing)?;
    let api = objects::api::<MachineConfigNode>(client);
    let mut wrote = 0;
    for m in writes.create {
        tracing::info!(node = %m.metadata.name, "creating its MachineConfigNode");
        match api.create(&PostParams::default(), &m.into_object()).await {
            Ok(_) => wrote += 1,
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
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
