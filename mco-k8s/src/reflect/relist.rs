//! How a watch retries ([`relisting`]): a kube-runtime watcher, started afresh (a LIST) at
//! once after a `410 Expired`, whether the server sent it as an ERROR event inside a WATCH's
//! stream (kube-apiserver's watch cache does, after a restart or a compaction) or as the
//! WATCH's answer; other failures retried on [`WatchRetry`]'s schedule, which starts again as
//! soon as the server answers. kube-runtime's own `default_backoff` waits after a `410` too,
//! on a delay that grew while the server was away (up to 30 s of acting from a stale store),
//! and its watcher retries a WATCH answered `410` from the same version for ever.

use futures::{Stream, StreamExt};
use kube::runtime::watcher;
use mco_render::controllers::backoff::{WatchFailure, WatchNext, WatchRetry};
use std::pin::Pin;
use std::time::Duration;

/// The HTTP status of an answered request inside a kube-client error; `None`: no answer.
fn answered(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Which [`WatchFailure`] a watcher error is; `None` for a `404` (the API not served), which
/// the caller waits for in its own way.
pub fn failure(e: &watcher::Error) -> Option<WatchFailure> {
    let code = match e {
        watcher::Error::WatchError(s) => Some(s.code),
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => answered(e),
        watcher::Error::NoResourceVersion => return Some(WatchFailure::Refused),
    };
    match code {
        Some(404) => None,
        Some(410) => Some(WatchFailure::Expired),
        Some(_) => Some(WatchFailure::Refused),
        None => Some(WatchFailure::Unreachable),
    }
}

type Events<K> = Pin<Box<dyn Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send>>;

struct State<K, F> {
    make: F,
    stream: Events<K>,
    retry: WatchRetry,
    wait: Option<Duration>,
}

/// The events of the watches `make` starts: the first one at once, a new one (which lists
/// first, its `Init` event first) after a `410`; each error is handed on, and the next event
/// is waited for after the error's delay (`retry`'s). Events from the server reset the
/// delays.
pub fn relisting<K, S, F>(
    retry: WatchRetry,
    mut make: F,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    F: FnMut() -> S + Send + 'static,
{
    let stream: Events<K> = make().boxed();
    let state = State {
        make,
        stream,
        retry,
        wait: None,
    };
    futures::stream::unfold(state, |mut st| async move {
        if let Some(d) = st.wait.take() {
            tokio::time::sleep(d).await;
        }
        let item = st.stream.next().await?;
        match &item {
            // The watcher's own marker before a LIST: nothing came from the server yet.
            Ok(watcher::Event::Init) => {}
            Ok(_) => st.retry.answered(),
            Err(e) => match failure(e) {
                None => st.retry.answered(),
                Some(f) => {
                    let next = st.retry.next(f);
                    if f == WatchFailure::Expired {
                        st.stream = (st.make)().boxed();
                    }
                    if let WatchNext::After(d) = next {
                        st.wait = Some(d);
                    }
                }
            },
        }
        Some((item, st))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn status(code: u16) -> Box<Status> {
        let mut s = Status::failure("gone", "Expired");
        s.code = code;
        Box::new(s)
    }

    #[test]
    fn a_410_in_the_stream_or_as_the_answer_is_expired() {
        assert_eq!(
            failure(&watcher::Error::WatchError(status(410))),
            Some(WatchFailure::Expired)
        );
        assert_eq!(
            failure(&watcher::Error::WatchStartFailed(kube::Error::Api(status(
                410
            )))),
            Some(WatchFailure::Expired)
        );
        assert_eq!(
            failure(&watcher::Error::WatchStartFailed(kube::Error::Api(status(
                403
            )))),
            Some(WatchFailure::Refused)
        );
        assert_eq!(failure(&watcher::Error::WatchError(status(404))), None);
    }

    #[tokio::test]
    async fn a_410_starts_a_new_watch_at_once_and_answers_reset_the_delays() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let started = Arc::new(AtomicUsize::new(0));
        let s = started.clone();
        let gone = || Err(watcher::Error::WatchError(status(410)));
        let events = relisting(WatchRetry::default(), move || {
            let n = s.fetch_add(1, Ordering::SeqCst);
            let items: Vec<Result<watcher::Event<String>, watcher::Error>> = if n == 0 {
                vec![Ok(watcher::Event::Init), gone()]
            } else {
                vec![Ok(watcher::Event::Init), Ok(watcher::Event::InitDone)]
            };
            futures::stream::iter(items)
        });
        let t0 = std::time::Instant::now();
        let got: Vec<_> = events.take(4).collect().await;
        assert!(matches!(got[1], Err(watcher::Error::WatchError(_))));
        assert!(matches!(got[3], Ok(watcher::Event::InitDone)));
        assert_eq!(started.load(Ordering::SeqCst), 2);
        // No delay: the 1 s of a first refusal would show.
        assert!(t0.elapsed() < Duration::from_millis(500));
    }
}
