//! Arbitrary bytes into the Ignition parser; whatever parses is validated, merged with itself
//! (plainly and through the fold), brought to spec 3.5 and served in every spec version.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_ignition::merge::{merge, merge_into};
use mco_ignition::merge_fold::MergeFold;
use mco_ignition::{parse, validate, SpecVersion};

fuzz_target!(|data: &[u8]| {
    let Ok(parsed) = parse::parse_bytes(data) else {
        return;
    };
    let config = parsed.config;
    let _ = validate::validate_without_source(&config);
    let _ = validate::duplicates(&config);
    let twice = merge(&config, &config);
    let mut plain = config.clone();
    merge_into(&mut plain, config.clone());
    assert_eq!(twice, plain, "merge and merge_into disagree");
    let mut fold = MergeFold::new(config.clone());
    fold.merge(config.clone());
    fold.merge(config.clone());
    merge_into(&mut plain, config.clone());
    assert_eq!(fold.finish(), plain, "the fold disagrees with repeated merge_into");
    let latest = config.to_latest();
    let _ = latest.typed();
    let value = latest.into_value();
    for v in SpecVersion::ALL {
        let _ = mco_render::serve::convert(&value, v);
    }
});
