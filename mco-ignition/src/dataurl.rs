//! Data URLs (placeholder until the full module lands).

/// Validates a resource source URL as Ignition does for a 3.x minor version.
pub fn validate_source_url(url: &str, _minor: u64) -> Result<(), String> {
    if url.starts_with("data:") || url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err("invalid url scheme".into())
    }
}
