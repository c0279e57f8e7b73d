//! `kubectl mco status --watch`: a watch per kind (kube-runtime's watcher feeding a reflector
//! store), and a frame ([`mco_render::status::frame`]) drawn from the stores whenever one
//! changes, at most once per `--min-interval`, and every [`CLOCK`] for the durations. A kind
//! the server does not serve or the caller may not list (its first LIST answered 404 or 403)
//! is not watched, and one whose watch is refused so later is shown as last seen; the frame
//! says so. A frame the same as the last is not drawn again. No polling of the API server: after the first LIST of
//! each kind, only WATCHes (and a re-LIST when a watch's resourceVersion expires).

use super::read::{api, api_resource, assemble, classify, values, Unreadable};
use futures::StreamExt;
use kube::api::DynamicObject;
use kube::runtime::reflector::{self, store::Writer, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::Client;
use mco_render::status::frame::{frame, Frame};
use mco_render::status::sources::unread_note;
use mco_render::status::{check_pools, Cluster, Options, Source, Unread};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How often a frame is drawn without any change, for its durations and estimates.
pub const CLOCK: Duration = Duration::from_secs(30);

/// How long the first frame waits for kinds that neither list nor fail for good (a server
/// answering 500s): then it is drawn without them.
pub const FIRST_FRAME_WAIT: Duration = Duration::from_secs(20);

/// Where one kind's watch stands.
#[derive(Debug, Clone)]
enum State {
    /// Not listed yet; the last error, if any.
    Listing(Option<String>),
    /// Listed; its store follows the watch. Once the watch is refused for good (404, 403),
    /// why: the store keeps what was last seen.
    Ready(Option<Unread>),
    /// Not served, or forbidden: not watched.
    Unread(Unread),
}

/// One kind's watch.
struct Kind {
    source: Source,
    store: Store<DynamicObject>,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Kind {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a watch error means before the kind listed (in kubectl's words, met talking to
/// `server`).
fn classify_watch(server: &str, e: &watcher::Error) -> Unread {
    match e {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => classify(server, e),
        watcher::Error::WatchError(s) if s.code == 404 => Unread::NotServed,
        watcher::Error::WatchError(s) if s.code == 403 => Unread::Forbidden,
        e => Unread::Failed(e.to_string()),
    }
}

/// Starts watching `source`, notifying `changed` after each change to its store.
fn start(client: &Client, server: &str, source: Source, changed: Arc<Notify>) -> Kind {
    let writer: Writer<DynamicObject> = Writer::new(api_resource(source));
    let store = writer.as_reader();
    let state = Arc::new(Mutex::new(State::Listing(None)));
    let stream = reflector::reflector(
        writer,
        watcher::watcher(api(client, source), watcher::Config::default()).default_backoff(),
    );
    let st = state.clone();
    let server = server.to_string();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(watcher::Event::InitDone) => {
                    *lock(&st) = State::Ready(None);
                    changed.notify_one();
                }
                Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => changed.notify_one(),
                Ok(_) => {}
                Err(e) => {
                    let mut s = lock(&st);
                    if let State::Ready(refused) = &mut *s {
                        // A dropped watch: the backoff retries it; the store stays as it was.
                        // Refused for good, the frame says the kind is shown as last seen.
                        let why = classify_watch(&server, &e);
                        if !matches!(why, Unread::Failed(_)) && refused.as_ref() != Some(&why) {
                            *refused = Some(why);
                            drop(s);
                            changed.notify_one();
                        }
                        continue;
                    }
                    match classify_watch(&server, &e) {
                        Unread::Failed(why) => *s = State::Listing(Some(why)),
                        why => {
                            *s = State::Unread(why);
                            drop(s);
                            changed.notify_one();
                            return;
                        }
                    }
                }
            }
        }
    });
    Kind {
        source,
        store,
        state,
        task,
    }
}

/// Whether every kind listed or failed for good; with `required_only`, the required ones.
fn settled(kinds: &[Kind], required_only: bool) -> bool {
    kinds
        .iter()
        .filter(|k| !required_only || k.source.required())
        .all(|k| !matches!(*lock(&k.state), State::Listing(_)))
}

/// The cluster the stores hold now.
fn snapshot(kinds: &[Kind]) -> Result<Cluster, Unreadable> {
    let mut stale = Vec::new();
    let v = kinds
        .iter()
        .map(|k| {
            let state = lock(&k.state).clone();
            let r = match state {
                State::Ready(refused) => {
                    if let Some(why) = refused {
                        stale.push(format!(
                            "{} (shown as last seen)",
                            unread_note(k.source, &why)
                        ));
                    }
                    Ok(values(k.store.state().iter().map(|o| o.as_ref())))
                }
                State::Unread(why) => Err(why),
                State::Listing(e) => Err(Unread::Failed(match e {
                    Some(e) => format!("not listed yet: {e}"),
                    None => "not listed yet".into(),
                })),
            };
            (k.source, r)
        })
        .collect();
    let mut c = assemble(v)?;
    c.unread.extend(stale);
    Ok(c)
}

/// Why the required kinds are not listed yet: each error once, after the kinds that met it
/// (`MachineConfigPools, Nodes: The connection to the server ... was refused ...`).
fn waiting_line(kinds: &[Kind]) -> String {
    let mut by_error: Vec<(String, Vec<&str>)> = Vec::new();
    for k in kinds.iter().filter(|k| k.source.required()) {
        if let State::Listing(Some(e)) = &*lock(&k.state) {
            match by_error.iter_mut().find(|(seen, _)| seen == e) {
                Some((_, labels)) => labels.push(k.source.label()),
                None => by_error.push((e.clone(), vec![k.source.label()])),
            }
        }
    }
    by_error
        .iter()
        .map(|(e, labels)| format!("{}: {e}", labels.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// How the watch runs.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// The least time between two frames.
    pub min_interval: Duration,
    /// Stop (exit 0) once every pool is Completed and nothing is stuck or waiting.
    pub exit_when_done: bool,
    /// Clear the screen before each frame (a terminal); otherwise frames follow each other.
    pub clear: bool,
    /// How much of each pool the frames show.
    pub text: mco_render::status::render::TextOptions,
    /// With `exit_when_done`: give up after this long ([`TIMED_OUT`]), whether the cluster
    /// could not be read or its pools are not done.
    pub timeout: Option<Duration>,
}

/// The exit status when `--timeout` passed first.
pub const TIMED_OUT: i32 = 3;

/// `--timeout`'s value as it was given (Go's `time.Duration` text, as kubectl takes it).
fn go_text(d: Duration) -> String {
    mco_render::gocompat::duration::format_duration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Where the frames go.
pub trait Screen {
    /// Draws one frame; an error ends the watch (standard output closed).
    fn draw(&mut self, f: &Frame, clear: bool) -> std::io::Result<()>;
}

impl<W: std::io::Write> Screen for W {
    fn draw(&mut self, f: &Frame, clear: bool) -> std::io::Result<()> {
        if clear {
            self.write_all(b"\x1b[H\x1b[2J")?;
        } else {
            self.write_all(b"\n")?;
        }
        self.write_all(f.text.as_bytes())?;
        self.flush()
    }
}

/// Watches the cluster (`client`, talking to `server`) and draws a frame per change until
/// stopped; returns the exit status (0 when `exit_when_done` saw every pool done, 2 when a
/// required kind cannot be read, the pool asked for is not there at first, or the screen
/// closed, [`TIMED_OUT`] when `timeout` passed first).
pub async fn run(
    client: &Client,
    server: &str,
    opts: &Options,
    now: impl Fn() -> jiff::Timestamp,
    w: &WatchOptions,
    screen: &mut dyn Screen,
) -> i32 {
    let changed = Arc::new(Notify::new());
    let kinds: Vec<Kind> = Source::ALL
        .iter()
        .map(|&s| start(client, server, s, changed.clone()))
        .collect();
    let deadline = w.timeout.map(|t| Instant::now() + t);
    // Never, without a timeout.
    let until_deadline = || async move {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    // The first frame: once every kind listed or failed for good (the required ones
    // however long that takes, the others for a while).
    let started = Instant::now();
    let mut told = String::new();
    while !(settled(&kinds, true)
        && (settled(&kinds, false) || started.elapsed() >= FIRST_FRAME_WAIT))
    {
        let line = waiting_line(&kinds);
        if !line.is_empty() && line != told {
            eprintln!("waiting: {line}");
            told = line;
        }
        tokio::select! {
            _ = changed.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = until_deadline() => {
                let t = go_text(w.timeout.unwrap_or_default());
                match told.as_str() {
                    "" => eprintln!("error: timed out after {t}: the cluster was not read"),
                    why => eprintln!("error: timed out after {t}: the cluster was not read: {why}"),
                }
                return TIMED_OUT;
            }
        }
    }
    let mut last: Option<Instant> = None;
    let mut drawn = String::new();
    loop {
        if let Some(l) = last {
            tokio::time::sleep_until(l + w.min_interval).await;
        }
        let c = match snapshot(&kinds) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        };
        if last.is_none() {
            if let Err(e) = check_pools(&c, opts.pool.as_deref()) {
                eprintln!("error: {e}");
                return 2;
            }
        }
        let mut o = opts.clone();
        o.now = now();
        let f = frame(&c, &o, &w.text);
        // The same frame again (a change that shows nothing, a fixed --now) is not drawn.
        if f.text != drawn {
            if let Err(e) = screen.draw(&f, w.clear) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    eprintln!("error: writing the frame: {e}");
                }
                return 2;
            }
            drawn = f.text.clone();
        }
        last = Some(Instant::now());
        if w.exit_when_done && f.done() {
            return 0;
        }
        tokio::select! {
            _ = changed.notified() => {}
            _ = tokio::time::sleep(CLOCK) => {}
            _ = until_deadline() => {
                let t = go_text(w.timeout.unwrap_or_default());
                eprintln!("error: timed out after {t}: not every pool is done");
                return TIMED_OUT;
            }
        }
    }
}
