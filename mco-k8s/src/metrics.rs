//! The controller's Prometheus metrics under upstream's names: the machine counts of every
//! pool (`mco_machine_count`, `mco_updated_machine_count`, `mco_degraded_machine_count`,
//! `mco_unavailable_machine_count`, by `pool`), `mcc_drain_err` (1 while a node's drain
//! is reported failed, by `node`) and `mcc_pool_alert` (1 for a node that matches the master
//! pool and a custom pool, so follows master, by `node`), served at `/metrics` when
//! `--metrics-listen` is given.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::Arc;

use mco_render::api::{MachineConfigPool, Node};
use mco_render::controllers::node_pool::master_overrides_custom;

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
    pool_alert: Family<Labels, Gauge>,
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
        reg.register(
            "mcc_pool_alert",
            "the node matches the master pool and a custom pool and follows master",
            m.pool_alert.clone(),
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

    /// Sets `mcc_pool_alert` for `nodes` from the `pools` they match
    /// ([`master_overrides_custom`]); a node no pool takes, or whose pools cannot be decided,
    /// keeps its value, as upstream's.
    pub fn set_pool_alerts(&self, pools: &[MachineConfigPool], nodes: &[&Node]) {
        for n in nodes {
            if let Some(alert) = master_overrides_custom(n, pools) {
                let l = vec![("node".to_string(), n.name().to_string())];
                self.pool_alert.get_or_create(&l).set(i64::from(alert));
            }
        }
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

    #[test]
    fn the_pool_alert_follows_the_nodes_pools() {
        let node = |name: &str, labels: &[(&str, &str)]| {
            let mut n = Node::default();
            n.metadata.name = name.into();
            for (k, v) in labels {
                n.metadata.labels.insert((*k).into(), (*v).into());
            }
            n
        };
        let pool = |name: &str| {
            let mut p = MachineConfigPool::default();
            p.metadata.name = name.into();
            let mut s = mco_render::api::LabelSelector::default();
            s.match_labels
                .insert(format!("node-role.kubernetes.io/{name}"), String::new());
            p.spec.node_selector = Some(s);
            p
        };
        let pools = vec![pool("master"), pool("worker"), pool("infra")];
        let both = node(
            "m-0",
            &[
                ("node-role.kubernetes.io/master", ""),
                ("node-role.kubernetes.io/infra", ""),
            ],
        );
        let worker = node("w-0", &[("node-role.kubernetes.io/worker", "")]);
        let none = node("x-0", &[]);
        let m = ControllerMetrics::new();
        m.set_pool_alerts(&pools, &[&both, &worker, &none]);
        let text = m.render();
        assert!(text.contains("mcc_pool_alert{node=\"m-0\"} 1"), "{text}");
        assert!(text.contains("mcc_pool_alert{node=\"w-0\"} 0"), "{text}");
        assert!(!text.contains("x-0"), "{text}");
        // The custom role removed: the alert clears.
        let master_only = node("m-0", &[("node-role.kubernetes.io/master", "")]);
        m.set_pool_alerts(&pools, &[&master_only]);
        assert!(m.render().contains("mcc_pool_alert{node=\"m-0\"} 0"));
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
