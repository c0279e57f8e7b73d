//! Cluster mode's loops together, as `machine-config-daemon cluster` runs them: the update
//! loop ([`Agent`]), the certificate writer and, where host commands really run, the pinned
//! image manager, all with the same [`super::watches::WatchOptions`]. The Node is watched
//! once, by the update loop, which hands it on to the pinned image manager.

use std::sync::{Arc, Mutex};

use kube::Client;

use super::kube_loop::{Agent, AgentError, AgentOptions};
use super::pinned_images::PinnedOptions;
use crate::host::Host;
use crate::root::HostRoot;

/// Aborts the spawned loops when dropped (the update loop ended).
struct Loops(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Loops {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// Runs the agent of `opts.node_name` until its update loop ends: the certificate writer and,
/// when `pinned` holds the host the image commands run on, the pinned image manager beside it.
pub async fn run<H: Host, P: Host + Send + 'static>(
    client: Client,
    root: HostRoot,
    host: H,
    pinned: Option<Arc<Mutex<P>>>,
    opts: AgentOptions,
) -> Result<(), AgentError> {
    let mut loops = Loops(Vec::new());
    let mut agent = Agent::new(client.clone(), root.clone(), host, opts.clone());
    // The CA files follow the ControllerConfig on their own, without an update.
    loops.0.push(tokio::spawn(super::cert_writer::run_with(
        client.clone(),
        root.clone(),
        opts.watch,
    )));
    // The images of the pools' PinnedImageSets are pulled and pinned on their own too.
    if let Some(h) = pinned {
        let pinned_opts = PinnedOptions {
            watch: opts.watch,
            ..PinnedOptions::new(&opts.node_name)
        };
        // On the update loop's watch of the Node: the agent watches its Node once.
        let node = agent.share_node();
        loops
            .0
            .push(tokio::spawn(super::pinned_images::run_with_node(
                client,
                root,
                h,
                pinned_opts,
                node,
            )));
    }
    agent.run().await
}
