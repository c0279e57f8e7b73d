//! Digests over upstream's YAML form of a rendered spec.

use md5::{Digest, Md5};
use serde_json::Value;
use sha2::Sha256;

use crate::gocompat::yaml::NameError;
use crate::gocompat::yaml::{stream_go_yaml, Sink};

/// The fixed 80-byte salt upstream hashes before the spec's YAML.
pub const UPSTREAM_SALT: [u8; 80] = [
    16, 124, 206, 228, 139, 56, 175, 175, 79, 229, 134, 118, 157, 154, 211, 110, 25, 93, 47, 253,
    172, 106, 37, 7, 174, 13, 160, 185, 110, 17, 87, 52, 219, 131, 12, 206, 218, 141, 116, 135,
    188, 181, 192, 151, 233, 62, 126, 165, 64, 83, 179, 119, 15, 168, 208, 197, 146, 107, 58, 227,
    133, 188, 238, 26, 33, 26, 235, 202, 32, 173, 31, 234, 41, 144, 148, 79, 6, 206, 23, 22,
];

/// Feeds YAML chunks straight into a digest.
struct DigestSink<D: Digest>(D);

impl<D: Digest> Sink for DigestSink<D> {
    fn take(&mut self, chunk: &[u8]) {
        self.0.update(chunk);
    }
}

/// `md5(salt || yaml(spec))` as 32 lowercase hex digits: upstream's suffix
/// for rendered MachineConfig names.
pub fn upstream_hash(spec: &Value) -> String {
    checked_upstream_hash(spec).unwrap_or_else(|(hash, _)| hash)
}

/// [`upstream_hash`], with the error upstream returns instead of a name if
/// it cannot marshal `spec` (see [`super::check_upstream_marshal`]); the
/// check is made while the YAML is written. The error carries the hash all
/// the same.
pub(crate) fn checked_upstream_hash(spec: &Value) -> Result<String, (String, NameError)> {
    let mut hasher = Md5::new();
    hasher.update(UPSTREAM_SALT);
    let mut sink = DigestSink(hasher);
    let marshals = stream_go_yaml(spec, &mut sink);
    let hash = hex::encode(sink.0.finalize());
    if marshals {
        Ok(hash)
    } else {
        Err((hash, NameError::ControlCharacter))
    }
}

/// The first 32 hex digits of `sha256(yaml(spec))` (no salt).
pub fn content_sha256_hash(spec: &Value) -> String {
    checked_content_sha256_hash(spec).unwrap_or_else(|(hash, _)| hash)
}

/// [`content_sha256_hash`] with upstream's marshal check, as
/// [`checked_upstream_hash`].
pub(crate) fn checked_content_sha256_hash(spec: &Value) -> Result<String, (String, NameError)> {
    let mut sink = DigestSink(Sha256::new());
    let marshals = stream_go_yaml(spec, &mut sink);
    let mut hex = hex::encode(sink.0.finalize());
    hex.truncate(32);
    if marshals {
        Ok(hex)
    } else {
        Err((hex, NameError::ControlCharacter))
    }
}
