//! The modeled device time of a launch, as the sim's timeline computes it
//! (`harness/sim/include/sim/timing.h`: the per-call costs, their sources and the model).

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The pipes of a core, in the sim's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pipe {
    S,
    V,
    M,
    Mte1,
    Mte2,
    Mte3,
    Fix,
}

impl Pipe {
    pub const ALL: [Pipe; 7] = [
        Pipe::S,
        Pipe::V,
        Pipe::M,
        Pipe::Mte1,
        Pipe::Mte2,
        Pipe::Mte3,
        Pipe::Fix,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Pipe::S => "S",
            Pipe::V => "V",
            Pipe::M => "M",
            Pipe::Mte1 => "MTE1",
            Pipe::Mte2 => "MTE2",
            Pipe::Mte3 => "MTE3",
            Pipe::Fix => "FIX",
        }
    }

    /// What a busy pipe means for a launch's bound.
    pub fn resource(self) -> &'static str {
        match self {
            Pipe::S => "scalar",
            Pipe::V => "vector",
            Pipe::M => "cube",
            Pipe::Mte1 => "L1→L0",
            Pipe::Mte2 => "GM read",
            Pipe::Mte3 | Pipe::Fix => "GM write",
        }
    }

    pub(crate) fn from_index(i: u32) -> Pipe {
        Pipe::ALL[(i as usize).min(6)]
    }
}

/// The chip figures the host side of the model uses (from the sim's table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChipTiming {
    pub clock_hz: f64,
    /// Cycles every kernel pays before its cores start ([ge] op head).
    pub op_head_cycles: f64,
    /// Device-side gap between two stream-ordered kernels (an assumption, see timing.h).
    pub launch_gap: Duration,
    /// Interconnect bandwidth to one peer, bytes per second.
    pub hccs_bytes_per_s: f64,
    /// Fixed cost of one collective (an assumption, see timing.h).
    pub collective_latency: Duration,
}

/// One core's modeled time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreTime {
    pub aic: bool,
    /// Cycles from the launch's start to its last pipe's finish.
    pub end: u64,
    /// Cycles each pipe was busy, in [`Pipe::ALL`] order.
    pub busy: [u64; 7],
}

/// One call of a traced launch: an interval on a pipe of a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedCall {
    pub core: u32,
    pub pipe: Pipe,
    pub api: &'static str,
    pub start: u32,
    pub cycles: u32,
}

/// A launch's modeled time.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTime {
    pub chip: ChipTiming,
    /// Every core of the launch in the sim's order (MIX: AIC, AIV, AIV per block).
    pub cores: Vec<CoreTime>,
    /// With tracing on: every call (else empty).
    pub calls: Vec<TimedCall>,
}

impl KernelTime {
    /// Op head plus the latest finish over the cores, in cycles.
    pub fn cycles(&self) -> f64 {
        self.chip.op_head_cycles + self.cores.iter().map(|c| c.end).max().unwrap_or(0) as f64
    }

    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.cycles() / self.chip.clock_hz)
    }

    /// What bounds the launch: on the core that finishes last, the pipe busy longest, if
    /// it is busy at least half the time; else the core waited (latency and ordering).
    pub fn bound(&self) -> &'static str {
        let Some(last) = self.cores.iter().max_by_key(|c| c.end) else {
            return "empty";
        };
        let (pipe, busy) = Pipe::ALL
            .into_iter()
            .zip(last.busy)
            .max_by_key(|(_, b)| *b)
            .expect("seven pipes");
        if last.end == 0 || (busy as f64) < 0.5 * last.end as f64 {
            "latency"
        } else {
            pipe.resource()
        }
    }
}

/// The `'static` copy of an API name (the set of names is small and fixed).
pub(crate) fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut set = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(n) = set.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    set.insert(leaked);
    leaked
}
