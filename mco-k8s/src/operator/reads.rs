//! Where a pass reads the cluster: the API server at once (a one-off pass,
//! [`super::Operator::sync_once`] without caches), or the watch caches
//! ([`super::caches::Caches`], the running operator). A kind or API the server does not serve
//! reads as empty either way.

use super::apply::{apply, Applied};
use super::caches::Caches;
use super::kinds::read_kind_info;
use super::OperatorError;
use kube::api::{DynamicObject, ListParams};
use kube::{Api, Client};
use serde_json::Value;

/// The source of a pass's reads.
#[derive(Clone, Copy)]
pub enum Reader<'a> {
    /// GETs and LISTs now.
    Api(&'a Client),
    /// The watch caches.
    Caches(&'a Caches),
}

fn api(
    client: &Client,
    kind: &str,
    namespace: Option<&str>,
) -> Result<Api<DynamicObject>, OperatorError> {
    let info = read_kind_info(kind).ok_or_else(|| OperatorError::UnknownKind(kind.to_string()))?;
    Ok(match namespace.filter(|_| info.namespaced) {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &info.resource),
        None => Api::all_with(client.clone(), &info.resource),
    })
}

fn encode(o: &DynamicObject) -> Result<Value, OperatorError> {
    serde_json::to_value(o).map_err(OperatorError::Encode)
}

impl Reader<'_> {
    /// The object `name` of `kind` (in `namespace` for a namespaced kind), if it exists.
    pub async fn get(
        &self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, OperatorError> {
        match self {
            Reader::Caches(c) => c.get(kind, namespace, name).await,
            Reader::Api(client) => match api(client, kind, namespace)?.get_opt(name).await {
                Ok(o) => o.as_ref().map(encode).transpose(),
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
                Err(e) => Err(e.into()),
            },
        }
    }

    /// Every object of `kind` (in `namespace` for a namespaced kind).
    pub async fn list(
        &self,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, OperatorError> {
        match self {
            Reader::Caches(c) => c.list(kind, namespace).await,
            Reader::Api(client) => {
                match api(client, kind, namespace)?
                    .list(&ListParams::default())
                    .await
                {
                    Ok(l) => l.items.iter().map(encode).collect(),
                    Err(kube::Error::Api(e)) if e.code == 404 => Ok(Vec::new()),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }

    /// Applies one desired object (through the caches: only when they say it differs).
    pub async fn apply(&self, client: &Client, desired: &Value) -> Result<Applied, OperatorError> {
        match self {
            Reader::Caches(c) => c.apply(client, desired).await,
            Reader::Api(_) => apply(client, desired).await,
        }
    }

    /// Every object of `kind`, decoded as `T` (an object that does not decode fails, named).
    pub async fn list_as<T: serde::de::DeserializeOwned>(
        &self,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<T>, OperatorError> {
        self.list(kind, namespace)
            .await?
            .into_iter()
            .map(|v| {
                let name = mco_render::api::value_at::str_at(&v, "/metadata/name").to_string();
                serde_json::from_value(v).map_err(|e| OperatorError::Decode {
                    kind: kind.to_string(),
                    name,
                    message: e.to_string(),
                })
            })
            .collect()
    }
}
