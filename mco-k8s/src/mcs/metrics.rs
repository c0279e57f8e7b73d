//! Counters exposed at `/metrics` in the Prometheus text format.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// The lowest and highest status codes counted one by one (the server sends no other).
const FIRST_CODE: u16 = 100;
const LAST_CODE: u16 = 599;

/// The server's counters: plain atomics, so requests on different threads never wait on
/// each other to count.
#[derive(Debug)]
pub struct Metrics {
    /// Responses by status code, `FIRST_CODE` first.
    by_code: Box<[AtomicU64]>,
    cache_hits: AtomicU64,
    gzip_responses: AtomicU64,
    gzip_encodes: AtomicU64,
    reloads: AtomicU64,
    reload_errors: AtomicU64,
    cert_reloads: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            by_code: (FIRST_CODE..=LAST_CODE)
                .map(|_| AtomicU64::new(0))
                .collect(),
            cache_hits: AtomicU64::new(0),
            gzip_responses: AtomicU64::new(0),
            gzip_encodes: AtomicU64::new(0),
            reloads: AtomicU64::new(0),
            reload_errors: AtomicU64::new(0),
            cert_reloads: AtomicU64::new(0),
        }
    }
}

impl Metrics {
    fn code(&self, status: u16) -> Option<&AtomicU64> {
        let i = status.checked_sub(FIRST_CODE)?;
        self.by_code.get(usize::from(i))
    }

    /// Counts a response.
    pub fn record(&self, status: u16, cache_hit: bool) {
        if let Some(c) = self.code(status) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        if cache_hit {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a response sent with `Content-Encoding: gzip`.
    pub fn gzip_sent(&self) {
        self.gzip_responses.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a body compressed with gzip (once per served body and spec version).
    pub fn gzip_encoded(&self) {
        self.gzip_encodes.fetch_add(1, Ordering::Relaxed);
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
        self.code(status).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// The Prometheus text exposition.
    pub fn render(&self, pools: usize) -> String {
        let mut out = String::new();
        out.push_str("# HELP mcs_requests_total HTTP responses by status code.\n");
        out.push_str("# TYPE mcs_requests_total counter\n");
        for (code, c) in (FIRST_CODE..=LAST_CODE).zip(self.by_code.iter()) {
            let n = c.load(Ordering::Relaxed);
            if n > 0 {
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
                "mcs_gzip_responses_total",
                "Config bodies sent gzip-compressed.",
                &self.gzip_responses,
            ),
            (
                "mcs_gzip_encodes_total",
                "Config bodies compressed with gzip (once per rendered config and spec version).",
                &self.gzip_encodes,
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
        assert_eq!(m.requests(404), 1);
        assert_eq!(m.requests(99), 0);
        assert_eq!(m.requests(600), 0);
        // Codes come out in order, as the text format's readers expect.
        assert!(t.find("code=\"200\"") < t.find("code=\"404\""));
    }
}
