//! Located spec errors: `file:line:col: error: <value and what is wrong> (rule: <rule>)`,
//! followed by the offending source line with a caret.

use std::fmt;

use serde_saphyr::{Location, Spanned};

/// A 1-based position in a spec file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc {
    pub line: u64,
    pub col: u64,
}

impl Loc {
    pub fn of<T>(value: &Spanned<T>) -> Loc {
        Loc::from(value.referenced)
    }
}

impl From<Location> for Loc {
    fn from(l: Location) -> Loc {
        Loc {
            line: l.line(),
            col: l.column(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The spec path as the user knows it (repo-relative when possible).
    pub file: String,
    /// `None` when the file could not be read at all.
    pub loc: Option<Loc>,
    pub message: String,
    pub rule: String,
    /// The source line the location points into, for the caret display.
    pub source_line: Option<String>,
}

impl SpecError {
    /// The one-line form, without the source excerpt.
    pub fn headline(&self) -> String {
        let at = match self.loc {
            Some(l) => format!("{}:{}:{}", self.file, l.line, l.col),
            None => self.file.clone(),
        };
        format!("{at}: error: {} (rule: {})", self.message, self.rule)
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.headline())?;
        if let (Some(loc), Some(line)) = (self.loc, &self.source_line) {
            let gutter = loc.line.to_string().len();
            let caret = " ".repeat(loc.col.saturating_sub(1) as usize);
            write!(
                f,
                "\n{:gutter$} |\n{} | {line}\n{:gutter$} | {caret}^",
                "", loc.line, ""
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecError {}

/// Collects the errors of one spec file.
pub struct Diagnostics<'a> {
    file: &'a str,
    text: &'a str,
    pub errors: Vec<SpecError>,
}

impl<'a> Diagnostics<'a> {
    pub fn new(file: &'a str, text: &'a str) -> Self {
        Diagnostics {
            file,
            text,
            errors: Vec::new(),
        }
    }

    pub fn error(&mut self, loc: Loc, message: impl Into<String>, rule: impl Into<String>) {
        let error = located(self.file, self.text, loc, message.into(), rule.into());
        // Per-TP checks can find the same fault once per degree; report it once.
        if !self.errors.contains(&error) {
            self.errors.push(error);
        }
    }

    pub fn is_clean(&self) -> bool {
        self.errors.is_empty()
    }

    /// Whether a value already has an error: one report per offending value is enough.
    pub fn has_error_at(&self, loc: Loc) -> bool {
        self.errors.iter().any(|e| e.loc == Some(loc))
    }
}

pub fn located(file: &str, text: &str, loc: Loc, message: String, rule: String) -> SpecError {
    let source_line = (loc.line >= 1)
        .then(|| text.lines().nth(loc.line as usize - 1))
        .flatten()
        .map(str::to_owned);
    SpecError {
        file: file.to_owned(),
        loc: Some(loc),
        message,
        rule,
        source_line,
    }
}
