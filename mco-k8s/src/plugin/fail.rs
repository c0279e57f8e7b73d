//! Failures worded as kubectl words them, so a message is recognised and searched for as
//! kubectl's: the server refusing the connection (`The connection to the server HOST:PORT was
//! refused - did you specify the right host or port?`), any other failure to reach it
//! (`Unable to connect to the server: CAUSE`, with Go's words for a name that does not
//! resolve, a timeout and the usual certificate errors), a login refused (`error: You must be
//! logged in to the server (Unauthorized)`), and what the API server answered
//! (`Error from server (REASON): MESSAGE`).

use std::error::Error as StdError;
use tokio_rustls::rustls;

/// A failure that ends a command, as the line it prints on standard error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Failure(pub String);

impl From<super::read::Unreadable> for Failure {
    fn from(e: super::read::Unreadable) -> Failure {
        Failure(format!("error: {e}"))
    }
}

/// The API server as kubectl names it in these messages: the host of its URL, with the port
/// when the URL has one.
pub fn server_name(url: &http::Uri) -> String {
    match url.authority() {
        // Without any user information (`user@host`).
        Some(a) => a.as_str().rsplit('@').next().unwrap_or("").to_string(),
        None => url.to_string(),
    }
}

/// The line kubectl prints for `e`, met talking to `server` (see [`server_name`]).
pub fn message(server: &str, e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => status_message(s),
        e => connection(server, e).unwrap_or_else(|| format!("error: {e}")),
    }
}

/// The line for a failure that is the connection's or the login's, which every request meets
/// alike (nothing was read: the server was not reached, or refused who is asking), rather
/// than one request's; `None` for the others.
pub fn connection(server: &str, e: &kube::Error) -> Option<String> {
    match e {
        kube::Error::Api(s) if s.code == 401 => Some(status_message(s)),
        kube::Error::Api(_) => None,
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => {
            Some(transport(server, e))
        }
        _ => None,
    }
}

/// What the API server answered, as kubectl prints a Status.
fn status_message(s: &kube::core::Status) -> String {
    let message = if s.message.is_empty() {
        s.reason.as_str()
    } else {
        s.message.as_str()
    };
    if s.code == 401 || s.reason == "Unauthorized" {
        return format!("error: You must be logged in to the server ({message})");
    }
    // A body that was no Status: kube-client names that in the reason, which is not the
    // server's.
    if s.reason.is_empty() || s.reason == "Failed to parse error data" {
        return format!("Error from server: {message}");
    }
    format!("Error from server ({}): {message}", s.reason)
}

/// `e` and every error under it, the error an `io::Error` wraps included (its `source` skips
/// it).
fn chain<'a>(e: &'a (dyn StdError + 'static)) -> Vec<&'a (dyn StdError + 'static)> {
    let mut out = Vec::new();
    let mut next = Some(e);
    while let Some(e) = next {
        out.push(e);
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        };
    }
    out
}

/// The host of `server`, without its port.
fn host(server: &str) -> &str {
    match server.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => server.rsplit_once(':').map_or(server, |(h, _)| h),
    }
}

/// Why the server was not reached, in kubectl's words.
fn transport(server: &str, e: &kube::Error) -> String {
    let errors = chain(e);
    let unable = |cause: String| format!("Unable to connect to the server: {cause}");
    for (i, e) in errors.iter().enumerate() {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return unable(tls_cause(tls));
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    return format!(
                        "The connection to the server {server} was refused - did you specify the right host or port?"
                    )
                }
                std::io::ErrorKind::TimedOut => {
                    return unable(format!("dial tcp {server}: i/o timeout"))
                }
                _ => {}
            }
        }
        // hyper-util's connector names a failed lookup so; the resolver's error follows.
        if e.to_string() == "dns error" {
            let why = errors
                .get(i + 1..)
                .and_then(|rest| rest.last())
                .map(|e| e.to_string())
                .unwrap_or_default();
            let not_found = ["Name or service not known", "No address associated"]
                .iter()
                .any(|s| why.contains(s))
                || why.contains("nodename nor servname");
            let why = if not_found || why.is_empty() {
                "no such host".to_string()
            } else {
                why
            };
            return unable(format!("dial tcp: lookup {}: {why}", host(server)));
        }
    }
    let deepest = errors
        .last()
        .map(|e| e.to_string())
        .unwrap_or_else(|| e.to_string());
    unable(deepest)
}

/// A TLS failure in Go's words where it has some.
fn tls_cause(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    let verify = |why: &str| format!("tls: failed to verify certificate: x509: {why}");
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::UnknownIssuer => verify("certificate signed by unknown authority"),
            C::NotValidForNameContext {
                expected,
                presented,
            } => verify(&format!(
                "certificate is valid for {}, not {}",
                presented.join(", "),
                expected.to_str()
            )),
            C::NotValidForName => verify("certificate is not valid for the server's name"),
            C::Expired
            | C::ExpiredContext { .. }
            | C::NotValidYet
            | C::NotValidYetContext { .. } => verify("certificate has expired or is not yet valid"),
            c => verify(&format!("{c:?}")),
        },
        rustls::Error::InvalidMessage(_) => {
            "tls: first record does not look like a TLS handshake".to_string()
        }
        e => format!("tls: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure(message, reason).with_code(code),
        ))
    }

    fn service(e: impl StdError + Send + Sync + 'static) -> kube::Error {
        kube::Error::Service(Box::new(e))
    }

    /// An error wrapping another, as hyper-util's connector wraps the socket's.
    #[derive(Debug)]
    struct Wrap(&'static str, Box<dyn StdError + Send + Sync>);

    impl std::fmt::Display for Wrap {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl StdError for Wrap {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&*self.1)
        }
    }

    #[test]
    fn the_server_is_named_by_host_and_port_as_written() {
        let name = |u: &str| server_name(&u.parse().unwrap());
        assert_eq!(name("https://127.0.0.1:6443"), "127.0.0.1:6443");
        assert_eq!(name("https://api.example.com"), "api.example.com");
        assert_eq!(name("https://me@[::1]:6443/"), "[::1]:6443");
        assert_eq!(host("[::1]:6443"), "::1");
        assert_eq!(host("api.example.com:6443"), "api.example.com");
    }

    #[test]
    fn answers_of_the_server_read_as_kubectl_prints_them() {
        let s = "127.0.0.1:6443";
        let unauthorized = api(401, "Unauthorized", "Unauthorized");
        assert_eq!(
            message(s, &unauthorized),
            "error: You must be logged in to the server (Unauthorized)"
        );
        assert_eq!(
            connection(s, &unauthorized).as_deref(),
            Some("error: You must be logged in to the server (Unauthorized)")
        );
        let forbidden = api(
            403,
            "Forbidden",
            "nodes is forbidden: User \"dev\" cannot list resource \"nodes\" in API group \"\" at the cluster scope",
        );
        assert_eq!(
            message(s, &forbidden),
            "Error from server (Forbidden): nodes is forbidden: User \"dev\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
        );
        assert_eq!(connection(s, &forbidden), None);
        assert_eq!(
            message(s, &api(502, "Failed to parse error data", "Bad Gateway")),
            "Error from server: Bad Gateway"
        );
    }

    #[test]
    fn failures_to_reach_the_server_read_as_kubectl_prints_them() {
        let s = "127.0.0.1:6443";
        let refused = service(Wrap(
            "client error (Connect)",
            Box::new(Wrap(
                "tcp connect error",
                Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
            )),
        ));
        assert_eq!(
            connection(s, &refused).as_deref(),
            Some("The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?")
        );
        let lookup = service(Wrap(
            "client error (Connect)",
            Box::new(Wrap(
                "dns error",
                Box::new(std::io::Error::other(
                    "failed to lookup address information: Name or service not known",
                )),
            )),
        ));
        assert_eq!(
            message("nowhere.invalid:6443", &lookup),
            "Unable to connect to the server: dial tcp: lookup nowhere.invalid: no such host"
        );
        let timeout = service(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!(
            message(s, &timeout),
            "Unable to connect to the server: dial tcp 127.0.0.1:6443: i/o timeout"
        );
        let unknown_ca = service(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        ));
        assert_eq!(
            message(s, &unknown_ca),
            "Unable to connect to the server: tls: failed to verify certificate: x509: certificate signed by unknown authority"
        );
        let other = service(Wrap(
            "client error",
            Box::new(Wrap("broken pipe", "x".into())),
        ));
        assert_eq!(message(s, &other), "Unable to connect to the server: x");
        let decode = kube::Error::LinesCodecMaxLineLengthExceeded;
        assert_eq!(connection(s, &decode), None);
        assert_eq!(
            message(s, &decode),
            "error: Error finding newline character"
        );
    }
}
