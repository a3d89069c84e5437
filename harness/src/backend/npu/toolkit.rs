//! Finding the CANN toolkit: `$ASCEND_HOME_PATH` (set by CANN's `set_env.sh`), else the
//! default install location. Everything the `npu` backend needs from CANN is a path under
//! it, checked here so a missing piece is reported by name before anything is built.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::backend::BackendError;

/// Where CANN installs by default.
pub const DEFAULT_TOOLKIT: &str = "/usr/local/Ascend/ascend-toolkit";

const ADVICE: &str = "install CANN 8.x or use --backend sim";

/// An installed CANN toolkit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    /// The toolkit root (`$ASCEND_HOME_PATH`, e.g. `/usr/local/Ascend/ascend-toolkit/latest`).
    pub root: PathBuf,
}

impl Toolkit {
    /// The toolkit named by the environment, or at [`DEFAULT_TOOLKIT`].
    pub fn locate() -> Result<Toolkit, BackendError> {
        Toolkit::locate_from(
            std::env::var_os("ASCEND_HOME_PATH"),
            Path::new(DEFAULT_TOOLKIT),
        )
    }

    /// [`locate`](Self::locate) with the environment value and default location given.
    pub fn locate_from(home: Option<OsString>, default: &Path) -> Result<Toolkit, BackendError> {
        let missing = |why: String| {
            BackendError::Unavailable(format!(
                "backend npu: CANN toolkit not found ({why}); {ADVICE}"
            ))
        };
        let root = match home.filter(|h| !h.is_empty()) {
            Some(home) => {
                let root = PathBuf::from(home);
                if !root.is_dir() {
                    return Err(missing(format!(
                        "ASCEND_HOME_PATH={} does not exist",
                        root.display()
                    )));
                }
                root
            }
            None => {
                if !default.is_dir() {
                    return Err(missing(format!(
                        "ASCEND_HOME_PATH is unset and {} does not exist",
                        default.display()
                    )));
                }
                // The installer links the active version as `latest`.
                let latest = default.join("latest");
                if latest.is_dir() {
                    latest
                } else {
                    default.to_path_buf()
                }
            }
        };
        Ok(Toolkit { root })
    }

    /// ACL's runtime library (`aclInit`, `aclrtMalloc`, …).
    pub fn ascendcl(&self) -> Result<PathBuf, BackendError> {
        self.require("lib64/libascendcl.so", "the ACL runtime")
    }

    /// HCCL, for the collectives at TP > 1.
    pub fn hccl(&self) -> Result<PathBuf, BackendError> {
        self.require("lib64/libhccl.so", "HCCL")
    }

    /// The CMake package of the Ascend C "ASC" language (asc-devkit's `asc-config.cmake`).
    pub fn asc_cmake_dir(&self) -> Result<PathBuf, BackendError> {
        self.require(
            "compiler/tikcpp/ascendc_kernel_cmake",
            "the Ascend C CMake modules",
        )
    }

    fn require(&self, rel: &str, what: &str) -> Result<PathBuf, BackendError> {
        let p = self.root.join(rel);
        if p.exists() {
            Ok(p)
        } else {
            Err(BackendError::Unavailable(format!(
                "backend npu: {what} is missing from the CANN toolkit at {} (no {}); {ADVICE}",
                self.root.display(),
                p.display()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_toolkit_says_what_is_missing_and_what_to_do() {
        let nowhere = Path::new("/nonexistent/dsv4/ascend-toolkit");
        let unset = Toolkit::locate_from(None, nowhere).unwrap_err().to_string();
        assert_eq!(
            unset,
            "backend npu: CANN toolkit not found (ASCEND_HOME_PATH is unset and \
             /nonexistent/dsv4/ascend-toolkit does not exist); install CANN 8.x or use --backend sim"
        );
        let empty = Toolkit::locate_from(Some(OsString::new()), nowhere).unwrap_err();
        assert_eq!(empty.to_string(), unset);
        let wrong = Toolkit::locate_from(Some("/nonexistent/cann".into()), nowhere)
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("ASCEND_HOME_PATH=/nonexistent/cann does not exist"),
            "{wrong}"
        );
    }

    #[test]
    fn a_toolkit_without_acl_names_the_missing_library() {
        let dir = tempfile::tempdir().unwrap();
        let kit = Toolkit::locate_from(Some(dir.path().into()), Path::new("/nonexistent")).unwrap();
        assert_eq!(kit.root, dir.path());
        let e = kit.ascendcl().unwrap_err().to_string();
        assert!(
            e.contains("the ACL runtime is missing") && e.contains("libascendcl.so"),
            "{e}"
        );
    }
}
