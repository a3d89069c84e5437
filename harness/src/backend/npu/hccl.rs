//! The HCCL calls of the `npu` backend's collectives, loaded from `libhccl.so` at run time
//! (signatures: asc-devkit `include/adv_api/hccl/internal/{hccl.h,hcomm/hccl/hccl_comm.h}`).
//!
//! Ranks are threads of this process, one per device: rank 0 creates the root info and
//! every rank joins the communicator from its own thread. A collective step becomes
//! `HcclAlltoAllV` calls on raw bytes (int8 elements), built from the same transfer list
//! the sim executes ([`crate::backend::Exchange::all`]). A failure names the call, the
//! HCCL code and `HcclGetErrorString`'s text, then the runtime's recent-error message.
//! Joining waits at most `HCCL_CONNECT_TIMEOUT` seconds and a collective at most
//! `HCCL_EXEC_TIMEOUT` (HCCL's own variables); the backend's stream timeout bounds a
//! collective too.

use std::ffi::{CStr, c_char, c_void};
use std::path::Path;

use super::acl::{Acl, Stream};
use crate::backend::{BackendError, Exchange};

/// `HCCL_ROOT_INFO_BYTES`.
const ROOT_INFO_BYTES: usize = 4108;
/// `HcclDataType::HCCL_DATA_TYPE_INT8`: collectives move bytes.
const DATA_TYPE_INT8: i32 = 0;

pub type Comm = *mut c_void;

/// `HcclRootInfo`: an opaque blob rank 0 creates and every rank passes to the init call.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct RootInfo([u8; ROOT_INFO_BYTES]);

type GetRootInfoFn = unsafe extern "C" fn(*mut RootInfo) -> i32;
type InitRootInfoFn = unsafe extern "C" fn(u32, *const RootInfo, u32, *mut Comm) -> i32;
type AllToAllVFn = unsafe extern "C" fn(
    *const c_void,
    *const c_void,
    *const c_void,
    i32,
    *const c_void,
    *const c_void,
    *const c_void,
    i32,
    Comm,
    Stream,
) -> i32;
type CommDestroyFn = unsafe extern "C" fn(Comm) -> i32;
type ErrorStringFn = unsafe extern "C" fn(i32) -> *const c_char;

pub struct Hccl {
    get_root_info: GetRootInfoFn,
    init_root_info: InitRootInfoFn,
    all_to_all_v: AllToAllVFn,
    comm_destroy: CommDestroyFn,
    error_string: ErrorStringFn,
    acl: &'static Acl,
    _lib: libloading::Library,
}

/// One rank's side of an all-to-all: per peer, bytes and byte offsets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllToAllV {
    pub send_counts: Vec<u64>,
    pub send_displs: Vec<u64>,
    pub recv_counts: Vec<u64>,
    pub recv_displs: Vec<u64>,
}

impl Hccl {
    /// HCCL from `path`; `acl` supplies the runtime's recent-error message.
    pub(crate) fn load(path: &Path, acl: &'static Acl) -> Result<Hccl, BackendError> {
        let unavailable = |e: libloading::Error| {
            BackendError::Unavailable(format!("backend npu: cannot load {}: {e}", path.display()))
        };
        // SAFETY: loading CANN's HCCL library; the symbols are declared with its C signatures.
        unsafe {
            let lib = libloading::Library::new(path).map_err(unavailable)?;
            macro_rules! sym {
                ($name:literal) => {
                    *lib.get(concat!($name, "\0").as_bytes())
                        .map_err(unavailable)?
                };
            }
            Ok(Hccl {
                get_root_info: sym!("HcclGetRootInfo"),
                init_root_info: sym!("HcclCommInitRootInfo"),
                all_to_all_v: sym!("HcclAlltoAllV"),
                comm_destroy: sym!("HcclCommDestroy"),
                error_string: sym!("HcclGetErrorString"),
                acl,
                _lib: lib,
            })
        }
    }

    fn check(&self, call: &str, status: i32) -> Result<(), BackendError> {
        if status == 0 {
            return Ok(());
        }
        // SAFETY: returns null or a static NUL-terminated string.
        let p = unsafe { (self.error_string)(status) };
        let text = if p.is_null() {
            "no description".into()
        } else {
            // SAFETY: non-null, NUL-terminated.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        let recent = self
            .acl
            .recent_error()
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        Err(BackendError::Run(format!(
            "{call} failed with HCCL error {status} ({text}){recent}"
        )))
    }

    /// Rank 0's root info (its device must be set on the calling thread).
    pub(crate) fn root_info(&self) -> Result<RootInfo, BackendError> {
        let mut info = RootInfo([0; ROOT_INFO_BYTES]);
        // SAFETY: HCCL fills the 4108-byte blob.
        self.check("HcclGetRootInfo", unsafe {
            (self.get_root_info)(&mut info)
        })?;
        Ok(info)
    }

    /// Joins the communicator as `rank` of `ranks`; blocks until every rank has joined.
    pub(crate) fn join(
        &self,
        ranks: usize,
        info: &RootInfo,
        rank: usize,
    ) -> Result<Comm, BackendError> {
        let mut comm: Comm = std::ptr::null_mut();
        // SAFETY: `info` is rank 0's root info; HCCL writes the communicator into `comm`.
        self.check("HcclCommInitRootInfo", unsafe {
            (self.init_root_info)(ranks as u32, info, rank as u32, &mut comm)
        })?;
        Ok(comm)
    }

    /// Enqueues one all-to-all of bytes on `stream`.
    pub(crate) fn all_to_all_v(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        plan: &AllToAllV,
        comm: Comm,
        stream: Stream,
    ) -> Result<(), BackendError> {
        // SAFETY: the count and displacement arrays hold one u64 per rank of `comm`; the
        // device buffers cover every displacement + count (checked by the runtime's plan).
        self.check("HcclAlltoAllV", unsafe {
            (self.all_to_all_v)(
                send,
                plan.send_counts.as_ptr().cast(),
                plan.send_displs.as_ptr().cast(),
                DATA_TYPE_INT8,
                recv,
                plan.recv_counts.as_ptr().cast(),
                plan.recv_displs.as_ptr().cast(),
                DATA_TYPE_INT8,
                comm,
                stream,
            )
        })
    }

    pub(crate) fn destroy(&self, comm: Comm) -> Result<(), BackendError> {
        // SAFETY: `comm` came from join and is not used afterwards.
        self.check("HcclCommDestroy", unsafe { (self.comm_destroy)(comm) })
    }
}

/// `rank`'s HCCL all-to-all calls for a collective: one call per round, a round holding
/// at most one contiguous run per (sender, receiver) pair, in bytes.
pub fn all_to_all_rounds(ex: &Exchange, rank: usize, tp: usize, t: usize) -> Vec<AllToAllV> {
    let all = ex.all(tp, t);
    // The k-th run between a pair goes to round k.
    let mut tagged = Vec::with_capacity(all.len());
    for (i, &(to, x)) in all.iter().enumerate() {
        let k = all[..i]
            .iter()
            .filter(|(o, y)| *o == to && y.from == x.from)
            .count();
        tagged.push((k, to, x));
    }
    let rounds = tagged.iter().map(|(k, _, _)| k + 1).max().unwrap_or(0);
    let rb = ex.row_bytes as u64;
    (0..rounds)
        .map(|round| {
            let mut a = AllToAllV {
                send_counts: vec![0; tp],
                send_displs: vec![0; tp],
                recv_counts: vec![0; tp],
                recv_displs: vec![0; tp],
            };
            for &(k, to, x) in &tagged {
                if k != round {
                    continue;
                }
                if x.from == rank {
                    a.send_counts[to] = x.rows as u64 * rb;
                    a.send_displs[to] = x.src_row as u64 * rb;
                }
                if to == rank {
                    a.recv_counts[x.from] = x.rows as u64 * rb;
                    a.recv_displs[x.from] = x.dst_row as u64 * rb;
                }
            }
            a
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Pattern;

    #[test]
    fn all_to_all_rounds_pair_every_send_with_a_receive() {
        let ex = Exchange {
            pattern: Pattern::GroupAllToAll {
                local_groups: 2,
                src_slab_rows: 16,
                dst_slab_rows: 32,
            },
            src: 0,
            dst: 1,
            row_bytes: 4,
            src_rows: 64,
            dst_rows: 64,
        };
        let (tp, t) = (2, 8);
        let per_rank: Vec<Vec<AllToAllV>> =
            (0..tp).map(|r| all_to_all_rounds(&ex, r, tp, t)).collect();
        // two local groups: two rounds, one run per pair each
        assert!(per_rank.iter().all(|r| r.len() == 2));
        for s in 0..tp {
            for d in 0..tp {
                let rounds = per_rank[s].iter().zip(&per_rank[d]).enumerate();
                for (round, (sender, receiver)) in rounds {
                    assert_eq!(
                        sender.send_counts[d], receiver.recv_counts[s],
                        "round {round}: {s} -> {d}"
                    );
                    assert_eq!(sender.send_counts[d], 8 * 4);
                }
            }
        }
        // rank 1 receives group 2 (round 0) from rank 0's rows 32.. into its rows 0..8
        assert_eq!(per_rank[0][0].send_displs[1], 32 * 4);
        assert_eq!(per_rank[1][0].recv_displs[0], 0);
        assert_eq!(per_rank[1][0].recv_displs[1], 8 * 4);
        // and group 3 in round 1 at rows 32 + r·t
        assert_eq!(per_rank[1][1].recv_displs[1], (32 + 8) * 4);
    }
}
