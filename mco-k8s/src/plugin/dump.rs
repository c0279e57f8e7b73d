//! `kubectl mco dump DIR`: the dump `mco-render status`, `schedule` and `--cluster-dir` read,
//! taken from the live cluster. Per kind `status` reads ([`Source::ALL`]), the LIST that
//! `kubectl get RESOURCE -o yaml` prints (a `v1` `List`, each item with its `apiVersion` and
//! `kind`), into `DIR/<plural>.yaml`: the files of the commands in `docs/src/cluster-dump.md`.
//! A kind not served or not listable is named with what a view of the dump misses, and has no
//! file.

use super::connect::Connected;
use super::fail::{self, Failure};
use super::read::{api, values};
use futures::future::join_all;
use kube::api::ListParams;
use mco_render::status::sources::unread_note;
use mco_render::status::Source;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// What `kubectl get -o yaml` prints for `items` of `source`'s kind.
pub fn list_of(source: Source, items: Vec<Value>) -> Value {
    let served = source.served();
    let items: Vec<Value> = items
        .into_iter()
        .map(|mut v| {
            if let Some(o) = v.as_object_mut() {
                // A LIST's items carry no type; kubectl's output does, and the dump's reader
                // needs it.
                o.entry("apiVersion")
                    .or_insert_with(|| Value::String(served.api_version()));
                o.entry("kind")
                    .or_insert_with(|| Value::String(served.kind.to_string()));
            }
            v
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "items": items,
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    })
}

/// Writes the dump into `dir` (made if missing), saying each file on `out`; returns the exit
/// status: 0, or 2 when the cluster cannot be read (a required kind, the connection, a login)
/// or a file cannot be written.
pub async fn run(to: &Connected, dir: &Path, out: &mut dyn Write) -> i32 {
    let lists = Source::ALL.iter().map(|&s| async move {
        let r = api(&to.client, s).list(&ListParams::default()).await;
        (s, r)
    });
    let listed = join_all(lists).await;
    if let Some(line) = listed.iter().find_map(|(_, r)| {
        r.as_ref()
            .err()
            .and_then(|e| fail::connection(&to.server, e))
    }) {
        eprintln!("{}", Failure(line));
        return 2;
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("error: {}: {e}", dir.display());
        return 2;
    }
    let mut code = 0;
    for (s, r) in listed {
        let items = match r {
            Ok(l) => values(&l.items),
            Err(e) => {
                let why = super::read::classify(&to.server, &e);
                let note = unread_note(s, &why);
                if s.required() {
                    eprintln!("error: {note}");
                    code = 2;
                } else {
                    eprintln!("warning: {note}");
                }
                continue;
            }
        };
        let path = dir.join(format!("{}.yaml", s.served().plural));
        let n = items.len();
        let text = match serde_yaml_ng::to_string(&list_of(s, items)) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                code = 2;
                continue;
            }
        };
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("error: {}: {e}", path.display());
            code = 2;
            continue;
        }
        let noun = if n == 1 { "object" } else { "objects" };
        if writeln!(out, "{} ({n} {noun})", path.display()).is_err() {
            return 2;
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_get_their_type_as_kubectl_prints_them() {
        let l = list_of(
            Source::Jobs,
            vec![
                json!({"metadata": {"name": "build"}}),
                json!({"kind": "Job", "apiVersion": "batch/v1"}),
            ],
        );
        assert_eq!(l["kind"], "List");
        assert_eq!(l["items"][0]["apiVersion"], "batch/v1");
        assert_eq!(l["items"][0]["kind"], "Job");
        assert_eq!(l["items"][1]["kind"], "Job");
    }
}
