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
    /// What an earlier launch of a step can leave in L2 for a later one.
    pub l2_bytes: u64,
    /// The L2 line: the granule of what a launch leaves warm ([`crate::kernel_library::GmArg::warm`]).
    pub l2_line_bytes: u64,
    /// HBM shared by N cores moves `a · N + b` bytes per cycle ([ge] Load fit).
    pub shared_gm: (f64, f64),
    /// All GM traffic of a launch, L2 hits included, at most this (an assumption).
    pub gm_peak_bytes_per_s: f64,
}

/// One core's modeled time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreTime {
    pub aic: bool,
    /// Cycles from the launch's start to its last pipe's finish.
    pub end: u64,
    /// Cycles each pipe was busy, in [`Pipe::ALL`] order.
    pub busy: [u64; 7],
    /// GM bytes through HBM (reads that missed L2, and writes), and bytes read as L2 hits.
    pub hbm_bytes: u64,
    pub l2_bytes: u64,
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
    /// Op head plus the latest finish over the cores, or, where the launch's cores together
    /// move more GM bytes than the shared HBM allows in that time, the time HBM needs: all
    /// HBM bytes at the fit's `a · N + b` bytes per cycle, all GM bytes (L2 hits too) at the
    /// peak. (Each core's own DMA already runs at its share; reads and writes on different
    /// pipes, and the cores' different ends, can still exceed the whole.)
    pub fn cycles(&self) -> f64 {
        self.chip.op_head_cycles + self.latest().max(self.shared_floor())
    }

    fn latest(&self) -> f64 {
        self.cores.iter().map(|c| c.end).max().unwrap_or(0) as f64
    }

    fn shared_floor(&self) -> f64 {
        let (a, b) = self.chip.shared_gm;
        let n = self.cores.len() as f64;
        let hbm: u64 = self.cores.iter().map(|c| c.hbm_bytes).sum();
        let all: u64 = hbm + self.cores.iter().map(|c| c.l2_bytes).sum::<u64>();
        (hbm as f64 / (a * n + b))
            .max(all as f64 / (self.chip.gm_peak_bytes_per_s / self.chip.clock_hz))
    }

    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.cycles() / self.chip.clock_hz)
    }

    /// What bounds the launch: the shared HBM when its floor decides the time; else, on the
    /// core that finishes last, the pipe busy longest, if it is busy at least half the time;
    /// else the core waited (latency and ordering).
    pub fn bound(&self) -> &'static str {
        let Some(last) = self.cores.iter().max_by_key(|c| c.end) else {
            return "empty";
        };
        if self.shared_floor() > self.latest() {
            return "HBM";
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chip() -> ChipTiming {
        ChipTiming {
            clock_hz: 1e9,
            op_head_cycles: 100.0,
            launch_gap: Duration::ZERO,
            hccs_bytes_per_s: 1e9,
            collective_latency: Duration::ZERO,
            l2_bytes: 0,
            l2_line_bytes: 512,
            shared_gm: (10.0, 20.0),
            gm_peak_bytes_per_s: 100e9,
        }
    }

    fn core(end: u64, busy_mte2: u64, hbm: u64, l2: u64) -> CoreTime {
        let mut busy = [0; 7];
        busy[4] = busy_mte2;
        CoreTime {
            aic: false,
            end,
            busy,
            hbm_bytes: hbm,
            l2_bytes: l2,
        }
    }

    #[test]
    fn a_launch_takes_its_last_core_or_the_shared_hbm_whichever_is_longer() {
        let t = |cores| KernelTime {
            chip: chip(),
            cores,
            calls: Vec::new(),
        };
        // two cores: HBM moves 10 · 2 + 20 = 40 bytes per cycle
        let by_cores = t(vec![core(1000, 900, 20_000, 0), core(800, 0, 0, 0)]);
        assert_eq!(by_cores.cycles(), 1100.0);
        assert_eq!(by_cores.bound(), "GM read");
        let by_hbm = t(vec![core(1000, 900, 60_000, 0), core(800, 0, 20_000, 0)]);
        assert_eq!(by_hbm.cycles(), 100.0 + 80_000.0 / 40.0);
        assert_eq!(by_hbm.bound(), "HBM");
        // L2 hits count against the 100 bytes-per-cycle peak only
        let by_peak = t(vec![core(1000, 900, 0, 150_000), core(800, 0, 0, 0)]);
        assert_eq!(by_peak.cycles(), 100.0 + 1500.0);
        let waiting = t(vec![core(1000, 100, 0, 0)]);
        assert_eq!(waiting.bound(), "latency");
    }
}
