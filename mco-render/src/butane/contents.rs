//! File contents as Butane writes them: the shortest `data:` URL, gzip when strictly shorter.

use crate::gocompat::gzip::gzip_best;
use mco_ignition::dataurl::{encode_base64, encode_percent};

/// A data URL and the `compression` to write beside it (`None`: leave the field as it was).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataUrl {
    /// `data:,...` or `data:;base64,...`.
    pub source: String,
    /// `Some("")`, `Some("gzip")`, or `None` when the config set a compression itself.
    pub compression: Option<&'static str>,
}

/// Butane's `MakeDataURL`: percent escaping, base64 when strictly shorter, and (when the
/// config sets no compression and `auto_compress`) gzip when its base64 plus four bytes is
/// strictly shorter still.
pub fn make_data_url(
    contents: &[u8],
    current_compression: Option<&str>,
    auto_compress: bool,
) -> DataUrl {
    make_data_url_with(contents, current_compression, auto_compress, gzip_best)
}

/// [`make_data_url`] with the gzip member `gzip` writes (to check the choice against Go's
/// bytes).
pub fn make_data_url_with(
    contents: &[u8],
    current_compression: Option<&str>,
    auto_compress: bool,
    gzip: impl Fn(&[u8]) -> Vec<u8>,
) -> DataUrl {
    let unset = current_compression.is_none_or(str::is_empty);
    let mut source = encode_percent(contents);
    let b64 = encode_base64(contents);
    if b64.len() < source.len() {
        source = b64;
    }
    let mut compression = unset.then_some("");
    if unset && auto_compress {
        let gz = encode_base64(&gzip(contents));
        if gz.len() + "gzip".len() < source.len() {
            source = gz;
            compression = Some("gzip");
        }
    }
    DataUrl {
        source,
        compression,
    }
}
