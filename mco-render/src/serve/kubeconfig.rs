//! The kubelet bootstrap kubeconfig the server hands to new machines, in the YAML form upstream
//! writes (its kubeconfig object through JSON and then YAML: keys sorted, block style).

use base64::Engine as _;

/// The kubeconfig a new machine's kubelet uses to bootstrap: one cluster `local` at `server`
/// trusting `ca` (left out when empty), one user `kubelet` with `token`, context `kubelet`.
pub fn bootstrap_kubeconfig(server: &str, ca: &[u8], token: &str) -> String {
    let mut out = String::with_capacity(256 + ca.len() * 2);
    out.push_str("clusters:\n- cluster:\n");
    if !ca.is_empty() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(ca);
        out.push_str(&format!(
            "    certificate-authority-data: {}\n",
            scalar(&b64)
        ));
    }
    out.push_str(&format!("    server: {}\n", scalar(server)));
    out.push_str("  name: local\n");
    out.push_str("contexts:\n- context:\n    cluster: local\n    user: kubelet\n  name: kubelet\n");
    out.push_str("current-context: kubelet\n");
    out.push_str("preferences: {}\n");
    out.push_str("users:\n- name: kubelet\n  user:\n");
    out.push_str(&format!("    token: {}\n", scalar(token)));
    out
}

/// Words YAML 1.1 reads as booleans or null.
const SPECIAL_WORDS: [&str; 22] = [
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
    "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
];

/// Whether a plain scalar would read back as something other than this string.
fn resolves_to_non_string(s: &str) -> bool {
    if s.is_empty() || matches!(s, "~" | "null" | "Null" | "NULL") || SPECIAL_WORDS.contains(&s) {
        return true;
    }
    let first = s.as_bytes()[0];
    let numberish = first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.');
    numberish
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() || b"xXoObB._+-:".contains(&b) || b == b'i' || b == b'n')
}

/// Whether a string can be written as a plain block scalar.
fn plain_ok(s: &str) -> bool {
    let bytes = s.as_bytes();
    let Some(&first) = bytes.first() else {
        return false;
    };
    if b"-?:,[]{}#&*!|>'\"%@` ".contains(&first) || s.ends_with(' ') {
        return false;
    }
    if s.contains(": ") || s.contains(" #") || s.ends_with(':') {
        return false;
    }
    s.chars().all(|c| !c.is_control() && c != '\u{feff}')
}

/// A string as YAML writes it: plain when safe, double-quoted when it would read as another
/// type or holds control characters, single-quoted otherwise.
fn scalar(s: &str) -> String {
    if resolves_to_non_string(s) || s.chars().any(char::is_control) {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    } else if plain_ok(s) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_upstream_shape() {
        let kc = bootstrap_kubeconfig("https://api-int.example.com:6443", b"CA", "abc.def");
        assert_eq!(
            kc,
            "clusters:\n- cluster:\n    certificate-authority-data: Q0E=\n    server: https://api-int.example.com:6443\n  name: local\ncontexts:\n- context:\n    cluster: local\n    user: kubelet\n  name: kubelet\ncurrent-context: kubelet\npreferences: {}\nusers:\n- name: kubelet\n  user:\n    token: abc.def\n"
        );
    }

    #[test]
    fn quotes_what_would_not_read_back_as_a_string() {
        assert_eq!(scalar("123"), "\"123\"");
        assert_eq!(scalar("true"), "\"true\"");
        assert_eq!(scalar(""), "\"\"");
        assert_eq!(scalar("- x"), "'- x'");
        assert_eq!(scalar("a: b"), "'a: b'");
        assert_eq!(scalar("eyJhbGci.x-y_z"), "eyJhbGci.x-y_z");
    }

    #[test]
    fn leaves_ca_out_when_empty() {
        let kc = bootstrap_kubeconfig("https://x:6443", b"", "t");
        assert!(!kc.contains("certificate-authority-data"));
    }
}
