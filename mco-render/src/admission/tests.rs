use super::v1::{handle, AdmissionReview};
use super::*;
use serde_json::json;

const ROLE: &str = "machineconfiguration.openshift.io/role";

fn pool(name: &str, machines: u64, max_unavailable: Option<Value>) -> Value {
    let mut spec = json!({
        "machineConfigSelector": {"matchLabels": {ROLE: name}},
        "nodeSelector": {"matchLabels": {format!("node-role.kubernetes.io/{name}"): ""}},
    });
    if let Some(m) = max_unavailable {
        spec["maxUnavailable"] = m;
    }
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"machineCount": machines},
    })
}

fn mc(name: &str, role: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {ROLE: role}},
        "spec": spec,
    })
}

fn config(files: Value) -> Value {
    json!({"ignition": {"version": "3.5.0"}, "storage": {"files": files}})
}

fn file(path: &str, data: &str) -> Value {
    json!({"path": path, "mode": 420, "contents": {"source": format!("data:,{data}")}})
}

fn view_with(pools: Vec<Value>) -> ClusterView {
    let mut objects = pools;
    objects.push(mc(
        "00-worker",
        "worker",
        json!({"config": config(json!([file("/etc/containers/policy.json", "a")]))}),
    ));
    objects.push(mc(
        "00-master",
        "master",
        json!({"config": config(json!([file("/etc/motd", "m")]))}),
    ));
    let mut m = Manifests::default();
    let text = match serde_json::to_string(&objects) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };
    if let Err(e) = m.add_file("cluster.json", &text) {
        panic!("{e}");
    }
    ClusterView::new(m, RenderOptions::default())
}

fn view() -> ClusterView {
    view_with(vec![pool("worker", 250, None), pool("master", 3, None)])
}

fn messages(f: &[Finding]) -> Vec<&str> {
    f.iter().map(|f| f.message.as_str()).collect()
}

fn create(obj: &Value, cluster: &ClusterView) -> Findings {
    review(
        obj,
        Operation::Create,
        None,
        cluster,
        &ReviewOptions::default(),
    )
}

#[test]
fn a_kernel_argument_reboots_the_pool_with_an_estimate() {
    let obj = mc(
        "99-worker-kargs",
        "worker",
        json!({"kernelArguments": ["nosmt"]}),
    );
    let f = create(&obj, &view());
    assert!(f.allowed(), "{f:?}");
    assert_eq!(
        messages(&f.warnings),
        ["pool worker: 250 nodes will drain and reboot (kernelArguments changed); about 21h at maxUnavailable 1"]
    );
}

#[test]
fn a_percentage_max_unavailable_is_scaled_as_the_rollout_scales_it() {
    let cluster = view_with(vec![pool("worker", 250, Some(json!("10%")))]);
    let obj = mc(
        "99-worker-kargs",
        "worker",
        json!({"kernelArguments": ["nosmt"]}),
    );
    let f = create(&obj, &cluster);
    // 250 * 10% = 25 at a time: 10 waves of 5 minutes.
    assert_eq!(
        messages(&f.warnings),
        ["pool worker: 250 nodes will drain and reboot (kernelArguments changed); about 50 min at maxUnavailable 10% (25)"]
    );
}

#[test]
fn a_policy_file_reloads_crio_without_drain() {
    let obj = mc(
        "00-worker",
        "worker",
        json!({"config": config(json!([file("/etc/containers/policy.json", "b")]))}),
    );
    let f = review(
        &obj,
        Operation::Update,
        None,
        &view(),
        &ReviewOptions::default(),
    );
    assert!(f.allowed());
    assert_eq!(
        messages(&f.warnings),
        ["pool worker: 250 nodes reload crio.service, no drain, no reboot"]
    );
}

#[test]
fn an_invalid_config_is_rejected_with_the_cli_message() {
    let obj = mc(
        "99-worker-broken",
        "worker",
        json!({"config": config(json!([file("etc/x", "x")]))}),
    );
    let f = create(&obj, &view());
    assert!(!f.allowed());
    assert_eq!(
        messages(&f.errors),
        ["99-worker-broken: spec.config.storage.files[0].path: path not absolute"]
    );
    assert_eq!(f.errors[0].kind, FindingKind::Invalid);
}

#[test]
fn an_unreconcilable_change_is_rejected() {
    let obj = mc(
        "99-worker-disk",
        "worker",
        json!({"config": {"ignition": {"version": "3.5.0"}, "storage": {"disks": [{"device": "/dev/sdb", "wipeTable": true}]}}}),
    );
    let f = create(&obj, &view());
    assert!(!f.allowed(), "{f:?}");
    assert_eq!(f.errors.len(), 1);
    assert_eq!(f.errors[0].kind, FindingKind::Unreconcilable);
    assert!(
        f.errors[0]
            .message
            .starts_with("99-worker-disk: pool worker: not reconcilable: "),
        "{}",
        f.errors[0].message
    );
}

#[test]
fn lints_and_ignition_warnings_are_warnings() {
    let obj = mc(
        "99-worker-lint",
        "worker",
        json!({"config": config(json!([{"path": "/etc/x", "mode": 444, "contents": {"source": "data:,x"}}]))}),
    );
    let f = create(&obj, &view());
    assert!(f.allowed(), "{f:?}");
    let w = messages(&f.warnings);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].starts_with("pool worker: 250 nodes will drain and reboot (/etc/x changed)"));
    assert!(
        w[1].starts_with("99-worker-lint: spec.config.storage.files[0].mode: mode 444 is 0o674"),
        "{}",
        w[1]
    );
    assert_eq!(
        f.warnings[1].kind,
        FindingKind::Lint(lint::Lint::DecimalMode)
    );
}

#[test]
fn a_decimal_mode_rejected_by_validation_is_explained() {
    let obj = mc(
        "99-worker-lint",
        "worker",
        json!({"config": config(json!([{"path": "/etc/x", "mode": 644, "contents": {"source": "data:,x"}}]))}),
    );
    let f = create(&obj, &view());
    assert_eq!(
        messages(&f.errors),
        ["99-worker-lint: spec.config.storage.files[0].mode: invalid mode 01204 for /etc/x, cannot exceed 0777"]
    );
    assert!(f
        .warnings
        .iter()
        .any(|w| w.kind == FindingKind::Lint(lint::Lint::DecimalMode)));
}

#[test]
fn a_config_no_pool_selects_is_only_checked_on_its_own() {
    let obj = mc(
        "99-infra-x",
        "infra",
        json!({"kernelArguments": ["rd.break"]}),
    );
    let f = create(&obj, &view());
    assert!(f.allowed());
    assert_eq!(f.warnings.len(), 1);
    assert!(f.warnings[0]
        .message
        .starts_with("99-infra-x: spec.kernelArguments[0]: \"rd.break\""));
}

#[test]
fn a_paused_pool_says_so() {
    let mut p = pool("worker", 2, None);
    p["spec"]["paused"] = json!(true);
    let obj = mc(
        "99-worker-kargs",
        "worker",
        json!({"kernelArguments": ["nosmt"]}),
    );
    let f = create(&obj, &view_with(vec![p]));
    assert_eq!(
        messages(&f.warnings),
        ["pool worker: 2 nodes will drain and reboot (kernelArguments changed); about 10 min at maxUnavailable 1; the pool is paused: nothing rolls out until it is unpaused"]
    );
}

#[test]
fn an_update_leaving_a_rendering_pool_with_nothing_is_rejected() {
    let cluster = view();
    let mut p = pool("worker", 250, None);
    p["spec"]["machineConfigSelector"] = json!({"matchLabels": {ROLE: "nobody"}});
    let old = pool("worker", 250, None);
    let f = review(
        &p,
        Operation::Update,
        Some(&old),
        &cluster,
        &ReviewOptions::default(),
    );
    assert!(!f.allowed());
    assert_eq!(
        messages(&f.errors),
        ["pool worker: no MachineConfigs found matching selector machineconfiguration.openshift.io/role=nobody"]
    );
}

/// A cluster of exactly these objects (no template MachineConfigs added).
fn view_of(objects: &[Value]) -> ClusterView {
    let mut m = Manifests::default();
    let text = serde_json::to_string(objects).unwrap_or_default();
    assert!(m.add_file("cluster.json", &text).is_ok());
    ClusterView::new(m, RenderOptions::default())
}

#[test]
fn a_new_pool_selecting_nothing_yet_is_admitted_with_a_warning() {
    // kubectl apply -f dir/ creates the pools (00-pools.yaml) before their configs.
    let f = create(&pool("infra", 0, None), &view());
    assert!(f.allowed(), "{f:?}");
    assert_eq!(f.warnings.len(), 1, "{f:?}");
    assert_eq!(f.warnings[0].kind, FindingKind::Pending);
    assert_eq!(
        f.warnings[0].message,
        format!("pool infra: no MachineConfigs found matching selector machineconfiguration.openshift.io/role=infra: {AWAITS_CONFIGS}")
    );
    // The same pool edited while it still selects nothing: still only a warning.
    let mut edited = pool("infra", 0, None);
    edited["spec"]["machineConfigSelector"] = json!({"matchLabels": {ROLE: "infra2"}});
    let f = review(
        &edited,
        Operation::Update,
        Some(&pool("infra", 0, None)),
        &view_with(vec![pool("infra", 0, None)]),
        &ReviewOptions::default(),
    );
    assert!(f.allowed(), "{f:?}");
    assert_eq!(f.warnings[0].kind, FindingKind::Pending);
}

#[test]
fn a_new_pool_with_a_selector_wrong_on_its_own_is_rejected() {
    let mut everything = pool("infra", 0, None);
    everything["spec"]["machineConfigSelector"] = json!({});
    let f = create(&everything, &view());
    assert_eq!(
        messages(&f.errors),
        ["pool infra: This machineconfigpool is selecting all machineconfigs. A non-empty selector is required."]
    );
    let mut bad = pool("infra", 0, None);
    bad["spec"]["machineConfigSelector"] =
        json!({"matchExpressions": [{"key": ROLE, "operator": "Sometimes", "values": ["x"]}]});
    let f = create(&bad, &view());
    assert!(!f.allowed(), "{f:?}");
    assert_eq!(f.errors[0].kind, FindingKind::Invalid);
    assert!(f.warnings.is_empty(), "{f:?}");
}

#[test]
fn configs_that_conflict_in_a_pool_are_refused_in_either_order() {
    let devel = mc(
        "99-worker-devel",
        "worker",
        json!({"extensions": ["kernel-devel"]}),
    );
    let rt = mc("99-worker-rt", "worker", json!({"kernelType": "realtime"}));
    let p = pool("worker", 0, None);
    // The pool first: the first config renders it, the second breaks it.
    let f = create(&devel, &view_of(std::slice::from_ref(&p)));
    assert!(f.allowed(), "{f:?}");
    let f = create(&rt, &view_of(&[p.clone(), devel.clone()]));
    assert!(!f.allowed(), "{f:?}");
    assert_eq!(f.errors[0].kind, FindingKind::Invalid);
    // The configs first, selected by no pool: each is fine on its own; the pool that would
    // bring them together is refused with the same error.
    assert!(create(&devel, &view_of(&[])).allowed());
    assert!(create(&rt, &view_of(std::slice::from_ref(&devel))).allowed());
    let g = create(&p, &view_of(&[devel, rt]));
    assert!(!g.allowed(), "{g:?}");
    assert_eq!(messages(&g.errors), messages(&f.errors));
}

#[test]
fn an_unreconcilable_change_to_a_pool_without_nodes_is_a_warning() {
    let disk = mc(
        "99-worker-disk",
        "worker",
        json!({"config": {"ignition": {"version": "3.5.0"}, "storage": {"disks": [{"device": "/dev/sdb", "wipeTable": true}]}}}),
    );
    for empty in [pool("worker", 0, None), {
        let mut p = pool("worker", 0, None);
        if let Some(o) = p.as_object_mut() {
            o.remove("status");
        }
        p
    }] {
        let f = create(&disk, &view_with(vec![empty]));
        assert!(f.allowed(), "{f:?}");
        assert_eq!(f.warnings.len(), 1, "{f:?}");
        assert_eq!(f.warnings[0].kind, FindingKind::Unreconcilable);
        assert!(
            f.warnings[0]
                .message
                .starts_with("99-worker-disk: pool worker: not reconcilable: ")
                && f.warnings[0].message.ends_with(
                    "(admitted: no node is on the pool's config yet, so none has to move)"
                ),
            "{}",
            f.warnings[0].message
        );
    }
}

#[test]
fn a_pool_that_already_fails_keeps_its_errors_to_itself() {
    // The cluster holds a broken worker config; an unrelated fix elsewhere is not blamed.
    let cluster = {
        let mut objects = vec![pool("worker", 1, None)];
        objects.push(mc(
            "00-worker",
            "worker",
            json!({"config": config(json!([file("rel", "x")]))}),
        ));
        let mut m = Manifests::default();
        let text = serde_json::to_string(&objects).unwrap_or_default();
        assert!(m.add_file("c.json", &text).is_ok());
        ClusterView::new(m, RenderOptions::default())
    };
    let obj = mc(
        "99-worker-ok",
        "worker",
        json!({"kernelArguments": ["nosmt"]}),
    );
    let f = create(&obj, &cluster);
    assert!(f.allowed(), "{f:?}");
}

#[test]
fn other_kinds_and_deletes_get_nothing() {
    let cm = json!({"kind": "ConfigMap", "metadata": {"name": "x"}});
    assert_eq!(create(&cm, &view()), Findings::default());
}

fn request(uid: &str, op: &str, object: Value) -> Vec<u8> {
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "machineconfiguration.openshift.io", "version": "v1", "kind": "MachineConfig"},
            "resource": {"group": "machineconfiguration.openshift.io", "version": "v1", "resource": "machineconfigs"},
            "name": object["metadata"]["name"],
            "operation": op,
            "userInfo": {"username": "admin"},
            "object": object,
            "oldObject": null,
            "dryRun": true,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        }
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

fn respond(body: &[u8]) -> Value {
    match handle(body, &view(), &ReviewOptions::default()) {
        Ok(out) => serde_json::from_slice(&out).unwrap_or(Value::Null),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn admission_review_allowed_with_warnings() {
    let out = respond(&request(
        "u-1",
        "CREATE",
        mc(
            "99-worker-kargs",
            "worker",
            json!({"kernelArguments": ["nosmt"]}),
        ),
    ));
    assert_eq!(
        out,
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": "u-1",
                "allowed": true,
                "warnings": ["pool worker: 250 nodes will drain and reboot (kernelArguments changed); about 21h at maxUnavailable 1"],
            }
        })
    );
}

#[test]
fn admission_review_rejected_with_the_message() {
    let out = respond(&request(
        "u-2",
        "CREATE",
        mc(
            "99-worker-broken",
            "worker",
            json!({"config": config(json!([file("etc/x", "x")]))}),
        ),
    ));
    assert_eq!(
        out,
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": "u-2",
                "allowed": false,
                "status": {
                    "code": 422,
                    "reason": "Invalid",
                    "status": "Failure",
                    "message": "99-worker-broken: spec.config.storage.files[0].path: path not absolute",
                },
            }
        })
    );
}

#[test]
fn admission_review_allowed_without_findings_and_delete() {
    let unchanged = mc(
        "00-master",
        "master",
        json!({"config": config(json!([file("/etc/motd", "m")]))}),
    );
    for op in ["UPDATE", "DELETE"] {
        let out = respond(&request("u-3", op, unchanged.clone()));
        assert_eq!(
            out["response"],
            json!({"uid": "u-3", "allowed": true}),
            "{op}"
        );
    }
}

#[test]
fn admission_review_bad_bodies() {
    let v = view();
    let o = ReviewOptions::default();
    assert!(handle(b"{", &v, &o).is_err());
    assert!(handle(
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
        &v,
        &o
    )
    .is_err());
    assert!(handle(br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x","operation":"CREATE"}}"#, &v, &o).is_err());
    let r: Result<AdmissionReview, _> = serde_json::from_slice(&request("u", "CREATE", json!({})));
    assert!(r.is_ok());
}

#[test]
fn estimates() {
    let p: MachineConfigPool = serde_json::from_value(pool("w", 0, None)).unwrap_or_default();
    let five = DEFAULT_NODE_DURATION;
    assert_eq!(estimate(&p, 0, five), None);
    assert_eq!(
        estimate(&p, 1, five).as_deref(),
        Some("about 5 min at maxUnavailable 1")
    );
    assert_eq!(
        estimate(&p, 12, five).as_deref(),
        Some("about 1h at maxUnavailable 1")
    );
    let p3: MachineConfigPool =
        serde_json::from_value(pool("w", 0, Some(json!(3)))).unwrap_or_default();
    assert_eq!(
        estimate(&p3, 10, five).as_deref(),
        Some("about 20 min at maxUnavailable 3")
    );
    let bad: MachineConfigPool =
        serde_json::from_value(pool("w", 0, Some(json!("x")))).unwrap_or_default();
    assert_eq!(estimate(&bad, 10, five), None);
}

/// A cluster whose worker pool carries the pool label KubeletConfigs select, with the
/// template's kubelet MachineConfig.
fn kubelet_view() -> ClusterView {
    let mut p = pool("worker", 10, None);
    p["metadata"]["labels"] =
        json!({"pools.operator.machineconfiguration.openshift.io/worker": ""});
    let template = mc(
        "01-worker-kubelet",
        "worker",
        json!({"config": config(json!([file(
            "/etc/kubernetes/kubelet.conf",
            "kind%3A%20KubeletConfiguration%0AapiVersion%3A%20kubelet.config.k8s.io%2Fv1beta1%0AmaxPods%3A%20110%0A"
        )]))}),
    );
    let mut m = Manifests::default();
    let text = serde_json::to_string(&vec![p, template]).unwrap_or_default();
    assert!(m.add_file("cluster.json", &text).is_ok());
    ClusterView::new(m, RenderOptions::default())
}

fn kubelet_config(spec: Value) -> Value {
    let mut spec = spec;
    spec["machineConfigPoolSelector"] =
        json!({"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}});
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "KubeletConfig",
        "metadata": {"name": "max-pods"},
        "spec": spec,
    })
}

#[test]
fn a_kubelet_config_is_generated_and_planned() {
    let f = create(
        &kubelet_config(json!({"kubeletConfig": {"maxPods": 250}})),
        &kubelet_view(),
    );
    assert!(f.allowed(), "{f:?}");
    assert_eq!(
        messages(&f.warnings),
        ["pool worker: 10 nodes will drain and reboot (/etc/kubernetes/kubelet.conf changed); about 50 min at maxUnavailable 1"]
    );
}

#[test]
fn a_kubelet_config_that_cannot_generate_is_rejected() {
    let f = create(
        &kubelet_config(json!({"kubeletConfig": {"cgroupDriver": "cgroupfs"}})),
        &kubelet_view(),
    );
    assert_eq!(f.errors.len(), 1, "{f:?}");
    assert_eq!(f.errors[0].kind, FindingKind::Generate);
    assert!(
        f.errors[0].message.starts_with(
            "KubeletConfig max-pods: KubeletConfiguration: cgroupDriver is not allowed to be set"
        ),
        "{}",
        f.errors[0].message
    );
}

#[test]
fn a_kubelet_config_waiting_for_its_pool_or_base_config_is_admitted_with_a_warning() {
    // No pool carries the label its selector asks for yet.
    let mut m = Manifests::default();
    assert!(m
        .add_file(
            "c.json",
            &serde_json::to_string(&vec![pool("worker", 1, None)]).unwrap_or_default()
        )
        .is_ok());
    let f = create(
        &kubelet_config(json!({"kubeletConfig": {"maxPods": 250}})),
        &ClusterView::new(m, RenderOptions::default()),
    );
    assert!(f.allowed(), "{f:?}");
    assert_eq!(
        messages(&f.warnings),
        ["KubeletConfig max-pods: could not find any MachineConfigPool set for KubeletConfig: admitted: the controller generates its MachineConfigs once a pool its machineConfigPoolSelector matches exists"]
    );
    assert_eq!(f.warnings[0].kind, FindingKind::Pending);

    // The pool is there, its template kubelet MachineConfig not yet.
    let mut p = pool("worker", 1, None);
    p["metadata"]["labels"] =
        json!({"pools.operator.machineconfiguration.openshift.io/worker": ""});
    let f = create(
        &kubelet_config(json!({"kubeletConfig": {"maxPods": 250}})),
        &view_of(&[p]),
    );
    assert!(f.allowed(), "{f:?}");
    assert_eq!(f.warnings.len(), 1, "{f:?}");
    assert_eq!(f.warnings[0].kind, FindingKind::Pending);
    assert!(
        f.warnings[0].message.ends_with("admitted: the controller generates its MachineConfigs once the pool's base MachineConfigs (rendered from the templates) exist"),
        "{}",
        f.warnings[0].message
    );
}

#[test]
fn unpausing_a_pool_rolls_out_what_its_nodes_lack() {
    // The nodes run the rendered config of the cluster as it is; the pool was paused while a
    // kernel argument arrived.
    let base = view();
    let Some(Ok(current)) = base.base(0, &ControllerConfigSpec::default()).cloned() else {
        panic!("master renders");
    };
    assert!(current.name.starts_with("rendered-master-"));
    let rendered = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "rendered-master-old"},
        "spec": {"config": config(json!([]))},
    });
    let mut paused = pool("master", 3, None);
    paused["spec"]["paused"] = json!(true);
    paused["status"]["configuration"] = json!({"name": "rendered-master-old"});
    let mut objects = vec![paused.clone(), rendered];
    objects.push(mc(
        "00-master",
        "master",
        json!({"config": config(json!([file("/etc/motd", "m")]))}),
    ));
    let mut m = Manifests::default();
    assert!(m
        .add_file(
            "c.json",
            &serde_json::to_string(&objects).unwrap_or_default()
        )
        .is_ok());
    let cluster = ClusterView::new(m, RenderOptions::default());
    let mut unpaused = paused.clone();
    unpaused["spec"]["paused"] = json!(false);
    let f = review(
        &unpaused,
        Operation::Update,
        Some(&paused),
        &cluster,
        &ReviewOptions::default(),
    );
    assert!(f.allowed(), "{f:?}");
    assert_eq!(
        messages(&f.warnings),
        ["pool master: 3 nodes will drain and reboot (/etc/motd changed); about 15 min at maxUnavailable 1"]
    );
    // Pausing again changes nothing on the nodes.
    let f = review(
        &paused,
        Operation::Update,
        Some(&unpaused),
        &cluster,
        &ReviewOptions::default(),
    );
    assert_eq!(f, Findings::default());
}

#[test]
fn the_clusters_node_disruption_policies_shape_the_plan() {
    let mut objects = vec![pool("master", 3, None)];
    objects.push(mc(
        "00-master",
        "master",
        json!({"config": config(json!([file("/etc/motd", "m")]))}),
    ));
    objects.push(json!({
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": {"name": "cluster"},
        "spec": {"nodeDisruptionPolicy": {"files": [
            {"path": "/etc/motd", "actions": [{"type": "Restart", "restart": {"serviceName": "motd.service"}}]},
        ]}},
    }));
    let mut m = Manifests::default();
    assert!(m
        .add_file(
            "c.json",
            &serde_json::to_string(&objects).unwrap_or_default()
        )
        .is_ok());
    let cluster = ClusterView::new(m, RenderOptions::default());
    let obj = mc(
        "00-master",
        "master",
        json!({"config": config(json!([file("/etc/motd", "n")]))}),
    );
    let f = review(
        &obj,
        Operation::Update,
        None,
        &cluster,
        &ReviewOptions::default(),
    );
    assert_eq!(
        messages(&f.warnings),
        ["pool master: 3 nodes restart motd.service, no drain, no reboot"]
    );
}

fn rollout_policy(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "rollout.mco.dev/v1alpha1",
        "kind": "RolloutPolicy",
        "metadata": {"name": name},
        "spec": spec,
    })
}

fn berlin_policy() -> Value {
    rollout_policy(
        "worker",
        json!({
            "canary": {"nodes": 1, "soak": "30m"},
            "maintenanceWindows": [{"days": ["Sat"], "start": "22:00", "duration": "4h", "timeZone": "Europe/Berlin"}],
        }),
    )
}

#[test]
fn a_pools_rollout_policy_gives_the_estimate_its_schedule() {
    let cluster = view_with(vec![
        pool("worker", 20, Some(json!(2))),
        pool("master", 3, None),
        berlin_policy(),
    ]);
    let obj = mc(
        "99-worker-kargs",
        "worker",
        json!({"kernelArguments": ["nosmt"]}),
    );
    // 1 canary (5 min), the soak (30 min), 19 others 2 at a time (10 batches of 5 min).
    let f = create(&obj, &cluster);
    assert_eq!(
        messages(&f.warnings),
        ["pool worker: 20 nodes will drain and reboot (kernelArguments changed); about 1h25m: 1 canary, soak 30m, 10 batches of up to 2 at maxUnavailable 2, plus waits for windows Sat 22:00 Europe/Berlin"]
    );
    // With the review's time: Saturday 2026-12-05 12:00Z waits for 22:00 Berlin (21:00Z).
    let opts = ReviewOptions {
        now: "2026-12-05T12:00:00Z".parse().ok(),
        ..ReviewOptions::default()
    };
    let f = review(&obj, Operation::Create, None, &cluster, &opts);
    assert_eq!(
        messages(&f.warnings),
        ["pool worker: 20 nodes will drain and reboot (kernelArguments changed); about 10h25m: 1 canary, soak 30m, 10 batches of up to 2 at maxUnavailable 2, in windows Sat 22:00 Europe/Berlin"]
    );
    // A pool without a policy keeps the plain estimate.
    let obj = mc(
        "99-master-kargs",
        "master",
        json!({"kernelArguments": ["nosmt"]}),
    );
    assert_eq!(
        messages(&review(&obj, Operation::Create, None, &cluster, &opts).warnings),
        ["pool master: 3 nodes will drain and reboot (kernelArguments changed); about 15 min at maxUnavailable 1"]
    );
}

#[test]
fn an_invalid_rollout_policy_keeps_the_plain_estimate() {
    let bad = rollout_policy("worker", json!({"canary": {"soak": "soon"}}));
    let cluster = view_with(vec![pool("worker", 250, None), bad]);
    let obj = mc(
        "99-worker-kargs",
        "worker",
        json!({"kernelArguments": ["nosmt"]}),
    );
    assert_eq!(
        messages(&create(&obj, &cluster).warnings),
        ["pool worker: 250 nodes will drain and reboot (kernelArguments changed); about 21h at maxUnavailable 1"]
    );
}

#[test]
fn a_rollout_policy_is_refused_in_its_checks_words() {
    let bad = rollout_policy("worker", json!({"canary": {"nodes": "0%"}}));
    let f = create(&bad, &view());
    assert!(!f.allowed());
    assert_eq!(
        messages(&f.errors),
        ["RolloutPolicy worker: spec.canary.nodes: \"0%\" is not a percentage from 1% to 100%"]
    );
    let bad = rollout_policy(
        "worker",
        json!({"maintenanceWindows": [{"start": "22:00", "duration": "1h", "timeZone": "Mars/Olympus"}]}),
    );
    assert_eq!(
        messages(&create(&bad, &view()).errors),
        ["RolloutPolicy worker: spec.maintenanceWindows[0].timeZone: \"Mars/Olympus\" is not an IANA time zone"]
    );
    let undecodable = rollout_policy("worker", json!({"autoRollback": "yes"}));
    let f = create(&undecodable, &view());
    assert_eq!(f.errors.len(), 1);
    assert!(
        f.errors[0].message.starts_with("RolloutPolicy worker: "),
        "{f:?}"
    );
}

#[test]
fn a_rollout_policy_before_its_pool_is_pending() {
    let f = create(&berlin_policy(), &view());
    assert_eq!(f, Findings::default());
    let early = rollout_policy("infra", json!({"canary": {"nodes": 1}}));
    let f = create(&early, &view());
    assert!(f.allowed());
    assert_eq!(f.warnings.len(), 1);
    assert_eq!(f.warnings[0].kind, FindingKind::Pending);
    assert_eq!(
        f.warnings[0].message,
        "RolloutPolicy infra: admitted: no MachineConfigPool infra exists yet; the policy applies to it once it is created"
    );
    let f = review(
        &early,
        Operation::Update,
        Some(&early),
        &view(),
        &ReviewOptions::default(),
    );
    assert_eq!(f.warnings.len(), 1);
}
