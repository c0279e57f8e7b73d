//! Faults the test API server plays on command, as a real one has them: going away (a restart:
//! connections cut, every watch ended, the objects kept as etcd keeps them), compaction (a
//! watch resumed from a version older than the compacted one gets `410 Gone` as its first
//! event, `too old resource version`), and refusals of chosen requests: `429` with
//! `Retry-After`, `500`, `503`, `403`, or the connection cut before an answer. Right after a
//! restart, reads are refused `403` for an instant ([`FORBIDDEN_AFTER_RESTART`]), as
//! kube-apiserver's RBAC authorizer refuses them until its caches of the roles are filled.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::broadcast;

/// What a refused request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `429 TooManyRequests` with `Retry-After` (seconds), as the API server's priority and
    /// fairness (or max-in-flight) limit answers.
    TooManyRequests(u64),
    /// `500 InternalError`.
    Internal,
    /// `503 ServiceUnavailable`.
    Unavailable,
    /// `403 Forbidden`, as the RBAC authorizer answers before it has the roles.
    Forbidden,
    /// The connection is cut with no answer (a reset; the request may or may not have been
    /// carried out: here it was not).
    Reset,
    /// The request is carried out, then the connection cut before the answer: the client
    /// cannot tell that it happened (a create retried finds the name taken).
    ResetAfterDoing,
}

/// Which requests a refusal applies to; `None` matches any.
#[derive(Debug, Clone, Default)]
pub struct Matcher {
    /// The verb as the server counts it: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`,
    /// `DELETE`.
    pub verb: Option<&'static str>,
    /// The resource (plural).
    pub plural: Option<&'static str>,
    /// The client's User-Agent, exactly.
    pub agent: Option<String>,
}

impl Matcher {
    fn matches(&self, verb: &str, plural: &str, agent: &str) -> bool {
        self.verb.is_none_or(|v| v == verb)
            && self.plural.is_none_or(|p| p == plural)
            && self.agent.as_deref().is_none_or(|a| a == agent)
    }
}

struct Rule {
    matcher: Matcher,
    refusal: Refusal,
    /// How many more requests to refuse (`u64::MAX`: until lifted).
    left: u64,
}

/// The server's fault state.
pub struct Faults {
    down: AtomicBool,
    compacted: AtomicU64,
    rules: Mutex<Vec<Rule>>,
    refused: AtomicU64,
    expired: AtomicU64,
    cut: broadcast::Sender<()>,
    /// Until when LISTs and WATCHes are refused `403` (after a restart).
    forbidden_until: Mutex<Option<std::time::Instant>>,
    expired_log: Mutex<Vec<Expired>>,
    forbidden: AtomicU64,
    /// How long after a change of a kind (by plural) its watch event reaches the watchers
    /// (a kind not named: at once).
    watch_lag: Mutex<std::collections::BTreeMap<String, Duration>>,
}

/// A watch answered `410 Expired` (its ERROR event sent).
#[derive(Debug, Clone)]
pub struct Expired {
    /// When.
    pub at: std::time::Instant,
    /// The client's User-Agent.
    pub agent: String,
    /// The resource watched.
    pub plural: String,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            down: AtomicBool::new(false),
            compacted: AtomicU64::new(0),
            rules: Mutex::new(Vec::new()),
            refused: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            cut: broadcast::channel(16).0,
            forbidden_until: Mutex::new(None),
            expired_log: Mutex::new(Vec::new()),
            forbidden: AtomicU64::new(0),
            watch_lag: Mutex::new(std::collections::BTreeMap::new()),
        }
    }
}

impl Faults {
    /// Whether the server is away.
    pub fn down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    /// Takes the server away (`true`, every open watch ended) or brings it back.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
        if down {
            self.end_watches();
        }
    }

    /// Ends every open watch (each ends without a final event, as a cut connection does).
    pub fn end_watches(&self) {
        let _ = self.cut.send(());
    }

    /// A signal that fires when watches are ended.
    pub fn on_end_watches(&self) -> broadcast::Receiver<()> {
        self.cut.subscribe()
    }

    /// Delivers the watch events of `plural` `lag` after their change (`None`: at once), as
    /// a busy kube-apiserver does: its watch caches trail etcd, each by its own amount, so a
    /// client may read its own write of one kind back after later changes of another kind.
    pub fn set_watch_lag(&self, plural: &str, lag: Option<Duration>) {
        let mut lags = self.watch_lag.lock().unwrap_or_else(|e| e.into_inner());
        match lag {
            Some(l) => lags.insert(plural.to_string(), l),
            None => lags.remove(plural),
        };
    }

    /// The watch lag of `plural` now.
    pub fn watch_lag(&self, plural: &str) -> Option<Duration> {
        let lags = self.watch_lag.lock().unwrap_or_else(|e| e.into_inner());
        lags.get(plural).copied()
    }

    /// Compacts history up to `rv`: watches from an older version get 410.
    pub fn compact_to(&self, rv: u64) {
        self.compacted.fetch_max(rv, Ordering::SeqCst);
    }

    /// The version history is compacted to (0: never).
    pub fn compacted(&self) -> u64 {
        self.compacted.load(Ordering::SeqCst)
    }

    /// Refuses the next `times` requests `matcher` matches with `refusal`.
    pub fn refuse(&self, matcher: Matcher, refusal: Refusal, times: u64) {
        self.rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Rule {
                matcher,
                refusal,
                left: times,
            });
    }

    /// Lifts every refusal still in force.
    pub fn lift(&self) {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Counts a watch of `plural` by the client `agent` answered `410 Expired`.
    pub fn count_expired(&self, agent: &str, plural: &str) {
        self.expired.fetch_add(1, Ordering::SeqCst);
        self.expired_log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Expired {
                at: std::time::Instant::now(),
                agent: agent.to_string(),
                plural: plural.to_string(),
            });
    }

    /// Every watch answered `410 Expired` so far, in order.
    pub fn expired_log(&self) -> Vec<Expired> {
        self.expired_log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many watches were answered `410 Expired` so far.
    pub fn expired_watches(&self) -> u64 {
        self.expired.load(Ordering::SeqCst)
    }

    /// How many reads were refused `403` after a restart so far (not counted in
    /// [`Faults::refused`], which counts the refusals asked for).
    pub fn forbidden_reads(&self) -> u64 {
        self.forbidden.load(Ordering::SeqCst)
    }

    /// How many requests were refused so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }

    /// Refuses every LIST and WATCH `403` for `d` from now.
    pub fn forbid_reads_for(&self, d: Duration) {
        *self
            .forbidden_until
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(std::time::Instant::now() + d);
    }

    /// The refusal for a request, if one applies (counted and used up).
    pub fn take(&self, verb: &str, plural: &str, agent: &str) -> Option<Refusal> {
        let forbidden = *self
            .forbidden_until
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if (verb == "LIST" || verb == "WATCH")
            && forbidden.is_some_and(|t| std::time::Instant::now() < t)
        {
            self.forbidden.fetch_add(1, Ordering::SeqCst);
            return Some(Refusal::Forbidden);
        }
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let rule = rules
            .iter_mut()
            .find(|r| r.left > 0 && r.matcher.matches(verb, plural, agent))?;
        if rule.left != u64::MAX {
            rule.left -= 1;
        }
        self.refused.fetch_add(1, Ordering::SeqCst);
        Some(rule.refusal)
    }
}

/// How long a restart of a real kube-apiserver keeps it away, give or take: the tests use a
/// few seconds.
pub const RESTART: Duration = Duration::from_secs(3);

/// How long reads are refused `403` after a restart: the instant kube-apiserver's RBAC
/// authorizer takes to fill its caches of the roles.
pub const FORBIDDEN_AFTER_RESTART: Duration = Duration::from_millis(100);
