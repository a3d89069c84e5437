//! Reading a spec file: bytes → content hash → YAML → [`SpecFile`], with YAML and
//! type errors turned into located [`SpecError`]s.

pub mod model;
pub mod range;

use std::borrow::Cow;

use abi::short_hash;
use serde::de::DeserializeOwned;
use serde_saphyr::{DefaultMessageFormatter, Error as YamlError, MessageFormatter};

use crate::diag::{Loc, SpecError, located};
pub use model::*;

/// A parsed spec and what the generated headers say about it; `S` is a stage-list entry.
#[derive(Debug)]
pub struct Spec<S> {
    /// Repo-relative path with `/` separators, e.g. `specs/swa.yaml`.
    pub path: String,
    pub text: String,
    /// First 12 hex digits of the SHA-256 of the file's bytes.
    pub hash: String,
    pub file: SpecFile<S>,
}

/// Parses one spec from its text. `path` is only used in messages and headers.
pub fn parse<S: DeserializeOwned>(path: &str, text: &str) -> Result<Spec<S>, SpecError> {
    match serde_saphyr::from_str::<SpecFile<S>>(text) {
        Ok(file) => Ok(Spec {
            path: path.to_owned(),
            text: text.to_owned(),
            hash: short_hash(text.as_bytes()),
            file,
        }),
        Err(e) => Err(yaml_error(path, text, &e)),
    }
}

fn yaml_error(path: &str, text: &str, error: &YamlError) -> SpecError {
    let error = error.without_snippet();
    let loc = error
        .location()
        .map(Loc::from)
        .unwrap_or(Loc { line: 1, col: 1 });
    let token = || token_at(text, loc);
    let (loc, message, rule) = match error {
        YamlError::SerdeUnknownField {
            field, expected, ..
        } => (
            loc,
            format!(
                "unknown key `{field}`; expected one of: {}",
                expected.join(", ")
            ),
            "only the keys of the schema are allowed",
        ),
        YamlError::SerdeUnknownVariant {
            variant, expected, ..
        } => (
            loc,
            format!(
                "unknown name `{variant}`; expected one of: {}",
                expected.join(", ")
            ),
            "the value must be one of the listed names",
        ),
        YamlError::DuplicateMappingKey { key, .. } => (
            loc,
            format!("duplicate key `{}`", key.as_deref().unwrap_or("?")),
            "a key appears at most once in a mapping",
        ),
        YamlError::SerdeMissingField { field, .. } => (
            enclosing_mapping(text, loc),
            format!("missing key `{field}`"),
            "every key of the schema without a default must be present",
        ),
        YamlError::InvalidScalar { ty, .. } => (
            loc,
            format!("`{}` is not {}", token(), type_name(ty)),
            "the value must have the key's type",
        ),
        YamlError::SerdeInvalidType { expected, .. }
        | YamlError::SerdeInvalidValue { expected, .. } => (
            loc,
            format!("`{}` is not {expected}", token()),
            "the value must have the key's type",
        ),
        other => (
            loc,
            DefaultMessageFormatter.format_message(other).into_owned(),
            "a spec is one YAML document holding a mapping",
        ),
    };
    located(path, text, loc, message, rule.to_owned())
}

fn type_name(ty: &str) -> Cow<'static, str> {
    match ty {
        "i64" | "u64" | "i32" | "u32" => "an integer".into(),
        "f64" | "f32" => "a number".into(),
        "bool" | "boolean" => "a boolean (true or false)".into(),
        other => format!("a valid {other}").into(),
    }
}

/// The scalar text starting at `loc`, for messages about values of the wrong type.
fn token_at(text: &str, loc: Loc) -> String {
    let Some(line) = text.lines().nth(loc.line.saturating_sub(1) as usize) else {
        return String::new();
    };
    let rest: String = line
        .chars()
        .skip(loc.col.saturating_sub(1) as usize)
        .collect();
    let end = rest.find([',', ']', '}', '#']).unwrap_or(rest.len());
    rest[..end].trim().to_owned()
}

/// serde reports a missing key at the last key it read; point at the key that
/// owns the mapping instead (block-style YAML), or keep the location.
fn enclosing_mapping(text: &str, loc: Loc) -> Loc {
    let lines: Vec<&str> = text.lines().collect();
    let indent = loc.col.saturating_sub(1) as usize;
    let Some(line) = lines.get(loc.line.saturating_sub(1) as usize) else {
        return loc;
    };
    // In a flow mapping `{ a: 1 }` the mapping opens on the same line.
    if let Some(open) = line.get(..indent).and_then(|before| before.rfind('{')) {
        return Loc {
            line: loc.line,
            col: open as u64 + 1,
        };
    }
    let first_key_line = lines.iter().position(|l| is_content(l));
    for n in (0..loc.line.saturating_sub(1) as usize).rev() {
        let line = lines[n];
        if !is_content(line) {
            continue;
        }
        let lead = line.len() - line.trim_start().len();
        if lead < indent {
            // `  - kind:` lists the owning key after the dash.
            let key_col = lead + line.trim_start().strip_prefix("- ").map_or(0, |_| 2);
            return Loc {
                line: n as u64 + 1,
                col: key_col as u64 + 1,
            };
        }
    }
    match first_key_line {
        Some(n) if indent == 0 => Loc {
            line: n as u64 + 1,
            col: 1,
        },
        _ => loc,
    }
}

fn is_content(line: &str) -> bool {
    let t = line.trim_start();
    !t.is_empty() && !t.starts_with('#') && t != "---"
}
