//! Rendered MachineConfig names (interim).

/// The rendered name.
pub fn rendered_name(pool: &str, spec: &serde_json::Value) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(serde_json::to_vec(spec).unwrap_or_default());
    format!("rendered-{pool}-{}", &hex::encode(d)[..32])
}
