//! How long a controller waits before trying again: after a failed watch, a failed
//! reconcile, or while waiting for something it cannot hurry (a drain, an API that is not
//! installed). Pure: attempt counts in, durations out; the adapters own the clocks.

use std::time::Duration;

/// An exponential backoff: `initial * 2^attempt`, capped at `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first delay.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
}

impl Backoff {
    /// After a transient failure (a dropped watch, a refused write): 1 s doubling to 30 s.
    pub const TRANSIENT: Backoff = Backoff {
        initial: Duration::from_secs(1),
        max: Duration::from_secs(30),
    };

    /// For an API the server does not serve (its CRD is not installed): 10 s doubling to
    /// 5 minutes, so a component on a cluster without it costs a request every few minutes,
    /// not one a second.
    pub const ABSENT_API: Backoff = Backoff {
        initial: Duration::from_secs(10),
        max: Duration::from_secs(300),
    };

    /// While a drain waits for pods to leave or for a disruption budget: 1 s doubling to
    /// 30 s, reset when the drain moves on.
    pub const DRAIN: Backoff = Backoff {
        initial: Duration::from_secs(1),
        max: Duration::from_secs(30),
    };

    /// How an API client waits between the tries of a request the server answered `429`,
    /// `503` or `504` (see [`ClientRetry::COMPONENTS`]): 200 ms doubling to 1 s.
    pub const CLIENT: Backoff = Backoff {
        initial: Duration::from_millis(200),
        max: Duration::from_secs(1),
    };

    /// The delay before try number `attempt + 1` (attempt 0 is the first retry).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }
}

/// How often an Event is tried in all before it is dropped (client-go's recorder's
/// `maxTriesPerEvent`).
pub const EVENT_TRIES: u32 = 12;

/// Whether a request that failed may succeed when tried again: no answer (`None`: the server
/// was away or the connection cut), throttled (`429`) or failing (`5xx`). Any other refusal
/// will not change.
pub fn may_succeed_later(status: Option<u16>) -> bool {
    status.is_none_or(|code| code == 429 || code >= 500)
}

/// How an API client retries, by itself, a request the server answered `429`, `503` or
/// `504`, before the component's own retry takes over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientRetry {
    /// The waits between tries (a longer `Retry-After` from the server is waited instead).
    pub backoff: Backoff,
    /// The retries after the first try.
    pub retries: u32,
}

impl ClientRetry {
    /// Every component's clients: a few tries within seconds, then the failure goes to the
    /// component, whose own retry (a work queue's backoff, the agent's next sync, the Event
    /// recorder's) does not hold up its other work. kube-client's default tries 15 times
    /// over minutes, the caller held all that time (an agent stalled mid-update on a
    /// best-effort write); client-go tries up to 10 times, about a second apart, only when
    /// the server's `Retry-After` says when.
    pub const COMPONENTS: ClientRetry = ClientRetry {
        backoff: Backoff::CLIENT,
        retries: 3,
    };

    /// The longest the client waits in all before giving up, when the server sends no
    /// `Retry-After`: kube-client's backoff adds up to twice each delay at random, never
    /// past the backoff's cap.
    pub fn longest_wait(&self) -> Duration {
        (0..self.retries)
            .map(|a| {
                self.backoff
                    .delay(a)
                    .saturating_mul(3)
                    .min(self.backoff.max)
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap() {
        let b = Backoff::TRANSIENT;
        let secs: Vec<u64> = (0..7).map(|a| b.delay(a).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(30));
    }

    #[test]
    fn only_no_answer_throttling_and_server_failures_may_pass_later() {
        for code in [None, Some(429), Some(500), Some(503), Some(504)] {
            assert!(may_succeed_later(code), "{code:?}");
        }
        for code in [Some(400), Some(403), Some(404), Some(409), Some(422)] {
            assert!(!may_succeed_later(code), "{code:?}");
        }
    }

    #[test]
    fn a_client_gives_a_failing_request_up_within_seconds() {
        let r = ClientRetry::COMPONENTS;
        assert_eq!(r.longest_wait(), Duration::from_millis(600 + 1000 + 1000));
    }

    #[test]
    fn an_absent_api_is_rechecked_in_minutes() {
        let b = Backoff::ABSENT_API;
        assert_eq!(b.delay(0), Duration::from_secs(10));
        assert_eq!(b.delay(5), Duration::from_secs(300));
        assert_eq!(b.delay(40), Duration::from_secs(300));
    }
}
