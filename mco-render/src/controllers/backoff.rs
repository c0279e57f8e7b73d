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

    /// The delay before try number `attempt + 1` (attempt 0 is the first retry).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
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
    fn an_absent_api_is_rechecked_in_minutes() {
        let b = Backoff::ABSENT_API;
        assert_eq!(b.delay(0), Duration::from_secs(10));
        assert_eq!(b.delay(5), Duration::from_secs(300));
        assert_eq!(b.delay(40), Duration::from_secs(300));
    }
}
