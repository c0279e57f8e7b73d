//! The controller's Prometheus metrics under upstream's names: the machine counts of every
//! pool (`mco_machine_count`, `mco_updated_machine_count`, `mco_degraded_machine_count`,
//! `mco_unavailable_machine_count`, by `pool`), `mcc_drain_err` (1 while a node's drain
//! is reported failed, by `node`) and `mcc_pool_alert` (1 for a node that matches the master
//! pool and a custom pool, so follows master, by `node`), `mco_state` (when each node's pool
//! was last seen in its state, by `node`, `pool`, `state` and `reason`: one series per node),
//! `os_image_url_override` (1 for a pool whose rendered config names another OS image than
//! the release's, by `pool`) and `mco_mosc_count` (the MachineOSConfigs: on-cluster layering
//! in use), served at `/metrics` when `--metrics-listen` is given. As upstream's, the
//! families by `node` or `pool` start with an `initialize` series at 0, so they exist before
//! anything is reported.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mco_render::api::{MachineConfigPool, Node};
use mco_render::controllers::node_pool::master_overrides_custom;
use mco_render::controllers::pool_metrics::PoolState;

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
    state: Family<Labels, Gauge>,
    os_image_url_override: Family<Labels, Gauge>,
    mosc_count: Gauge,
    /// The `mco_state` series set for each pool's nodes, replaced at the pool's next report.
    state_series: Mutex<BTreeMap<String, Vec<Labels>>>,
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
        reg.register("mco_state", "state of a specified pool", m.state.clone());
        reg.register(
            "os_image_url_override",
            "state of OS image override",
            m.os_image_url_override.clone(),
        );
        reg.register(
            "mco_mosc_count",
            "number of MachineOSConfig objects in the cluster; non-zero value indicates on-cluster layering is in use",
            m.mosc_count.clone(),
        );
        let init = |key: &str| vec![(key.to_string(), "initialize".to_string())];
        m.os_image_url_override.get_or_create(&init("pool")).set(0);
        m.drain_err.get_or_create(&init("node")).set(0);
        m.pool_alert.get_or_create(&init("node")).set(0);
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

    /// Sets `mco_state` of `pool`'s `nodes` to `state`, seen at `unix_seconds`; the series
    /// the pool set before are dropped (a node that left it, a state it left), where
    /// upstream's linger.
    pub fn set_pool_state(&self, pool: &str, nodes: &[&str], state: &PoolState, unix_seconds: i64) {
        let Ok(mut series) = self.state_series.lock() else {
            return;
        };
        for old in series.remove(pool).unwrap_or_default() {
            self.state.remove(&old);
        }
        let mine: Vec<Labels> = nodes
            .iter()
            .map(|n| {
                vec![
                    ("node".to_string(), n.to_string()),
                    ("pool".to_string(), pool.to_string()),
                    ("state".to_string(), state.state.clone()),
                    ("reason".to_string(), state.reason.clone()),
                ]
            })
            .collect();
        for l in &mine {
            self.state.get_or_create(l).set(unix_seconds);
        }
        series.insert(pool.to_string(), mine);
    }

    /// Drops the `mco_state` series of pools not in `pools` (deleted).
    pub fn retain_pool_states(&self, pools: &[&str]) {
        let Ok(mut series) = self.state_series.lock() else {
            return;
        };
        series.retain(|pool, labels| {
            let keep = pools.contains(&pool.as_str());
            if !keep {
                for l in labels.iter() {
                    self.state.remove(l);
                }
            }
            keep
        });
    }

    /// Sets whether `pool`'s rendered config overrides the release's OS image.
    pub fn set_os_image_url_override(&self, pool: &str, overridden: bool) {
        let l = vec![("pool".to_string(), pool.to_string())];
        self.os_image_url_override
            .get_or_create(&l)
            .set(i64::from(overridden));
    }

    /// Sets the number of MachineOSConfigs.
    pub fn set_mosc_count(&self, count: usize) {
        self.mosc_count
            .set(i64::try_from(count).unwrap_or(i64::MAX));
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
    fn the_families_by_node_or_pool_start_with_an_initialize_series() {
        let text = ControllerMetrics::new().render();
        for line in [
            "os_image_url_override{pool=\"initialize\"} 0\n",
            "mcc_drain_err{node=\"initialize\"} 0\n",
            "mcc_pool_alert{node=\"initialize\"} 0\n",
            "mco_mosc_count 0\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }

    #[test]
    fn one_state_series_per_node_of_a_pool() {
        let m = ControllerMetrics::new();
        let updating = PoolState {
            state: "Updating".into(),
            reason: String::new(),
        };
        m.set_pool_state("worker", &["w-0", "w-1"], &updating, 1_700_000_000);
        m.set_pool_state("master", &["m-0"], &PoolState::default(), 1_700_000_001);
        let text = m.render();
        assert!(
            text.contains(
                "mco_state{node=\"w-0\",pool=\"worker\",state=\"Updating\",reason=\"\"} 1700000000\n"
            ),
            "{text}"
        );
        assert!(text.contains(
            "mco_state{node=\"m-0\",pool=\"master\",state=\"\",reason=\"\"} 1700000001\n"
        ));
        // The pool moves on and w-1 leaves it: its old series go.
        let updated = PoolState {
            state: "Updated".into(),
            reason: String::new(),
        };
        m.set_pool_state("worker", &["w-0"], &updated, 1_700_000_100);
        let text = m.render();
        assert!(!text.contains("Updating"), "{text}");
        assert!(!text.contains("w-1"), "{text}");
        assert!(text.contains(
            "mco_state{node=\"w-0\",pool=\"worker\",state=\"Updated\",reason=\"\"} 1700000100\n"
        ));
        // A deleted pool's series go too.
        m.retain_pool_states(&["worker"]);
        assert!(!m.render().contains("m-0"));
        m.set_os_image_url_override("worker", true);
        m.set_mosc_count(2);
        let text = m.render();
        assert!(
            text.contains("os_image_url_override{pool=\"worker\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("mco_mosc_count 2\n"), "{text}");
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
