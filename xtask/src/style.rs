//! ANSI colors for terminals, off when NO_COLOR is set or stdout is not a terminal.

use std::io::IsTerminal;

pub struct Style {
    color: bool,
}

impl Style {
    pub fn detect() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: !no_color && std::io::stdout().is_terminal(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Colors a unified diff line by line: additions green, removals red, hunks cyan.
    pub fn diff(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let body = line.strip_suffix('\n').unwrap_or(line);
            let styled = if body.starts_with("+++") || body.starts_with("---") {
                self.paint("1", body)
            } else if body.starts_with('+') {
                self.paint("32", body)
            } else if body.starts_with('-') {
                self.paint("31", body)
            } else if body.starts_with("@@") {
                self.paint("36", body)
            } else {
                body.to_owned()
            };
            out.push_str(&styled);
            if line.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }

    pub fn plus(&self, n: usize) -> String {
        self.paint("32", &"+".repeat(n))
    }

    pub fn minus(&self, n: usize) -> String {
        self.paint("31", &"-".repeat(n))
    }
}
