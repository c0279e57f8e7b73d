//! Reading what `status` needs, once: a LIST per kind ([`Source`]), all at once. A kind the
//! server does not serve (404) or the caller may not list (403) is noted and left out; the
//! view is drawn without it. Without pools, Nodes or MachineConfigs there is no view.

use super::fail::{self, Failure};
use futures::future::join_all;
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::{Api, Client};
use mco_render::status::{sources::unread_note, Cluster, Source, Unread};
use serde_json::Value;

/// How kube-rs addresses a kind.
pub fn api_resource(s: Source) -> ApiResource {
    let served = s.served();
    ApiResource {
        group: served.group.into(),
        version: served.version.into(),
        api_version: served.api_version(),
        kind: served.kind.into(),
        plural: served.plural.into(),
    }
}

/// The API of a kind: cluster-wide, or the one namespace it is read in.
pub fn api(client: &Client, s: Source) -> Api<DynamicObject> {
    let ar = api_resource(s);
    match s.served().namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// What an API error means for a kind: not served, forbidden, or another failure (in
/// kubectl's words, [`fail::message`], met talking to `server`).
pub fn classify(server: &str, e: &kube::Error) -> Unread {
    match e {
        kube::Error::Api(s) if s.code == 404 => Unread::NotServed,
        kube::Error::Api(s) if s.code == 403 => Unread::Forbidden,
        e => Unread::Failed(fail::message(server, e)),
    }
}

/// A required kind could not be read: there is no view.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

/// Objects as the core reads them, sorted by namespace and name (the API server's LIST
/// order, which a watch cache does not keep).
pub fn values<'a>(objects: impl IntoIterator<Item = &'a DynamicObject>) -> Vec<Value> {
    let mut v: Vec<(Option<String>, Option<String>, Value)> = objects
        .into_iter()
        .filter_map(|o| {
            let v = serde_json::to_value(o).ok()?;
            Some((o.metadata.namespace.clone(), o.metadata.name.clone(), v))
        })
        .collect();
    v.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    v.into_iter().map(|(_, _, v)| v).collect()
}

/// The cluster from each kind's objects or why it could not be read. A required kind that
/// could not be read is an error.
pub fn assemble(kinds: Vec<(Source, Result<Vec<Value>, Unread>)>) -> Result<Cluster, Unreadable> {
    let mut listed = Vec::new();
    let mut unread = Vec::new();
    for (s, r) in kinds {
        match r {
            Ok(items) => listed.push((s, items)),
            Err(why) if s.required() => return Err(Unreadable(unread_note(s, &why))),
            Err(why) => unread.push((s, why)),
        }
    }
    let mut c = Cluster::from_sources(listed);
    for (s, why) in unread {
        c.mark_unread(s, &why);
    }
    Ok(c)
}

/// Lists `kinds` on `server`, all at once. A failure to reach the server, or a login it
/// refuses, ends the reading in kubectl's words ([`fail::connection`]): no kind was read.
pub async fn list(client: &Client, server: &str, kinds: &[Source]) -> Result<Cluster, Failure> {
    let lists = kinds.iter().map(|&s| async move {
        let r = api(client, s)
            .list(&ListParams::default())
            .await
            .map(|l| values(&l.items));
        (s, r)
    });
    let listed = join_all(lists).await;
    if let Some(line) = listed
        .iter()
        .find_map(|(_, r)| r.as_ref().err().and_then(|e| fail::connection(server, e)))
    {
        return Err(Failure(line));
    }
    let kinds = listed
        .into_iter()
        .map(|(s, r)| (s, r.map_err(|e| classify(server, &e))))
        .collect();
    Ok(assemble(kinds)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure("no", "x").with_code(code),
        ))
    }

    #[test]
    fn errors_read_as_not_served_forbidden_or_failed() {
        let s = "127.0.0.1:6443";
        assert_eq!(classify(s, &status(404)), Unread::NotServed);
        assert_eq!(classify(s, &status(403)), Unread::Forbidden);
        assert_eq!(
            classify(s, &status(500)),
            Unread::Failed("Error from server (x): no".into())
        );
    }

    #[test]
    fn optional_kinds_are_noted_and_required_ones_stop_the_view() {
        let c = match assemble(vec![
            (Source::Pools, Ok(vec![])),
            (Source::Nodes, Ok(vec![])),
            (Source::MachineConfigs, Ok(vec![])),
            (Source::DisruptionBudgets, Err(Unread::Forbidden)),
            (Source::MachineConfigurations, Err(Unread::NotServed)),
        ]) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            c.unread,
            vec![
                "PodDisruptionBudgets (poddisruptionbudgets.policy) listing them is forbidden: blocked drains are explained without the budgets and pods in their way".to_string(),
                "MachineConfigurations (machineconfigurations.operator.openshift.io) not served by the API server: disruptions are computed with the built-in node disruption policies".to_string(),
            ]
        );
        let e = match assemble(vec![(Source::Nodes, Err(Unread::Forbidden))]) {
            Ok(_) => panic!("a view without Nodes"),
            Err(e) => e.to_string(),
        };
        assert_eq!(
            e,
            "Nodes (nodes) listing them is forbidden: no node can be shown"
        );
    }
}
