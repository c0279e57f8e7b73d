//! Counters exposed at `/metrics` in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The server's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    by_code: Mutex<BTreeMap<u16, u64>>,
    cache_hits: AtomicU64,
    reloads: AtomicU64,
    reload_errors: AtomicU64,
    cert_reloads: AtomicU64,
}

impl Metrics {
    /// Counts a response.
    pub fn record(&self, status: u16, cache_hit: bool) {
        if let Ok(mut m) = self.by_code.lock() {
            *m.entry(status).or_default() += 1;
        }
        if cache_hit {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a reload of the served state.
    pub fn reloaded(&self, ok: bool) {
        self.reloads.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.reload_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a serving certificate reload.
    pub fn cert_reloaded(&self) {
        self.cert_reloads.fetch_add(1, Ordering::Relaxed);
    }

    /// Responses counted with this status.
    pub fn requests(&self, status: u16) -> u64 {
        self.by_code
            .lock()
            .map(|m| m.get(&status).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    /// The Prometheus text exposition.
    pub fn render(&self, pools: usize) -> String {
        let mut out = String::new();
        out.push_str("# HELP mcs_requests_total HTTP responses by status code.\n");
        out.push_str("# TYPE mcs_requests_total counter\n");
        if let Ok(m) = self.by_code.lock() {
            for (code, n) in m.iter() {
                let _ = writeln!(out, "mcs_requests_total{{code=\"{code}\"}} {n}");
            }
        }
        let counters = [
            (
                "mcs_cache_hits_total",
                "Config responses served from the encoded cache.",
                &self.cache_hits,
            ),
            (
                "mcs_reloads_total",
                "Reloads of the served configs.",
                &self.reloads,
            ),
            (
                "mcs_reload_errors_total",
                "Reloads that failed.",
                &self.reload_errors,
            ),
            (
                "mcs_cert_reloads_total",
                "Serving certificate reloads.",
                &self.cert_reloads,
            ),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                v.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(out, "# HELP mcs_pools Pools known to the server.\n# TYPE mcs_pools gauge\nmcs_pools {pools}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters() {
        let m = Metrics::default();
        m.record(200, true);
        m.record(200, true);
        m.record(404, false);
        let t = m.render(2);
        assert!(t.contains("mcs_requests_total{code=\"200\"} 2\n"), "{t}");
        assert!(t.contains("mcs_requests_total{code=\"404\"} 1\n"));
        assert!(t.contains("mcs_cache_hits_total 2\n"));
        assert!(t.contains("mcs_pools 2\n"));
    }
}
