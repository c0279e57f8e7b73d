//! The server's decisions as a pure function: a request's method, path, headers and client
//! address plus the served state give the status, headers and body. No sockets here.

use super::access::{constant_time_eq, AccessPolicy};
use super::content_coding;
use super::metrics::Metrics;
use super::served_state::ServedState;
use bytes::Bytes;
use mco_render::serve::accept;
use std::net::IpAddr;

/// The content type upstream serves configs with.
pub const CONFIG_CONTENT_TYPE: &str = "application/json";

/// The request facts the server looks at.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    /// The method, upper case.
    pub method: &'a str,
    /// The path, without the query.
    pub path: &'a str,
    /// The first `Accept` header value.
    pub accept: Option<&'a str>,
    /// Every `Accept-Encoding` header value, joined with commas (`None`: no such header).
    pub accept_encoding: Option<&'a str>,
    /// The first `If-None-Match` header value.
    pub if_none_match: Option<&'a str>,
    /// The first `Authorization` header value.
    pub authorization: Option<&'a str>,
    /// The client's address.
    pub client: Option<IpAddr>,
    /// Whether the request carries a body (none is accepted: only GET and HEAD are served).
    pub has_body: bool,
}

/// The longest path answered; longer ones get 414 (a pool name is at most 253 bytes).
pub const MAX_PATH_BYTES: usize = 1024;

/// What to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// Headers to send (`Content-Length` always among them).
    pub headers: Vec<(&'static str, String)>,
    /// The body (empty for HEAD).
    pub body: Bytes,
    /// Whether a cached config answered.
    pub cache_hit: bool,
    /// For the access log: the pool, the version served and why it failed, if it did.
    pub note: Note,
}

/// Details for the access log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Note {
    /// The pool asked for.
    pub pool: Option<String>,
    /// The rendered config served.
    pub rendered: Option<String>,
    /// The spec version negotiated.
    pub version: Option<String>,
    /// Why the request failed.
    pub error: Option<String>,
}

fn empty(status: u16, note: Note) -> Response {
    Response {
        status,
        headers: vec![("content-length", "0".into())],
        body: Bytes::new(),
        cache_hit: false,
        note,
    }
}

fn failure(status: u16, error: impl Into<String>) -> Response {
    empty(
        status,
        Note {
            error: Some(error.into()),
            ..Note::default()
        },
    )
}

/// Whether a pool name is one the server can hold: lower-case letters, digits and `-`.
pub fn valid_pool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Whether an `If-None-Match` value matches an entity tag.
fn etag_matches(if_none_match: &str, etag: &str) -> bool {
    if_none_match
        .split(',')
        .map(str::trim)
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag)
}

/// Decides the answer to a request.
pub fn respond(
    req: &Request<'_>,
    state: &ServedState,
    policy: &AccessPolicy,
    metrics: &Metrics,
) -> Response {
    let head = req.method == "HEAD";
    if req.method != "GET" && !head {
        let mut r = failure(405, "method not allowed");
        r.headers.push(("allow", "GET, HEAD".into()));
        return r;
    }
    if req.has_body {
        return failure(413, "request body not accepted");
    }
    if req.path.len() > MAX_PATH_BYTES {
        return failure(414, "path too long");
    }
    if req.path == "/healthz" {
        return empty(200, Note::default());
    }
    let pool = req.path.strip_prefix("/config/");
    if pool.is_none() && req.path != "/metrics" {
        return empty(404, Note::default());
    }
    if let Some(r) = check_access(req, policy) {
        return r;
    }
    let Some(pool) = pool else {
        let text = metrics.render(state.pools.len());
        return ok(
            head,
            "text/plain; version=0.0.4; charset=utf-8",
            Bytes::from(text),
            None,
            Note::default(),
        );
    };
    if pool.is_empty() || pool.contains('/') {
        return failure(404, "no pool in path");
    }
    let mut note = Note {
        pool: Some(pool.to_string()),
        ..Note::default()
    };
    if !valid_pool_name(pool) {
        note.error = Some("invalid pool name".into());
        return empty(400, note);
    }
    let version = match accept::negotiate_as(req.accept, state.profile.accept) {
        Ok(v) => v,
        Err(e) => {
            note.error = Some(e.to_string());
            return empty(400, note);
        }
    };
    note.version = Some(version.as_str().to_string());
    let entry = match state.pools.get(pool) {
        None => {
            note.error = Some("pool not found".into());
            return empty(404, note);
        }
        Some(Err(e)) => {
            note.error = Some(e.clone());
            return empty(500, note);
        }
        Some(Ok(entry)) => entry,
    };
    note.rendered = Some(entry.rendered_name.clone());
    let encoded = match entry.versions.get(&version) {
        Some(Ok(enc)) => enc,
        Some(Err(e)) => {
            note.error = Some(format!("couldn't get config: {e}"));
            return empty(500, note);
        }
        None => {
            note.error = Some("version not encoded".into());
            return empty(500, note);
        }
    };
    // The gzip form when the client prefers it and it is smaller; made once per body.
    let gzipped = if content_coding::prefers_gzip(req.accept_encoding) {
        encoded.gzipped(|| metrics.gzip_encoded())
    } else {
        None
    };
    let (body, etag) = match gzipped {
        Some(g) => (&g.body, &g.etag),
        None => (&encoded.body, &encoded.etag),
    };
    if req.if_none_match.is_some_and(|v| etag_matches(v, etag)) {
        return Response {
            status: 304,
            headers: vec![("etag", etag.clone()), vary()],
            body: Bytes::new(),
            cache_hit: true,
            note,
        };
    }
    let mut r = ok(head, CONFIG_CONTENT_TYPE, body.clone(), Some(etag), note);
    r.headers.push(vary());
    if gzipped.is_some() {
        r.headers.push(("content-encoding", "gzip".into()));
        if !head {
            metrics.gzip_sent();
        }
    }
    r.cache_hit = true;
    r
}

/// The request headers a config answer depends on: `Accept` picks the spec version,
/// `Accept-Encoding` the coding.
fn vary() -> (&'static str, String) {
    ("vary", "Accept, Accept-Encoding".into())
}

fn ok(head: bool, content_type: &str, body: Bytes, etag: Option<&str>, note: Note) -> Response {
    let mut headers = vec![
        ("content-length", body.len().to_string()),
        ("content-type", content_type.to_string()),
    ];
    if let Some(t) = etag {
        headers.push(("etag", t.to_string()));
    }
    Response {
        status: 200,
        headers,
        body: if head { Bytes::new() } else { body },
        cache_hit: false,
        note,
    }
}

/// The refusal for a request the access policy does not allow, if it does not.
fn check_access(req: &Request<'_>, policy: &AccessPolicy) -> Option<Response> {
    if !policy.allow.is_empty() {
        let allowed = req
            .client
            .is_some_and(|ip| policy.allow.iter().any(|c| c.contains(ip)));
        if !allowed {
            return Some(failure(403, "client address not allowed"));
        }
    }
    if let Some(token) = &policy.token {
        let given = req
            .authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .map(str::trim);
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes())) {
            let mut r = failure(401, "missing or wrong bearer token");
            r.headers.push(("www-authenticate", "Bearer".into()));
            return Some(r);
        }
    }
    None
}

#[cfg(test)]
mod tests;
