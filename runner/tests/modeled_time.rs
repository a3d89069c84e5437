//! The modeled device time of a whole layer: a CSA at TP 2 on the sim with its calls traced.
//! The Perfetto trace it writes is well formed (every event has ts / dur / pid / tid,
//! durations are not negative, a track's events do not overlap); no launch is modeled faster
//! than its roofline; the layer's time is the chain of its steps; and the timeline changes
//! no value a kernel computes.

mod layer_checks;

use std::collections::BTreeMap;

use golden::compare::layer_probes;
use golden::fixtures::StartPositions;
use harness::backend::{KernelSources, sim::Sim};
use harness::kernel_library::Checks;
use harness::runtime::{RunOutput, Runtime, RuntimeOptions};
use layer_checks::seeded;
use runner::cost::LaunchCost;
use runner::modeled::Timeline;
use runner::{trace, variant};

fn run(checks: Checks) -> (RunOutput, &'static abi::plan::VariantPlan) {
    let plan = variant::by_name("csa_small_tp2").expect("variant");
    let spec = variant::layer_spec(plan).unwrap();
    let sim = Sim {
        checks,
        ..Sim::default()
    };
    let options = RuntimeOptions {
        probes: layer_probes(&spec),
        ..RuntimeOptions::default()
    };
    let sources = KernelSources::in_repo(&variant::repo_root());
    let rt = Runtime::prepare(plan, &sim, &sources, options).unwrap();
    let (f, _) = seeded(&spec, StartPositions::Default, None);
    (rt.run(&f.inputs).unwrap(), plan)
}

#[test]
fn a_traced_csa_layer_gives_a_well_formed_trace_and_a_chain_no_faster_than_its_roofline() {
    let traced = Checks {
        trace: true,
        ..Checks::default()
    };
    let (out, plan) = run(traced);
    let timeline = Timeline::of(&out.record).expect("the sim's timeline is on by default");

    // The trace: the JSON trace event format Perfetto reads.
    let doc = trace::document(plan.name(), &timeline);
    let text = serde_json::to_string(&doc).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = parsed["traceEvents"].as_array().expect("traceEvents");
    let mut tracks: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
    let mut pipes = 0;
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        let (pid, tid) = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        assert!(ts >= 0.0 && dur >= 0.0, "{e}");
        assert!(e["name"].is_string(), "{e}");
        // whole picoseconds, as written
        let (a, d) = ((ts * 1e6).round() as u64, (dur * 1e6).round() as u64);
        tracks.entry((pid, tid)).or_default().push((a, a + d));
        pipes += usize::from(tid >= 1000);
    }
    assert!(pipes > 1000, "{pipes} calls traced");
    assert_eq!(
        tracks
            .keys()
            .map(|k| k.0)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        2,
        "one process per rank"
    );
    for ((pid, tid), mut spans) in tracks {
        spans.sort();
        for w in spans.windows(2) {
            assert!(
                w[1].0 >= w[0].1,
                "track ({pid}, {tid}): [{}, {}) overlaps [{}, {})",
                w[0].0,
                w[0].1,
                w[1].0,
                w[1].1
            );
        }
    }

    // Every launch no faster than its roofline; the chain is the sum of its steps and gaps.
    let mut launches = 0;
    for s in out.record.steps.iter() {
        if let Some(c) = LaunchCost::of(s, &plan.chip) {
            let (modeled, _) = c.modeled.expect("modeled");
            assert!(
                modeled >= c.roofline,
                "{}: modeled {modeled:?} < roofline {:?}",
                c.kernel,
                c.roofline
            );
            launches += 1;
        }
    }
    assert_eq!(
        launches,
        plan.steps.len() * 2 - 2 * 2,
        "launches of both ranks"
    ); // two collectives per rank
    let rank0: Vec<_> = timeline.rank(0).collect();
    let last = rank0.last().unwrap();
    assert!(timeline.total >= last.start + last.time);
    for w in rank0.windows(2) {
        assert!(
            w[1].start >= w[0].start + w[0].time,
            "steps are stream-ordered"
        );
    }

    // The same run untraced and without the timeline: the same bits.
    let (plain, _) = run(Checks {
        timeline: false,
        ..Checks::default()
    });
    assert!(Timeline::of(&plain.record).is_none());
    assert_eq!(plain.outputs, out.outputs);
}
