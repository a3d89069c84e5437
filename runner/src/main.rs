use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(runner::cli::main(std::env::args_os()))
}
