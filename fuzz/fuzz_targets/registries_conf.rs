//! Arbitrary text as the container runtime's TOML and JSON files the controllers and the agent
//! read: registries.conf (the registries controller's decoder and encoder, the agent's strict
//! parser for its no-drain rule), storage.conf (the ContainerRuntimeConfig generator's rewrite)
//! and policy.json (the registries controller's rewrite). The first byte picks the file.
//!
//! registries.conf: what decodes is encoded and read back the same by both readers, the two
//! readers agree where both accept, and a file is a safe change from itself. The rewrites return
//! TOML and JSON that parse again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_render::api::registries_conf::RegistriesConf;
use mco_render::controllers::generate::crio::{update_storage_config, RuntimeSettings};
use mco_render::controllers::generate::registries::update_policy_json;
use mco_render::plan::registries::{is_safe_change, parse_registries_conf};

const RELEASE: &str = "quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000";

fn registries(text: &str) {
    let lenient = RegistriesConf::decode(text);
    let strict = parse_registries_conf(text.as_bytes());
    if let Err(e) = &strict {
        assert!(e.starts_with("toml: "), "strict error: {e}");
    }
    if let (Ok(a), Ok(b)) = (&lenient, &strict) {
        assert_eq!(a, b, "the two readers disagree");
    }
    let Ok(conf) = lenient else {
        return;
    };
    assert!(
        is_safe_change(&conf, &conf),
        "a file is a safe change from itself"
    );
    let encoded = conf.encode();
    let again = RegistriesConf::decode(&encoded)
        .unwrap_or_else(|e| panic!("the encoding decodes: {e}\n{encoded}"));
    assert_eq!(again, conf, "decode(encode) changed the file:\n{encoded}");
    let strict_again = parse_registries_conf(encoded.as_bytes())
        .unwrap_or_else(|e| panic!("the encoding parses strictly: {e}\n{encoded}"));
    assert_eq!(strict_again, conf);
}

fn storage(data: &[u8], additional: bool) {
    let settings = RuntimeSettings {
        overlay_size: mco_render::gocompat::quantity::Quantity::parse("10Gi").ok(),
        image_stores: vec!["/var/lib/images".into()],
        ..RuntimeSettings::default()
    };
    match update_storage_config(data, &settings, additional) {
        Ok(out) => {
            let text = String::from_utf8(out).expect("storage.conf is UTF-8");
            text.parse::<toml::Table>()
                .unwrap_or_else(|e| panic!("the rewritten storage.conf parses: {e}\n{text}"));
        }
        Err(e) => assert!(e.contains("error decoding crio config"), "{e}"),
    }
}

fn policy(data: &[u8], which: u8) {
    let blocked = vec!["blocked.example.com".to_string()];
    let allowed = vec!["allowed.example.com".to_string(), "quay.io".to_string()];
    let (b, a): (&[String], &[String]) = match which % 3 {
        0 => (&blocked, &[]),
        1 => (&[], &allowed),
        _ => (&blocked, &allowed),
    };
    if let Ok(out) = update_policy_json(
        data,
        b,
        a,
        RELEASE,
        &mco_render::release::Profile::default(),
    ) {
        serde_json::from_slice::<serde_json::Value>(&out).expect("policy.json is JSON");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 4 {
        0 | 1 => {
            if let Ok(text) = std::str::from_utf8(rest) {
                registries(text);
            }
        }
        2 => storage(rest, which & 0x80 != 0),
        _ => policy(rest, which >> 2),
    }
});
