//! What one client may hold or send on an HTTP/1.1 listener (the machine-config-server's ports
//! and the admission webhook): how many connections are served at once, how long a request
//! head may take to arrive, how long a connection may sit idle, how large a head may be.
//!
//! Beyond `max_connections` the accept loop stops accepting: new connections wait in the
//! kernel's backlog until a slot frees, and connections already served keep theirs, so a flood
//! of new connections delays newcomers but never cuts a client that is being served. Slow
//! clients lose their slot after `header_timeout` (head not complete) or `idle_timeout` (no
//! request, or a response left unread).

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

/// Limits on a listener's clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnLimits {
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// Time a client has to send a complete request head (slowloris guard).
    pub header_timeout: Duration,
    /// Time a connection may stay open with no request in flight, and the time a response
    /// may take to be read once the connection is closing.
    pub idle_timeout: Duration,
    /// The largest request head (request line and headers) in bytes; larger ones get 431.
    pub max_header_bytes: usize,
    /// The most header fields in a request; more get 431.
    pub max_headers: usize,
}

impl Default for ConnLimits {
    /// The machine-config-server's defaults.
    fn default() -> Self {
        ConnLimits {
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            max_header_bytes: 16384,
            max_headers: 64,
        }
    }
}

/// When a connection last had a request in flight, and how many it has now.
#[derive(Debug)]
struct Activity {
    in_flight: AtomicUsize,
    last: Mutex<Instant>,
}

impl Activity {
    fn touch(&self) {
        let now = Instant::now();
        match self.last.lock() {
            Ok(mut l) => *l = now,
            Err(e) => *e.into_inner() = now,
        }
    }

    /// When the connection becomes idle-expired, if nothing happens until then.
    fn deadline(&self, idle: Duration) -> Instant {
        let last = match self.last.lock() {
            Ok(l) => *l,
            Err(e) => *e.into_inner(),
        };
        if self.in_flight.load(Ordering::Acquire) > 0 {
            Instant::now() + idle
        } else {
            last + idle
        }
    }
}

/// Decrements the in-flight count when a request's handling ends, however it ends.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves one HTTP/1.1 connection with `handler` under `limits`: hyper enforces the head's
/// size, count and read time; the connection is closed after `idle_timeout` without a request
/// in flight (gracefully: a response being written is finished first, for at most another
/// `idle_timeout`).
pub async fn serve_http1<S, H, Fut>(io: S, peer: SocketAddr, limits: &ConnLimits, handler: H)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    H: Fn(hyper::Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = hyper::Response<Full<Bytes>>> + Send + 'static,
{
    let activity = Arc::new(Activity {
        in_flight: AtomicUsize::new(0),
        last: Mutex::new(Instant::now()),
    });
    let handler = Arc::new(handler);
    let act = activity.clone();
    let svc = service_fn(move |req| {
        act.in_flight.fetch_add(1, Ordering::AcqRel);
        let guard = InFlight(act.clone());
        let fut = handler(req);
        async move {
            let resp = fut.await;
            drop(guard);
            Ok::<_, std::convert::Infallible>(resp)
        }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_header_size(limits.max_header_bytes)
        // Room past the head limit: a head somewhat too large is read whole and answered 431
        // rather than reset mid-send.
        .max_buf_size(limits.max_header_bytes.saturating_mul(2).max(8192))
        .max_headers(limits.max_headers.max(1))
        .serve_connection(TokioIo::new(io), svc);
    let mut conn = std::pin::pin!(conn);
    let ended = loop {
        let deadline = activity.deadline(limits.idle_timeout);
        tokio::select! {
            r = conn.as_mut() => break Some(r),
            _ = tokio::time::sleep_until(deadline) => {
                if activity.deadline(limits.idle_timeout) <= Instant::now() {
                    break None;
                }
            }
        }
    };
    let result = match ended {
        Some(r) => r,
        None => {
            tracing::debug!(client = %peer, "idle connection closed");
            conn.as_mut().graceful_shutdown();
            match tokio::time::timeout(limits.idle_timeout, conn.as_mut()).await {
                Ok(r) => r,
                Err(_) => {
                    tracing::debug!(client = %peer, "response not read in time; dropped");
                    return;
                }
            }
        }
    };
    if let Err(e) = result {
        tracing::debug!(client = %peer, error = %e, "connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A keep-alive connection left idle is closed after the idle timeout, not later.
    #[tokio::test]
    async fn idle_connection_is_closed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = ConnLimits {
            idle_timeout: Duration::from_millis(300),
            ..ConnLimits::default()
        };
        tokio::spawn(async move {
            let (s, peer) = listener.accept().await.unwrap();
            serve_http1(s, peer, &limits, |_req| async {
                hyper::Response::new(Full::new(Bytes::from_static(b"ok")))
            })
            .await;
        });
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let started = std::time::Instant::now();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let r = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut got)).await;
        let held = started.elapsed();
        assert!(r.is_ok(), "not closed");
        assert!(got.starts_with(b"HTTP/1.1 200"));
        println!("idle connection closed after {held:?}");
        // Generous: the point is that it is not left to the head timeout (10 s) or forever.
        assert!(held < Duration::from_secs(5), "{held:?}");
    }
}
