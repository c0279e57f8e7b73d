//! Arbitrary bytes as a Butane config (`variant: openshift`): translation returns a
//! MachineConfig or a located failure, never panics. A translation's YAML reads back as the same
//! MachineConfig, a failure's message is Butane's `Error translating config: ...`, and a config
//! that translates under `--strict` translates the same without it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_render::butane::{emit, translate, Options};

fuzz_target!(|data: &[u8]| {
    let lax = translate(data, None, Options { strict: false });
    match &lax {
        Ok(t) => {
            assert_eq!(
                t.machine_config.get("kind").and_then(|k| k.as_str()),
                Some("MachineConfig"),
                "a translation is a MachineConfig"
            );
            let yaml = emit::to_yaml(&t.machine_config);
            let back: serde_json::Value =
                serde_yaml_ng::from_str(&yaml).expect("the emitted YAML parses");
            assert_eq!(
                back, t.machine_config,
                "the emitted YAML reads back the same"
            );
            let _ = t.report.render("fuzz.bu", &String::from_utf8_lossy(data));
        }
        Err(f) => {
            assert!(
                f.message.starts_with("Error translating config: "),
                "failure message: {}",
                f.message
            );
            let _ = f.stderr("fuzz.bu", &String::from_utf8_lossy(data));
        }
    }
    if let Ok(strict) = translate(data, None, Options { strict: true }) {
        let lax = lax.expect("a config that passes --strict passes without it");
        assert_eq!(strict.machine_config, lax.machine_config);
    }
});
