//! Manifests read as kubectl reads them: k8s.io/apimachinery's `YAMLOrJSONDecoder` cuts a file
//! into documents (JSON values when the file starts with `{`, else YAML documents between
//! `---` lines), and sigs.k8s.io/yaml turns each YAML document into the JSON kubectl sends,
//! through gopkg.in/yaml.v2's YAML 1.1 rules (`0644` is 420, `yes` is true, merge keys,
//! anchors, the last of two equal keys wins). Each document comes with its line and the
//! position of every value by JSON pointer.
//!
//! The value of a document is the JSON kubectl sends, read back: a float that is a whole number
//! is the integer its JSON text shows. Errors are kubectl's own texts (its YAML errors count
//! lines from the start of the document), with the file line they point at.

mod compose;
mod convert;
mod decode;
mod resolve;
mod split;

use crate::manifests::Positions;
use serde_json::Value;

/// One document of a manifest file as kubectl decodes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Its 1-based number in the file, empty documents counted.
    pub number: usize,
    /// The 1-based line its content starts on.
    pub line: usize,
    /// The JSON kubectl sends for it.
    pub value: Value,
    /// Where each of its values stands in the file (empty for a JSON document).
    pub positions: Positions,
}

/// A file kubectl would refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("document {document}, line {line}: {message}")]
pub struct DecodeError {
    /// The 1-based number of the document that fails.
    pub document: usize,
    /// The 1-based file line the error points at (the document's first line when kubectl
    /// names none).
    pub line: usize,
    /// kubectl's message (`error converting YAML to JSON: yaml: line 2: ...`; its line counts
    /// from the document's first line).
    pub message: String,
}

/// Every non-empty document of a manifest file's text, decoded as kubectl decodes it, or the
/// first error kubectl would report.
pub fn decode_documents(text: &str) -> Result<Vec<Document>, DecodeError> {
    let mut docs = Vec::new();
    if split::sniffs_json(text) {
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        let mut count = 0;
        let mut end = 0;
        loop {
            let start = end + (text[end..].len() - text[end..].trim_start().len());
            match stream.next() {
                None => return Ok(docs),
                Some(Ok(v)) => {
                    count += 1;
                    end = stream.byte_offset();
                    if !v.is_null() {
                        docs.push(Document {
                            number: count,
                            line: split::line_at(text, start),
                            value: v,
                            positions: Positions::default(),
                        });
                    }
                }
                Some(Err(e)) => {
                    let json_error = DecodeError {
                        document: count + 1,
                        line: e.line(),
                        message: format!("json: {e}"),
                    };
                    if count > 1 {
                        return Err(json_error);
                    }
                    // The stream may still be YAML: kubectl reads the rest as YAML, and reports
                    // the JSON error if the next document is no YAML either.
                    let from = split::after_json_whitespace(text, end);
                    let first_line = split::line_at(text, from);
                    return match yaml_documents(&text[from..], first_line, count, &mut docs) {
                        Err(e) if e.document == count + 1 => Err(json_error),
                        Err(e) => Err(e),
                        Ok(()) => Ok(docs),
                    };
                }
            }
        }
    }
    yaml_documents(text, 1, 0, &mut docs)?;
    Ok(docs)
}

/// The YAML documents of `text` (whose first line is the file's `first_line`), numbered after
/// `before`, appended to `docs`.
fn yaml_documents(
    text: &str,
    first_line: usize,
    before: usize,
    docs: &mut Vec<Document>,
) -> Result<(), DecodeError> {
    let (chunks, bad) = split::yaml_chunks(text, first_line);
    let mut number = before;
    for chunk in &chunks {
        number += 1;
        let fail = |e: compose::ParseError, prefix: &str| DecodeError {
            document: number,
            line: e
                .line
                .map_or(chunk.first_line, |l| chunk.first_line + l.saturating_sub(1)),
            message: format!("error converting YAML to JSON: {prefix}{}", e.message),
        };
        let tree = compose::compose(&chunk.text).map_err(|e| fail(e, "yaml: "))?;
        let origin = convert::Origin {
            first_line: chunk.first_line,
        };
        let Some((value, at, positions)) = on_deep_stack(&tree, |tree| {
            let Some((v, at)) = decode::decode(tree).map_err(|e| fail(e, "yaml: "))? else {
                return Ok(None);
            };
            let mut positions = Positions::default();
            let value = convert::to_json(&v, at, origin, &mut positions)
                .map_err(|m| fail(compose::ParseError::plain(m), ""))?;
            Ok(Some((value, at, positions)))
        })?
        else {
            continue;
        };
        if value.is_null() {
            continue;
        }
        docs.push(Document {
            number,
            line: chunk.first_line + at.0,
            value,
            positions,
        });
    }
    match bad {
        Some(bad) => Err(DecodeError {
            document: number + 1,
            line: bad.line,
            message: format!("invalid Yaml document separator: {}", bad.rest),
        }),
        None => Ok(()),
    }
}

/// Nesting up to which a document is decoded on the caller's stack.
const SHALLOW: usize = 64;
/// The stack of the thread that decodes deeper documents (the decoder recurses once per
/// level, up to [`decode::MAX_VALUE_DEPTH`]).
const DEEP_STACK: usize = 64 << 20;

/// Runs `f` on the tree: on this thread for a shallow document without aliases, else on a
/// thread with a stack for [`decode::MAX_VALUE_DEPTH`] levels.
fn on_deep_stack<T: Send>(
    tree: &compose::Tree,
    f: impl FnOnce(&compose::Tree) -> Result<T, DecodeError> + Send,
) -> Result<T, DecodeError> {
    if tree.max_depth <= SHALLOW && !tree.has_alias {
        return f(tree);
    }
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .stack_size(DEEP_STACK)
            .spawn_scoped(s, || f(tree));
        match spawned {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                Err(DecodeError {
                    document: 0,
                    line: 0,
                    message: "the YAML decoder failed".into(),
                })
            }),
            Err(e) => Err(DecodeError {
                document: 0,
                line: 0,
                message: format!("cannot start the YAML decoder: {e}"),
            }),
        }
    })
}

/// The values of [`decode_documents`] alone.
pub fn decode_values(text: &str) -> Result<Vec<Value>, DecodeError> {
    Ok(decode_documents(text)?
        .into_iter()
        .map(|d| d.value)
        .collect())
}

#[cfg(test)]
mod tests;
