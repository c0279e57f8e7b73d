//! What the agent could not tell the API server because it was away, throttling or failing:
//! the Events of its steps and the phases for its MachineConfigNode. They are kept (up to a
//! bound) and sent first at the next write or sync, in order, so an API server restart in the
//! middle of an update leaves no step out of the node's record. (client-go's recorder tries an
//! Event up to 12 times; upstream's daemon drops a MachineConfigNode write that failed.)
//! A refusal that will not change (invalid, forbidden) is not kept.

use super::node_conditions::Phase;
use super::NodeEvent;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub use mco_render::controllers::backoff::EVENT_TRIES;

/// The wait after a failed try before the Events are tried again (client-go's recorder
/// sleeps 10 s between tries).
pub const EVENT_RETRY: Duration = Duration::from_secs(10);

/// The most Events, and the most phases, kept: the oldest give way beyond.
pub const KEPT: usize = 64;

/// Whether a failed request may succeed later (see
/// [`mco_render::controllers::backoff::may_succeed_later`]).
pub fn transient(e: &kube::Error) -> bool {
    mco_render::controllers::backoff::may_succeed_later(match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    })
}

/// An Event on the Node not yet recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsentEvent {
    /// The Event.
    pub event: NodeEvent,
    /// The Node's uid when the step was taken.
    pub uid: Option<String>,
    /// The tries so far.
    pub tries: u32,
}

/// The Events and MachineConfigNode phases waiting to be sent.
#[derive(Debug, Default)]
pub struct Unsent {
    /// Oldest first; sent in this order, so `kubectl describe` lists the steps as taken.
    events: VecDeque<UnsentEvent>,
    /// When the Events may be tried again (none: now).
    next_try: Option<Instant>,
    /// Oldest first.
    phases: Vec<Phase>,
    /// When the phases may be tried again (none: now).
    phases_next_try: Option<Instant>,
}

impl Unsent {
    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.phases.is_empty()
    }

    /// Queues new Events behind the ones waiting.
    pub fn queue_events(&mut self, events: impl IntoIterator<Item = UnsentEvent>) {
        self.events.extend(events);
        while self.events.len() > KEPT {
            self.events.pop_front();
        }
    }

    /// The next Event to send, if Events may be sent at `now`.
    pub fn next_event(&mut self, now: Instant) -> Option<UnsentEvent> {
        if self.next_try.is_some_and(|t| now < t) {
            return None;
        }
        self.events.pop_front()
    }

    /// Puts back an Event whose try failed transiently at `now` (unless it has had all its
    /// tries): it and the ones behind it wait [`EVENT_RETRY`].
    pub fn event_failed(&mut self, mut e: UnsentEvent, now: Instant) {
        self.next_try = Some(now + EVENT_RETRY);
        e.tries = e.tries.saturating_add(1);
        if e.tries < EVENT_TRIES {
            self.events.push_front(e);
        }
    }

    /// Queues new phases behind the ones waiting (the newest `KEPT` are kept).
    pub fn queue_phases(&mut self, phases: impl IntoIterator<Item = Phase>) {
        self.phases.extend(phases);
        let over = self.phases.len().saturating_sub(KEPT);
        self.phases.drain(..over);
    }

    /// The phases waiting, oldest first, if they may be written at `now` (they are no
    /// longer kept).
    pub fn take_phases(&mut self, now: Instant) -> Vec<Phase> {
        if self.phases_next_try.is_some_and(|t| now < t) {
            return Vec::new();
        }
        std::mem::take(&mut self.phases)
    }

    /// Puts back the phases of a write that failed transiently at `now`, before any queued
    /// since: they wait [`EVENT_RETRY`].
    pub fn phases_failed(&mut self, mut phases: Vec<Phase>, now: Instant) {
        self.phases_next_try = Some(now + EVENT_RETRY);
        phases.append(&mut self.phases);
        self.phases = phases;
        self.queue_phases([]);
    }

    /// Written: the next phases go at once.
    pub fn phases_written(&mut self) {
        self.phases_next_try = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(reason: &'static str) -> UnsentEvent {
        UnsentEvent {
            event: NodeEvent {
                warning: false,
                reason,
                note: format!("{reason} note"),
            },
            uid: Some("uid-1".into()),
            tries: 0,
        }
    }

    #[test]
    fn a_failed_event_waits_then_is_tried_until_it_has_had_its_tries() {
        let mut u = Unsent::default();
        let mut now = Instant::now();
        u.queue_events([event("Cordon"), event("Drain")]);
        for n in 1..EVENT_TRIES {
            let e = u.next_event(now).expect("due");
            assert_eq!(e.event.reason, "Cordon");
            u.event_failed(e, now);
            // Neither it nor the one behind it before the wait is over.
            assert_eq!(u.next_event(now + EVENT_RETRY / 2), None, "after try {n}");
            now += EVENT_RETRY;
        }
        let last = u.next_event(now).expect("due");
        assert_eq!(last.tries, EVENT_TRIES - 1);
        u.event_failed(last, now);
        now += EVENT_RETRY;
        let next = u.next_event(now).expect("the one behind it");
        assert_eq!((next.event.reason, next.tries), ("Drain", 0));
        assert!(
            u.is_empty(),
            "the {EVENT_TRIES}th failed try of Cordon was its last"
        );
    }

    #[test]
    fn events_keep_their_order_and_the_oldest_give_way() {
        let mut u = Unsent::default();
        let reasons: Vec<&'static str> = (0..KEPT + 3).map(|i| &*format!("R{i}").leak()).collect();
        u.queue_events(reasons.iter().map(|r| event(r)));
        let now = Instant::now();
        let kept: Vec<_> = std::iter::from_fn(|| u.next_event(now))
            .map(|e| e.event.reason)
            .collect();
        assert_eq!(kept, reasons[3..].to_vec());
        assert!(u.is_empty());
    }

    #[test]
    fn failed_phases_wait_and_keep_the_newest_in_order() {
        let phase = |i: usize| Phase {
            parent: mco_render::api::Condition {
                type_: format!("Phase{i}"),
                status: "True".into(),
                ..Default::default()
            },
            child: None,
        };
        let mut u = Unsent::default();
        let now = Instant::now();
        u.queue_phases((0..3).map(phase));
        let tried = u.take_phases(now);
        assert_eq!(tried.len(), 3);
        u.phases_failed(tried, now);
        // Queued while they wait: behind them, nothing handed out before the wait is over.
        u.queue_phases((3..KEPT + 5).map(phase));
        assert_eq!(u.take_phases(now + EVENT_RETRY / 2), Vec::new());
        let all = u.take_phases(now + EVENT_RETRY);
        assert_eq!(all, (5..KEPT + 5).map(phase).collect::<Vec<_>>());
        u.phases_written();
        assert!(u.is_empty());
        u.queue_phases([phase(0)]);
        assert_eq!(u.take_phases(now), vec![phase(0)], "written: no wait");
    }

    #[test]
    fn only_an_answer_that_may_change_is_transient() {
        let status = |code| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                ..Default::default()
            }))
        };
        assert!(transient(&status(429)));
        assert!(transient(&status(500)));
        assert!(transient(&status(503)));
        assert!(!transient(&status(403)));
        assert!(!transient(&status(422)));
        assert!(transient(&kube::Error::Service(
            "connection refused".into()
        )));
    }
}
