//! Arbitrary bytes as the body of an AdmissionReview POST to the webhook, reviewed against the
//! cluster of `examples/admission/cluster` as `mco_render::admission::v1::handle` does for
//! `mco-k8s`'s webhook. A body that decodes gets a response review echoing the request's uid;
//! one that does not gets a decode error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_render::admission::v1::{self, AdmissionReview};
use mco_render::admission::{ClusterView, ReviewOptions};
use mco_render::manifests::Manifests;
use mco_render::render::RenderOptions;
use std::sync::OnceLock;

fn cluster() -> &'static ClusterView {
    static VIEW: OnceLock<ClusterView> = OnceLock::new();
    VIEW.get_or_init(|| {
        let mut m = Manifests::default();
        for (name, text) in [
            (
                "00-pools.yaml",
                include_str!("../../examples/admission/cluster/00-pools.yaml"),
            ),
            (
                "10-machineconfigs.yaml",
                include_str!("../../examples/admission/cluster/10-machineconfigs.yaml"),
            ),
        ] {
            m.add_file(name, text).expect("the example cluster reads");
        }
        ClusterView::new(m, RenderOptions::default())
    })
}

fuzz_target!(|data: &[u8]| {
    let opts = ReviewOptions::default();
    match v1::handle(data, cluster(), &opts) {
        Ok(body) => {
            let request: AdmissionReview =
                serde_json::from_slice(data).expect("handled bodies decode");
            let uid = request.request.expect("handled bodies have a request").uid;
            let answer: AdmissionReview =
                serde_json::from_slice(&body).expect("the answer is an AdmissionReview");
            assert_eq!(answer.api_version, v1::API_VERSION);
            assert!(answer.request.is_none());
            let response = answer.response.expect("the answer has a response");
            assert_eq!(response.uid, uid, "the response echoes the uid");
            match &response.status {
                Some(s) => {
                    assert!(!response.allowed);
                    assert_eq!(s.code, 422);
                    assert!(!s.message.is_empty(), "a rejection says why");
                }
                None => assert!(response.allowed),
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
