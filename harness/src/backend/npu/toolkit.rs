//! Finding the CANN toolkit: `$ASCEND_HOME_PATH` (set by CANN's `set_env.sh`), else the
//! default install location. Everything the `npu` backend needs from CANN is a path under
//! it, checked here so a missing piece is reported by name before anything is built.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::backend::BackendError;

/// Where CANN installs by default.
pub const DEFAULT_TOOLKIT: &str = "/usr/local/Ascend/ascend-toolkit";

const ADVICE: &str = "install CANN 9.0.0 or later and source its set_env.sh, or use --backend sim";

/// The oldest CANN whose ASC package builds `.asc` sources with `<<<>>>` launches into a
/// shared library on A2/A3 (asc-devkit's samples require it).
pub const MIN_CANN: &str = "9.0.0";

/// Files naming the installed version, relative to the toolkit root.
const VERSION_FILES: [&str; 2] = ["compiler/version.info", "runtime/version.info"];

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

    /// The directory of the CMake package of the Ascend C "ASC" language (asc-devkit
    /// installs `asc-config.cmake` in `<arch>-linux/lib64/cmake` and links it from
    /// `tikcpp/ascendc_kernel_cmake`; the first of [`Toolkit::asc_candidates`] that holds
    /// it). The `.asc` flow arrived with it, so an older toolkit is refused here, naming the
    /// version needed, instead of failing in cmake.
    pub fn asc_cmake_dir(&self) -> Result<PathBuf, BackendError> {
        let candidates = self.asc_candidates();
        if let Some(dir) = candidates
            .iter()
            .find(|d| d.join("asc-config.cmake").is_file())
        {
            return Ok(dir.clone());
        }
        let found = self
            .version()
            .map(|v| format!("this toolkit is version {v}"))
            .unwrap_or_else(|| "this toolkit names no version".into());
        Err(BackendError::Unavailable(format!(
            "backend npu: the CANN toolkit at {} has no ASC package (no asc-config.cmake in {}; \
             {found}): the `.asc` kernel build needs CANN {MIN_CANN} or later; {ADVICE}",
            self.root.display(),
            candidates[0].display()
        )))
    }

    /// Where the ASC package config may be, most usual first.
    pub fn asc_candidates(&self) -> Vec<PathBuf> {
        let arch = format!("{}-linux", std::env::consts::ARCH);
        [
            "compiler/tikcpp/ascendc_kernel_cmake".to_string(),
            format!("{arch}/tikcpp/ascendc_kernel_cmake"),
            format!("{arch}/lib64/cmake"),
            "lib64/cmake".to_string(),
        ]
        .iter()
        .map(|d| self.root.join(d))
        .collect()
    }

    /// The installed version as the toolkit's `version.info` states it (`Version=…`).
    pub fn version(&self) -> Option<String> {
        VERSION_FILES.iter().find_map(|f| {
            let text = std::fs::read_to_string(self.root.join(f)).ok()?;
            text.lines()
                .find_map(|l| l.trim().strip_prefix("Version="))
                .map(|v| v.trim().to_string())
        })
    }

    /// What identifies this toolkit in a build cache key: its root and version files.
    pub fn fingerprint(&self) -> Vec<u8> {
        let mut out = self.root.to_string_lossy().into_owned().into_bytes();
        for f in VERSION_FILES {
            out.push(0);
            out.extend(std::fs::read(self.root.join(f)).unwrap_or_default());
        }
        out
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
             /nonexistent/dsv4/ascend-toolkit does not exist); install CANN 9.0.0 or later and source \
             its set_env.sh, or use --backend sim"
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

    #[test]
    fn a_toolkit_without_the_asc_package_names_the_version_needed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("compiler/tikcpp/ascendc_kernel_cmake")).unwrap();
        std::fs::write(dir.path().join("compiler/version.info"), "Version=8.0.0\n").unwrap();
        let kit = Toolkit::locate_from(Some(dir.path().into()), Path::new("/nonexistent")).unwrap();
        assert_eq!(kit.version().as_deref(), Some("8.0.0"));
        let e = kit.asc_cmake_dir().unwrap_err().to_string();
        assert!(
            e.contains("has no ASC package")
                && e.contains("no asc-config.cmake in")
                && e.contains("this toolkit is version 8.0.0")
                && e.contains("needs CANN 9.0.0 or later"),
            "{e}"
        );
        std::fs::write(
            dir.path()
                .join("compiler/tikcpp/ascendc_kernel_cmake/asc-config.cmake"),
            "",
        )
        .unwrap();
        assert!(kit.asc_cmake_dir().is_ok());
        // asc-devkit's own install place is found too
        let other = tempfile::tempdir().unwrap();
        let arch_cmake = other
            .path()
            .join(format!("{}-linux/lib64/cmake", std::env::consts::ARCH));
        std::fs::create_dir_all(&arch_cmake).unwrap();
        std::fs::write(arch_cmake.join("asc-config.cmake"), "").unwrap();
        let kit =
            Toolkit::locate_from(Some(other.path().into()), Path::new("/nonexistent")).unwrap();
        assert_eq!(kit.asc_cmake_dir().unwrap(), arch_cmake);
    }
}
