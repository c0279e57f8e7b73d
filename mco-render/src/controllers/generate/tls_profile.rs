//! TLS security profiles: the minimum version and cipher suites a profile stands for, with
//! the ciphers in the IANA names the kubelet takes.

use serde_json::Value;

use crate::api::value_at::{str_at, strings_at};
use crate::release::Profile;

/// The TLS 1.3 suites, which have the same name in OpenSSL and IANA terms.
const TLS13: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

const MODERN: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

const INTERMEDIATE: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
];

const OLD: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
    "ECDHE-ECDSA-AES128-SHA256",
    "ECDHE-RSA-AES128-SHA256",
    "ECDHE-ECDSA-AES128-SHA",
    "ECDHE-RSA-AES128-SHA",
    "ECDHE-ECDSA-AES256-SHA384",
    "ECDHE-RSA-AES256-SHA384",
    "ECDHE-ECDSA-AES256-SHA",
    "ECDHE-RSA-AES256-SHA",
    "AES128-GCM-SHA256",
    "AES256-GCM-SHA384",
    "AES128-SHA256",
    "AES256-SHA256",
    "AES128-SHA",
    "AES256-SHA",
    "DES-CBC3-SHA",
];

/// OpenSSL cipher name to the IANA name Go's TLS stack knows; others are dropped.
fn iana(openssl: &str) -> Option<&'static str> {
    Some(match openssl {
        "TLS_AES_128_GCM_SHA256" => "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384" => "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256" => "TLS_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-AES128-GCM-SHA256" => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256" => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384" => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384" => "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305" => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-RSA-CHACHA20-POLY1305" => "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-AES128-SHA256" => "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
        "ECDHE-RSA-AES128-SHA256" => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        "AES128-GCM-SHA256" => "TLS_RSA_WITH_AES_128_GCM_SHA256",
        "AES256-GCM-SHA384" => "TLS_RSA_WITH_AES_256_GCM_SHA384",
        "AES128-SHA256" => "TLS_RSA_WITH_AES_128_CBC_SHA256",
        "ECDHE-ECDSA-AES128-SHA" => "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        "ECDHE-RSA-AES128-SHA" => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        "ECDHE-ECDSA-AES256-SHA" => "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        "ECDHE-RSA-AES256-SHA" => "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        "AES128-SHA" => "TLS_RSA_WITH_AES_128_CBC_SHA",
        "AES256-SHA" => "TLS_RSA_WITH_AES_256_CBC_SHA",
        "DES-CBC3-SHA" => "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
        "ECDHE-RSA-DES-CBC3-SHA" => "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
        _ => return None,
    })
}

/// The minimum TLS version and IANA cipher suites of a `tlsSecurityProfile` object
/// (`None`: no profile, which means Intermediate), as the newest release converts them. A
/// Custom profile without its `custom` part, and an unknown type, fall back to Intermediate.
pub fn security_profile_ciphers(profile: Option<&Value>) -> (String, Vec<String>) {
    security_profile_ciphers_as(profile, &Profile::default())
}

/// [`security_profile_ciphers`] as `release` converts them: before 4.18 the TLS 1.3 suites
/// have no IANA name and are dropped ([`Profile::tls13_cipher_suites`]).
pub fn security_profile_ciphers_as(
    profile: Option<&Value>,
    release: &Profile,
) -> (String, Vec<String>) {
    let kind = profile
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        .unwrap_or(if profile.is_none() {
            "Intermediate"
        } else {
            ""
        });
    let (min, ciphers): (String, Vec<String>) = match kind {
        "Old" => ("VersionTLS10".into(), owned(OLD)),
        "Intermediate" => ("VersionTLS12".into(), owned(INTERMEDIATE)),
        "Modern" => ("VersionTLS13".into(), owned(MODERN)),
        "Custom" => match profile
            .and_then(|p| p.get("custom"))
            .filter(|c| !c.is_null())
        {
            Some(custom) => (
                str_at(custom, "/minTLSVersion").to_string(),
                strings_at(custom, "/ciphers"),
            ),
            None => ("VersionTLS12".into(), owned(INTERMEDIATE)),
        },
        _ => ("VersionTLS12".into(), owned(INTERMEDIATE)),
    };
    let ciphers = ciphers
        .iter()
        .filter(|c| release.tls13_cipher_suites || !TLS13.contains(&c.as_str()))
        .filter_map(|c| iana(c))
        .map(str::to_string)
        .collect();
    (min, ciphers)
}

fn owned(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}
