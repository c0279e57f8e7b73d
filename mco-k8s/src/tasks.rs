//! The tasks of a running server: its accept loop, and the shutdown signal and handles that
//! stop them together.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Accepts connections on `listener` until `stop` changes, running `serve` for each on a task
/// of its own (a failed accept is logged and retried after a short pause).
pub async fn accept_connections<F, Fut>(
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    mut serve: F,
) where
    F: FnMut(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
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
        tokio::spawn(serve(stream, peer));
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
