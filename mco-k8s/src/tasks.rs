//! The tasks of a running server, stopped together: a shutdown signal they watch, and their
//! handles to wait on.

use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A server's tasks.
#[derive(Debug)]
pub struct ServerTasks {
    shutdown: watch::Sender<bool>,
    handles: Vec<JoinHandle<()>>,
}

impl ServerTasks {
    /// The tasks `handles`, which stop when `shutdown` turns true.
    pub fn new(shutdown: watch::Sender<bool>, handles: Vec<JoinHandle<()>>) -> Self {
        ServerTasks { shutdown, handles }
    }

    /// Signals the tasks to stop and waits for them to end.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        self.wait().await;
    }

    /// Waits until the tasks end (they only do when stopped or on a fatal error).
    pub async fn wait(self) {
        for t in self.handles {
            let _ = t.await;
        }
    }
}
