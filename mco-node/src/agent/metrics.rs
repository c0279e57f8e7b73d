//! The agent's Prometheus metrics under upstream's names: `mcd_state` (1 for the node's
//! state and reason), `mcd_update_state` (1 for the last completed update's config, or its
//! error), `mcd_config_drift` (when drift was last seen, 0 when none) and
//! `mcd_reboots_failed_total`, `mcd_pivot_errors_total` (OS updates that failed since the
//! last one that went through) and `mcd_kubelet_state` (the kubelet health checks failed in a
//! row, [`super::kubelet_health`]), `mcd_host_os_and_version` (1 for the host's OS and, on a
//! CoreOS, its booted version) and `mcd_local_unsupported_packages` (packages changed on the
//! booted deployment that no supported extension installs, by `node`;
//! [`super::host_facts`]), served at `/metrics` with `--metrics-listen`.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::Arc;

type Labels = Vec<(String, String)>;

/// The agent's metrics.
#[derive(Debug, Default)]
pub struct AgentMetrics {
    registry: Registry,
    state: Family<Labels, Gauge>,
    update: Family<Labels, Gauge>,
    reboots_failed: Counter,
    config_drift: Gauge,
    pivot_errors: Gauge,
    kubelet_state: Gauge,
    host_os: Family<Labels, Gauge>,
    unsupported_packages: Family<Labels, Gauge>,
}

impl AgentMetrics {
    /// The metrics, registered.
    pub fn new() -> Arc<Self> {
        let mut m = AgentMetrics::default();
        let reg = &mut m.registry;
        reg.register(
            "mcd_state",
            "state of daemon on specified node",
            m.state.clone(),
        );
        reg.register(
            "mcd_update_state",
            "completed update config or error",
            m.update.clone(),
        );
        reg.register(
            "mcd_config_drift",
            "timestamp for config drift",
            m.config_drift.clone(),
        );
        reg.register(
            "mcd_reboots_failed",
            "Total number of reboots that failed.",
            m.reboots_failed.clone(),
        );
        // A gauge despite its name, as upstream's: an OS update that goes through resets it.
        reg.register(
            "mcd_pivot_errors_total",
            "OS update (pivot) failures since the last OS update that went through",
            m.pivot_errors.clone(),
        );
        reg.register(
            "mcd_kubelet_state",
            "kubelet health checks failed in a row",
            m.kubelet_state.clone(),
        );
        reg.register(
            "mcd_host_os_and_version",
            "os that MCD is running on and version if RHCOS",
            m.host_os.clone(),
        );
        reg.register(
            "mcd_local_unsupported_packages",
            "Total number of locally layered unsupported packages installed on the node",
            m.unsupported_packages.clone(),
        );
        Arc::new(m)
    }

    /// The node's state and reason now (the previous pair is dropped, as upstream does).
    pub fn set_state(&self, state: &str, reason: &str) {
        self.state.clear();
        let l = vec![
            ("state".into(), state.into()),
            ("reason".into(), reason.into()),
        ];
        self.state.get_or_create(&l).set(1);
    }

    /// The last completed update (`err` empty) or failed one.
    pub fn set_update(&self, config: &str, err: &str) {
        self.update.clear();
        let l = vec![("config".into(), config.into()), ("err".into(), err.into())];
        self.update.get_or_create(&l).set(1);
    }

    /// Config drift seen at `unix_seconds`; 0 clears it (the disk matches again).
    pub fn set_config_drift(&self, unix_seconds: i64) {
        self.config_drift.set(unix_seconds);
    }

    /// Counts a reboot that failed.
    pub fn reboot_failed(&self) {
        self.reboots_failed.inc();
    }

    /// Records an OS update's outcome ([`crate::apply::ApplyOutcome::pivot`]): a failure
    /// counts one more, one that went through resets the count, `None` leaves it.
    pub fn record_pivot(&self, failed: Option<bool>) {
        match failed {
            Some(true) => {
                self.pivot_errors.inc();
            }
            Some(false) => {
                self.pivot_errors.set(0);
            }
            None => {}
        }
    }

    /// The kubelet health checks failed in a row now (0 after one that passed).
    pub fn set_kubelet_failures(&self, failures: u32) {
        self.kubelet_state.set(i64::from(failures));
    }

    /// The host's OS and version ([`super::host_facts::host_os`]).
    pub fn set_host_os(&self, os: &super::host_facts::HostOs) {
        self.host_os.clear();
        let l = vec![
            ("os".into(), os.os.clone()),
            ("version".into(), os.version.clone()),
        ];
        self.host_os.get_or_create(&l).set(1);
    }

    /// The packages on `node`'s booted deployment that no supported extension installs.
    pub fn set_unsupported_packages(&self, node: &str, count: usize) {
        let l = vec![("node".into(), node.into())];
        self.unsupported_packages
            .get_or_create(&l)
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Records what [`super::host_facts::collect`] found.
    pub fn set_host_facts(&self, node: &str, facts: &super::host_facts::HostFacts) {
        self.set_host_os(&facts.os);
        if let Some(n) = facts.unsupported_packages {
            self.set_unsupported_packages(node, n);
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

    /// Serves `/metrics` on `listener` until the task is dropped.
    pub async fn serve(self: Arc<Self>, listener: tokio::net::TcpListener) {
        use hyper::service::service_fn;
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let me = self.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let found = req.uri().path() == "/metrics";
                    let body = if found { me.render() } else { String::new() };
                    async move {
                        hyper::Response::builder()
                            .status(if found { 200 } else { 404 })
                            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, svc)
                    .await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_state_at_a_time_under_upstreams_names() {
        let m = AgentMetrics::new();
        m.set_state("Working", "");
        m.set_state("Done", "");
        m.set_update("rendered-worker-1", "");
        m.reboot_failed();
        m.set_config_drift(1_700_000_000);
        let text = m.render();
        assert!(text.contains("mcd_config_drift 1700000000"), "{text}");
        assert!(
            text.contains("mcd_state{state=\"Done\",reason=\"\"} 1"),
            "{text}"
        );
        assert!(!text.contains("state=\"Working\""), "{text}");
        assert!(text.contains("mcd_update_state{config=\"rendered-worker-1\",err=\"\"} 1"));
        assert!(text.contains("mcd_reboots_failed_total 1"));
        assert!(text.contains("mcd_pivot_errors_total 0\n"), "{text}");
        assert!(text.contains("mcd_kubelet_state 0\n"), "{text}");
    }

    #[test]
    fn the_host_under_upstreams_names() {
        let m = AgentMetrics::new();
        let facts = super::super::host_facts::HostFacts {
            os: super::super::host_facts::HostOs {
                os: "RHCOS".into(),
                version: "418.94.202410090804-0".into(),
            },
            unsupported_packages: Some(2),
        };
        m.set_host_facts("worker-0", &facts);
        let text = m.render();
        assert!(
            text.contains(
                "mcd_host_os_and_version{os=\"RHCOS\",version=\"418.94.202410090804-0\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("mcd_local_unsupported_packages{node=\"worker-0\"} 2\n"),
            "{text}"
        );
        // No count (no booted deployment): the gauge stays as it was.
        let none = super::super::host_facts::HostFacts {
            unsupported_packages: None,
            ..facts
        };
        m.set_host_facts("worker-0", &none);
        assert!(m
            .render()
            .contains("mcd_local_unsupported_packages{node=\"worker-0\"} 2\n"));
    }

    #[test]
    fn pivot_errors_count_until_an_os_update_goes_through() {
        let m = AgentMetrics::new();
        m.record_pivot(Some(true));
        m.record_pivot(Some(true));
        assert!(m.render().contains("mcd_pivot_errors_total 2\n"));
        m.record_pivot(None);
        assert!(m.render().contains("mcd_pivot_errors_total 2\n"));
        m.record_pivot(Some(false));
        assert!(m.render().contains("mcd_pivot_errors_total 0\n"));
    }

    #[test]
    fn kubelet_state_is_the_failures_in_a_row() {
        let m = AgentMetrics::new();
        m.set_kubelet_failures(3);
        assert!(m.render().contains("mcd_kubelet_state 3\n"));
        m.set_kubelet_failures(0);
        assert!(m.render().contains("mcd_kubelet_state 0\n"));
    }
}
