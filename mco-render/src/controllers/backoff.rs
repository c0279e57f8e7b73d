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

/// Why a watch (a LIST, or a WATCH's start or stream) failed, as [`WatchRetry`] tells the
/// failures apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFailure {
    /// The server answered that the resourceVersion the watch resumed from is gone (`410
    /// Expired`, as an ERROR event inside the stream or as the WATCH's answer): the store is
    /// stale and only a new LIST brings it back.
    Expired,
    /// The server answered with another error (`403` while its authorizer starts, `429`,
    /// `5xx`): it is up, and the same request may pass later.
    Refused,
    /// No answer: the server is away, or the connection was cut.
    Unreachable,
}

/// What a watch does after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchNext {
    /// List again now, with a fresh watch (client-go's reflector does the same after a 410).
    ListNow,
    /// Try again after this delay (the watch resumes where it was, or lists if it was
    /// listing).
    After(Duration),
}

/// A watch's retry schedule. Each kind of failure has its own count: a delay that grew while
/// the server was away does not hold back the retry after the server answers, and the first
/// `410` lists again at once (only `410`s in a row, the LIST after each answered with another
/// `410`, wait). Every event that came from the server resets it ([`WatchRetry::answered`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchRetry {
    /// The delays after refusals (and after `410`s in a row).
    pub refusal: Backoff,
    /// The delays while the server does not answer.
    pub outage: Backoff,
    expired: u32,
    refused: u32,
    unreachable: u32,
}

impl Default for WatchRetry {
    /// [`Backoff::TRANSIENT`] after refusals, [`WatchRetry::UNREACHABLE`] in an outage.
    fn default() -> Self {
        WatchRetry::new(Backoff::TRANSIENT, WatchRetry::UNREACHABLE)
    }
}

impl WatchRetry {
    /// A schedule of `refusal` delays after refusals and `outage` delays while the server
    /// does not answer.
    pub fn new(refusal: Backoff, outage: Backoff) -> Self {
        WatchRetry {
            refusal,
            outage,
            expired: 0,
            refused: 0,
            unreachable: 0,
        }
    }

    /// While the server does not answer: 1 s doubling to 8 s, so a watch finds the server
    /// within seconds of its return (a refused connection costs it nothing).
    pub const UNREACHABLE: Backoff = Backoff {
        initial: Duration::from_secs(1),
        max: Duration::from_secs(8),
    };

    /// The server answered (an object, a listed page, the end of a list): every count
    /// starts again.
    pub fn answered(&mut self) {
        *self = WatchRetry::new(self.refusal, self.outage);
    }

    /// What to do after `failure`.
    pub fn next(&mut self, failure: WatchFailure) -> WatchNext {
        let bump = |n: &mut u32| {
            let was = *n;
            *n = n.saturating_add(1);
            was
        };
        match failure {
            WatchFailure::Expired => {
                // The server answered: the outage's delays are over.
                self.unreachable = 0;
                match bump(&mut self.expired) {
                    0 => WatchNext::ListNow,
                    n => WatchNext::After(self.refusal.delay(n - 1)),
                }
            }
            WatchFailure::Refused => {
                self.unreachable = 0;
                WatchNext::After(self.refusal.delay(bump(&mut self.refused)))
            }
            WatchFailure::Unreachable => {
                WatchNext::After(self.outage.delay(bump(&mut self.unreachable)))
            }
        }
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
    #[test]
    fn a_410_lists_at_once_whatever_the_outage_before() {
        let mut r = WatchRetry::default();
        let waits: Vec<WatchNext> = (0..6).map(|_| r.next(WatchFailure::Unreachable)).collect();
        let secs = |n: WatchNext| match n {
            WatchNext::After(d) => d.as_secs(),
            WatchNext::ListNow => 0,
        };
        assert_eq!(
            waits.into_iter().map(secs).collect::<Vec<_>>(),
            [1, 2, 4, 8, 8, 8]
        );
        assert_eq!(r.next(WatchFailure::Expired), WatchNext::ListNow);
        // The server answered: a cut after it starts the outage schedule again.
        assert_eq!(
            r.next(WatchFailure::Unreachable),
            WatchNext::After(Duration::from_secs(1))
        );
    }

    #[test]
    fn a_refusal_after_an_outage_waits_its_own_delay_and_answers_reset_everything() {
        let mut r = WatchRetry::default();
        for _ in 0..5 {
            r.next(WatchFailure::Unreachable);
        }
        assert_eq!(
            r.next(WatchFailure::Refused),
            WatchNext::After(Duration::from_secs(1))
        );
        assert_eq!(
            r.next(WatchFailure::Refused),
            WatchNext::After(Duration::from_secs(2))
        );
        r.answered();
        assert_eq!(r, WatchRetry::default());
    }

    #[test]
    fn only_410s_in_a_row_wait() {
        let mut r = WatchRetry::default();
        assert_eq!(r.next(WatchFailure::Expired), WatchNext::ListNow);
        assert_eq!(
            r.next(WatchFailure::Expired),
            WatchNext::After(Duration::from_secs(1))
        );
        assert_eq!(
            r.next(WatchFailure::Expired),
            WatchNext::After(Duration::from_secs(2))
        );
        r.answered();
        assert_eq!(r.next(WatchFailure::Expired), WatchNext::ListNow);
    }
}
