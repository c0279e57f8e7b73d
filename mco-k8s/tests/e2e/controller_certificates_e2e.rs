//! The ControllerConfig's certificates against the in-process API server: machine-config-
//! controller records the certificates of the spec's CA bundles in the ControllerConfig's
//! `status.controllerCertificates` (subject and issuer as Go prints them, validity, the bundle
//! each came from, in upstream's order), each pool's `status.certExpirys` repeats the API
//! server serving CA's, a new bundle is recorded again, and an unchanged one is not written
//! twice.

use crate::support;
use crate::support::apiserver::ApiServer;
use crate::support::cluster::examples;
use crate::support::yaml_docs;
use base64::Engine as _;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::Api;
use mco_k8s::controller::{self, Options};
use mco_k8s::crd;
use serde_json::{json, Value};
use std::time::Duration;

fn ca(cn: &str, org: &str, days: i64) -> String {
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, org);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params.not_before = rcgen::date_time_ymd(2026, 1, 1);
    params.not_after = params.not_before + time_days(days);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().expect("key");
    params.self_signed(&key).expect("certificate").pem()
}

fn time_days(days: i64) -> std::time::Duration {
    std::time::Duration::from_secs(u64::try_from(days).unwrap_or(0) * 86_400)
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn recorded(server: &ApiServer) -> Vec<(String, String, String)> {
    let cc = server
        .store
        .get("controllerconfigs", "", "machine-config-controller")
        .unwrap_or(Value::Null);
    cc["status"]["controllerCertificates"]
        .as_array()
        .map(|certs| {
            certs
                .iter()
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
                    (s("bundleFile"), s("subject"), s("notAfter"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn expirys(server: &ApiServer, pool: &str) -> Vec<(String, String, String)> {
    let p = server
        .store
        .get("machineconfigpools", "", pool)
        .unwrap_or(Value::Null);
    p["status"]["certExpirys"]
        .as_array()
        .map(|e| {
            e.iter()
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
                    (s("bundle"), s("subject"), s("expiry"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn status_writes(server: &ApiServer) -> usize {
    server
        .store
        .request_log()
        .iter()
        .filter(|l| l.what == "PATCH controllerconfigs/status")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_records_the_ca_bundles_certificates() {
    let server = ApiServer::start().await.expect("API server");
    let client = server.client();
    let dynamic = |kind: crd::Kind| -> Api<DynamicObject> {
        Api::all_with(client.clone(), &kind.api_resource())
    };
    let pp = PostParams::default();
    for p in yaml_docs(&examples().join("00-pools.yaml")) {
        let obj: DynamicObject = serde_json::from_value(p).expect("pool");
        dynamic(crd::MACHINE_CONFIG_POOL)
            .create(&pp, &obj)
            .await
            .expect("create pool");
    }
    let serving = format!(
        "{}{}",
        ca("kube-apiserver-lb-signer", "openshift", 3650),
        ca("kube-apiserver-localhost-signer", "openshift", 365)
    );
    let root = ca("root-ca", "Acme, Inc.", 30);
    for mut cc in yaml_docs(&examples().join("01-controllerconfig.yaml")) {
        cc["spec"]["kubeAPIServerServingCAData"] = json!(b64(&serving));
        cc["spec"]["rootCAData"] = json!(b64(&root));
        let obj: DynamicObject = serde_json::from_value(cc).expect("controller config");
        dynamic(crd::CONTROLLER_CONFIG)
            .create(&pp, &obj)
            .await
            .expect("create controller config");
    }
    let opts = Options {
        debounce: Duration::from_millis(20),
        resync: Duration::from_secs(1),
        ..Options::default()
    };
    let ctrl = tokio::spawn(controller::run(client.clone(), opts));

    let want = vec![
        (
            "KubeAPIServerServingCAData".to_string(),
            "CN=kube-apiserver-lb-signer,O=openshift".to_string(),
            "2035-12-30T00:00:00Z".to_string(),
        ),
        (
            "KubeAPIServerServingCAData".to_string(),
            "CN=kube-apiserver-localhost-signer,O=openshift".to_string(),
            "2027-01-01T00:00:00Z".to_string(),
        ),
        (
            "RootCAData".to_string(),
            "CN=root-ca,O=Acme\\, Inc.".to_string(),
            "2026-01-31T00:00:00Z".to_string(),
        ),
    ];
    support::eventually_within(
        "the ControllerConfig's certificates",
        support::PATIENCE,
        || (recorded(&server) == want).then_some(()),
    )
    .await;
    // Pools repeat the serving CA's, not the root CA's.
    let serving_only: Vec<_> = want[..2]
        .iter()
        .map(|(b, s, e)| (b.clone(), s.clone(), e.clone()))
        .collect();
    for pool in ["master", "worker"] {
        support::eventually_within(
            &format!("pool {pool}'s certExpirys"),
            support::PATIENCE,
            || (expirys(&server, pool) == serving_only).then_some(()),
        )
        .await;
    }
    // Passes go on (resync every second); the unchanged certificates are not written again.
    let writes = status_writes(&server);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(status_writes(&server), writes, "certificates written again");

    // A rotated serving CA: recorded, and the pools follow.
    let rotated = ca("kube-apiserver-lb-signer-2", "openshift", 100);
    let patch = json!({"spec": {"kubeAPIServerServingCAData": b64(&rotated)}});
    dynamic(crd::CONTROLLER_CONFIG)
        .patch(
            "machine-config-controller",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .expect("patch controller config");
    let rotated_want = (
        "KubeAPIServerServingCAData".to_string(),
        "CN=kube-apiserver-lb-signer-2,O=openshift".to_string(),
        "2026-04-11T00:00:00Z".to_string(),
    );
    support::eventually_within("the rotated certificate", support::PATIENCE, || {
        let got = recorded(&server);
        (got.len() == 2 && got[0] == rotated_want).then_some(())
    })
    .await;
    support::eventually_within("the worker pool's new expiry", support::PATIENCE, || {
        (expirys(&server, "worker") == vec![rotated_want.clone()]).then_some(())
    })
    .await;
    ctrl.abort();
}
