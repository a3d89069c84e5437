//! `run`, `cost` and `bench`: forwarded to the `runner` binary, built in release
//! (`cargo run --release -q -p runner -- <command> <args>`). The runner compiles the
//! generated host harnesses; keeping it a separate process means `gen` never depends on
//! generated code.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// The cargo invocation that runs `command args…` in the runner of the workspace at `root`.
pub fn runner_command(cargo: &OsString, root: &Path, command: &str, args: &[OsString]) -> Command {
    let mut cmd = Command::new(cargo);
    cmd.args([
        "run",
        "--release",
        "--quiet",
        "--package",
        "runner",
        "--manifest-path",
    ])
    .arg(root.join("Cargo.toml"))
    .arg("--")
    .arg(command)
    .args(args);
    cmd
}

/// Runs the runner and returns its exit code.
pub fn forward(root: &Path, command: &str, args: &[OsString]) -> u8 {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    match runner_command(&cargo, root, command, args).status() {
        // a signal has no code: report failure
        Ok(status) => status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1)),
        Err(e) => {
            eprintln!("error: cannot start cargo to build the runner: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_reach_the_runner_after_the_separator() {
        let args: Vec<OsString> = ["--layer", "swa", "--tp", "2", "--start-pos", "-5"]
            .iter()
            .map(OsString::from)
            .collect();
        let cmd = runner_command(&"cargo".into(), Path::new("/repo"), "run", &args);
        let got: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            got,
            [
                "run",
                "--release",
                "--quiet",
                "--package",
                "runner",
                "--manifest-path",
                "/repo/Cargo.toml",
                "--",
                "run",
                "--layer",
                "swa",
                "--tp",
                "2",
                "--start-pos",
                "-5"
            ]
        );
    }
}
