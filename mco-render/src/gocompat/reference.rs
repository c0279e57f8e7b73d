//! Image references as Go's `containers/image/docker/reference.ParseNamed` reads them: a
//! fully qualified name (a registry host first), an optional tag, an optional digest, and
//! nothing left to normalise.

/// A parsed, canonical image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// `host[:port]/path`, without tag or digest.
    pub name: String,
    /// The tag, when given.
    pub tag: Option<String>,
    /// The digest (`algorithm:hex`), when given.
    pub digest: Option<String>,
}

impl Named {
    /// The reference as written: name, `:tag`, `@digest`.
    pub fn to_string_full(&self) -> String {
        let mut s = self.name.clone();
        if let Some(t) = &self.tag {
            s.push(':');
            s.push_str(t);
        }
        if let Some(d) = &self.digest {
            s.push('@');
            s.push_str(d);
        }
        s
    }
}

fn is_alnum_lower(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// A path component: lower-case alphanumeric runs joined by `.`, `_`, `__` or dashes.
pub fn valid_path_component(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !is_alnum_lower(b[0]) || !is_alnum_lower(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if is_alnum_lower(b[i]) {
            i += 1;
            continue;
        }
        // A separator run, then an alphanumeric.
        let start = i;
        while i < b.len() && !is_alnum_lower(b[i]) {
            i += 1;
        }
        let sep = &s[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|c| c == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// A host name component: alphanumerics with inner dashes.
fn valid_domain_component(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
}

/// A registry host: dot-separated components and an optional numeric port.
pub fn valid_domain(s: &str) -> bool {
    let (host, port) = match s.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    if let Some(p) = port {
        if p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()) {
            return false;
        }
    }
    host.split('.').all(valid_domain_component)
}

fn valid_tag(s: &str) -> bool {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && word(b[0])
        && b.iter().all(|c| word(*c) || *c == b'.' || *c == b'-')
}

fn valid_digest(s: &str) -> bool {
    let Some((alg, hex)) = s.split_once(':') else {
        return false;
    };
    let hex_len = match alg {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == hex_len
        && hex
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// Go's `reference.ParseNamed`: `None` when the text is not a valid reference or not in
/// canonical form (no registry host, `docker.io/<name>` without a namespace, upper case).
pub fn parse_named(s: &str) -> Option<Named> {
    if s.len() == 64
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    {
        return None;
    }
    let (name_tag, digest) = match s.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (s, None),
    };
    if let Some(d) = digest {
        if !valid_digest(d) {
            return None;
        }
    }
    let last_slash = name_tag.rfind('/');
    let (name, tag) = match name_tag.rfind(':') {
        Some(i) if last_slash.is_none_or(|j| i > j) => (&name_tag[..i], Some(&name_tag[i + 1..])),
        _ => (name_tag, None),
    };
    if let Some(t) = tag {
        if !valid_tag(t) {
            return None;
        }
    }
    let (domain, path) = name.split_once('/')?;
    if !(domain.contains(['.', ':']) || domain == "localhost") {
        return None;
    }
    if domain == "index.docker.io" || (domain == "docker.io" && !path.contains('/')) {
        return None;
    }
    if !valid_domain(domain) || !path.split('/').all(valid_path_component) {
        return None;
    }
    if name.len() > 255 {
        return None;
    }
    Some(Named {
        name: name.to_string(),
        tag: tag.map(str::to_string),
        digest: digest.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_references_parse() {
        let r = parse_named("quay.io/openshift-release-dev/ocp-release@sha256:8a6cebd5fdb21a9df26b749d6a0c8c1da4e2d1c6b8370f61ac1b6cd0b3048fce");
        assert_eq!(
            r.map(|r| r.name),
            Some("quay.io/openshift-release-dev/ocp-release".to_string())
        );
        let r = parse_named("mirror.example.net:5000/ocp/release:4.21.0-0.nightly");
        assert_eq!(r.and_then(|r| r.tag), Some("4.21.0-0.nightly".to_string()));
    }

    #[test]
    fn bad_references_fail() {
        for s in [
            "quay.io/ocp/release:4.21.0 x86_64",
            "ocp/release:1",
            "release",
            "docker.io/busybox",
            "quay.io/Upper/x",
            "quay.io/x@sha256:abc",
            "quay.io//x",
            "",
        ] {
            assert_eq!(parse_named(s), None, "{s}");
        }
    }

    #[test]
    fn path_components() {
        assert!(valid_path_component("a-b__c.d_e"));
        assert!(valid_path_component("a---b"));
        assert!(!valid_path_component("a._b"));
        assert!(!valid_path_component("-a"));
        assert!(!valid_path_component("a___b"));
    }
}
