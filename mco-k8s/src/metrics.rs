//! The controller's Prometheus metrics under upstream's names: the machine counts of every
//! pool (`mco_machine_count`, `mco_updated_machine_count`, `mco_degraded_machine_count`,
//! `mco_unavailable_machine_count`, by `pool`) and `mcc_drain_err` (1 while a node's drain
//! is reported failed, by `node`), served at `/metrics` when `--metrics-listen` is given.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::Arc;

type Labels = Vec<(String, String)>;

/// The controller's gauges.
#[derive(Debug, Default)]
pub struct ControllerMetrics {
    registry: Registry,
    machines: Family<Labels, Gauge>,
    updated: Family<Labels, Gauge>,
    degraded: Family<Labels, Gauge>,
    unavailable: Family<Labels, Gauge>,
    drain_err: Family<Labels, Gauge>,
}

/// One pool's machine counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolCounts {
    /// Nodes in the pool.
    pub machines: i64,
    /// Nodes on the pool's config.
    pub updated: i64,
    /// Nodes reporting degraded.
    pub degraded: i64,
    /// Nodes counted against maxUnavailable.
    pub unavailable: i64,
}

impl ControllerMetrics {
    /// The gauges, registered.
    pub fn new() -> Arc<Self> {
        let mut m = ControllerMetrics::default();
        let reg = &mut m.registry;
        reg.register(
            "mco_machine_count",
            "total number of machines in a specified pool",
            m.machines.clone(),
        );
        reg.register(
            "mco_updated_machine_count",
            "total number of updated machines in specified pool",
            m.updated.clone(),
        );
        reg.register(
            "mco_degraded_machine_count",
            "total number of degraded machines in specified pool",
            m.degraded.clone(),
        );
        reg.register(
            "mco_unavailable_machine_count",
            "total number of unavailable machines in specified pool",
            m.unavailable.clone(),
        );
        reg.register(
            "mcc_drain_err",
            "a drain of the node is reported failed",
            m.drain_err.clone(),
        );
        Arc::new(m)
    }

    /// Sets a pool's counts.
    pub fn set_pool(&self, pool: &str, c: PoolCounts) {
        let l = vec![("pool".to_string(), pool.to_string())];
        self.machines.get_or_create(&l).set(c.machines);
        self.updated.get_or_create(&l).set(c.updated);
        self.degraded.get_or_create(&l).set(c.degraded);
        self.unavailable.get_or_create(&l).set(c.unavailable);
    }

    /// Sets whether a node's drain is reported failed.
    pub fn set_drain_failed(&self, node: &str, failed: bool) {
        let l = vec![("node".to_string(), node.to_string())];
        self.drain_err.get_or_create(&l).set(i64::from(failed));
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Serves `/metrics` from `render` on `listener` until the task is dropped.
pub async fn serve(
    listener: tokio::net::TcpListener,
    render: Arc<dyn Fn() -> String + Send + Sync>,
) {
    use http_body_util::Full;
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    // Nothing stops it but dropping the task: the sender lives as long as the loop.
    let (_never, stop) = tokio::sync::watch::channel(false);
    crate::tasks::accept_connections(listener, stop, 64, move |stream, _| {
        let render = render.clone();
        async move {
            let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let (code, body) = if req.uri().path() == "/metrics" {
                    (200, render())
                } else {
                    (404, "not found\n".to_string())
                };
                async move {
                    hyper::Response::builder()
                        .status(code)
                        .header("content-type", "text/plain; version=0.0.4")
                        .body(Full::new(bytes::Bytes::from(body)))
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = http1::Builder::new().serve_connection(io, svc).await;
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposes_upstreams_names() {
        let m = ControllerMetrics::new();
        m.set_pool(
            "worker",
            PoolCounts {
                machines: 3,
                updated: 1,
                degraded: 0,
                unavailable: 2,
            },
        );
        m.set_drain_failed("worker-0", true);
        let text = m.render();
        assert!(
            text.contains("mco_machine_count{pool=\"worker\"} 3"),
            "{text}"
        );
        assert!(text.contains("mco_updated_machine_count{pool=\"worker\"} 1"));
        assert!(text.contains("mco_unavailable_machine_count{pool=\"worker\"} 2"));
        assert!(text.contains("mcc_drain_err{node=\"worker-0\"} 1"));
        m.set_drain_failed("worker-0", false);
        assert!(m.render().contains("mcc_drain_err{node=\"worker-0\"} 0"));
    }

    #[tokio::test]
    async fn serves_the_exposition_over_http() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let m = ControllerMetrics::new();
        m.set_drain_failed("worker-0", true);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(serve(listener, Arc::new(move || m.render())));
        let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
        conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut reply = String::new();
        conn.read_to_string(&mut reply).await.unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(
            reply.contains("mcc_drain_err{node=\"worker-0\"} 1"),
            "{reply}"
        );
        server.abort();
    }
}
