//! Carrying out a one-step action: read what the decision needs, print the decision (each
//! object, its patch as the kubectl command, what it does), ask unless told `--yes`, then send
//! each merge patch. The decision is [`mco_render::status::actions`]'.

use super::connect::Connected;
use super::fail;
use super::read::{api, list};
use kube::api::{Patch, PatchParams};
use mco_render::status::actions::{self, ActionError, Decision, Object};
use mco_render::status::{Cluster, Source};
use std::io::{BufRead, Write};

/// An action and its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verb {
    /// `resume POOL`.
    Resume(String),
    /// `rollback POOL`.
    Rollback(String),
    /// `retry NODE`.
    Retry(String),
    /// `force NODE`.
    Force(String),
}

impl Verb {
    /// What the decision reads.
    fn reads(&self) -> &'static [Source] {
        match self {
            Verb::Resume(_) | Verb::Rollback(_) => &[Source::Pools, Source::RolloutPolicies],
            Verb::Retry(_) | Verb::Force(_) => {
                &[Source::Pools, Source::Nodes, Source::RolloutPolicies]
            }
        }
    }

    /// The decision on `c` at `now`.
    pub fn decide(&self, c: &Cluster, now: jiff::Timestamp) -> Result<Decision, ActionError> {
        match self {
            Verb::Resume(p) => actions::resume(c, p, now),
            Verb::Rollback(p) => actions::rollback(c, p),
            Verb::Retry(n) => actions::retry(c, n),
            Verb::Force(n) => actions::force(c, n, now),
        }
    }
}

/// Exit status: written, or nothing needed writing.
pub const DONE: i32 = 0;
/// Exit status: the action does not apply, or the answer was no.
pub const NOT_DONE: i32 = 1;
/// Exit status: the cluster could not be read or written.
pub const FAILED: i32 = 2;

fn source_of(o: Object) -> Source {
    match o {
        Object::Pool => Source::Pools,
        Object::RolloutPolicy => Source::RolloutPolicies,
        Object::Node => Source::Nodes,
    }
}

/// The decision as printed before asking.
pub fn describe(d: &Decision) -> String {
    let mut out = String::new();
    for w in &d.writes {
        out.push_str(&format!(
            "{} {}: {}\n  {}\n",
            w.object.kind(),
            w.name,
            w.effect,
            w.kubectl()
        ));
    }
    for n in &d.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// Whether an answer is yes.
fn yes(answer: &str) -> bool {
    matches!(answer.trim().to_lowercase().as_str(), "y" | "yes")
}

/// Decides `verb` on the cluster as it is, prints it, asks on `input` unless `assume_yes`,
/// and writes. Returns the exit status.
pub async fn run(
    to: &Connected,
    verb: &Verb,
    now: jiff::Timestamp,
    assume_yes: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> i32 {
    let client = &to.client;
    let c = match list(client, &to.server, verb.reads()).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return FAILED;
        }
    };
    for n in &c.unread {
        eprintln!("warning: {n}");
    }
    let d = match verb.decide(&c, now) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return NOT_DONE;
        }
    };
    let shown = write!(out, "{}", describe(&d)).and_then(|()| out.flush());
    if shown.is_err() {
        return FAILED;
    }
    if d.writes.is_empty() {
        return DONE;
    }
    if !assume_yes {
        let question = if d.writes.len() == 1 {
            "Write it? [y/N]: "
        } else {
            "Write them? [y/N]: "
        };
        let _ = write!(out, "{question}").and_then(|()| out.flush());
        let mut answer = String::new();
        if input.read_line(&mut answer).is_err() || !yes(&answer) {
            let _ = writeln!(out, "\nNothing written.");
            return NOT_DONE;
        }
    }
    let params = PatchParams {
        field_manager: Some("kubectl-mco".into()),
        ..PatchParams::default()
    };
    for w in &d.writes {
        let patch = w.change.merge_patch();
        let target = format!("{}/{}", w.object.resource(), w.name);
        match api(client, source_of(w.object))
            .patch(&w.name, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                let _ = writeln!(out, "{target} patched");
            }
            Err(e) => {
                // kubectl's words; the server's message names the object.
                eprintln!("{}", fail::message(&to.server, &e));
                return FAILED;
            }
        }
    }
    DONE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        for a in ["y\n", "Y", "yes\n", " YES "] {
            assert!(yes(a), "{a:?}");
        }
        for a in ["", "\n", "n\n", "no", "yep", "oui"] {
            assert!(!yes(a), "{a:?}");
        }
    }
}
