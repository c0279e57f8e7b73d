//! The tasks of a running server: its accept loop, and the shutdown signal and handles that
//! stop them together.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

/// Accepts connections on `listener` until `stop` changes, running `serve` for each on a task
/// of its own (a failed accept is logged and retried after a short pause). At most
/// `max_connections` are served at once: at the cap, accepting waits until one ends, so
/// newcomers wait in the backlog and connections being served are not disturbed.
pub async fn accept_connections<F, Fut>(
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    max_connections: usize,
    mut serve: F,
) where
    F: FnMut(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(
        max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    loop {
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => match s {
                Ok(s) => s,
                // The semaphore is never closed.
                Err(_) => return,
            },
            _ = stop.changed() => return,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        let conn = serve(stream, peer);
        tokio::spawn(async move {
            conn.await;
            drop(slot);
        });
    }
}

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
