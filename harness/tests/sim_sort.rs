//! Sort32, MrgSort, GetMrgSortResult and GatherMask (sim/vec_sort.h) against plain-Rust
//! models of their documented semantics (descending, equal scores in input order, earlier
//! list first in a merge), their traps, and an exact top-k built from them.

#[path = "sim_kernels/support.rs"]
mod support;

use half::f16;
use harness::kernel_library::{CoreMode, GmArg, SimError, poison};
use rand::RngExt;
use support::{lib, rng};

/// Scores with many exact ties, -inf, +inf, ±0 and extremes.
fn tied_scores(seed: u64, n: usize) -> Vec<f32> {
    let mut r = rng(seed);
    (0..n)
        .map(|_| match r.random_range(0..40u32) {
            0 => f32::NEG_INFINITY,
            1 => f32::INFINITY,
            2 => -0.0,
            3 => 0.0,
            4 => f32::MIN,
            5 => f32::MAX,
            _ => r.random_range(-6..6i32) as f32 * 0.5,
        })
        .collect()
}

/// A permutation of 0..n scaled into distinct, non-monotonic indices: tie order is checked
/// against input position, not index value.
fn scrambled_indices(seed: u64, n: usize) -> Vec<u32> {
    let mut r = rng(seed);
    let mut keyed: Vec<(u32, u32)> = (0..n as u32)
        .map(|i| (r.random_range(0..u32::MAX), i))
        .collect();
    keyed.sort();
    keyed.iter().map(|&(_, i)| 7000 + 3 * i).collect()
}

/// Stable descending order of positions by score (equal scores: lower position first).
fn stable_desc(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).expect("no NaN"));
    order
}

#[test]
fn sort32_f32_sorts_each_32_descending_with_stable_ties() {
    let n = 160;
    let mut x = tied_scores(1, n);
    x[64..96].fill(1.5); // one repeat of all-equal scores
    let mut idx = scrambled_indices(2, n);
    let mut out = vec![0u32; 2 * n];
    poison(&mut out);
    lib()
        .launch(
            "sim_sort32_f32",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut x),
                GmArg::new("idx", &mut idx),
                GmArg::new("out", &mut out),
            ],
        )
        .unwrap();
    for r in 0..n / 32 {
        let block = &x[r * 32..(r + 1) * 32];
        for (k, &p) in stable_desc(block).iter().enumerate() {
            let e = r * 32 + k;
            assert_eq!(
                out[2 * e],
                block[p].to_bits(),
                "repeat {r} element {k}: score"
            );
            assert_eq!(
                out[2 * e + 1],
                idx[r * 32 + p],
                "repeat {r} element {k}: index"
            );
        }
    }
}

#[test]
fn sort32_f16_keeps_score_low_bytes_and_index_high() {
    let n = 160;
    let mut x: Vec<u16> = tied_scores(3, n)
        .iter()
        .map(|&v| f16::from_f32(v).to_bits())
        .collect();
    let mut idx = scrambled_indices(4, n);
    let mut out = vec![0u32; 2 * n];
    poison(&mut out);
    lib()
        .launch(
            "sim_sort32_f16",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut x),
                GmArg::new("idx", &mut idx),
                GmArg::new("out", &mut out),
            ],
        )
        .unwrap();
    for r in 0..n / 32 {
        let block: Vec<f32> = x[r * 32..(r + 1) * 32]
            .iter()
            .map(|&b| f16::from_bits(b).to_f32())
            .collect();
        for (k, &p) in stable_desc(&block).iter().enumerate() {
            let e = r * 32 + k;
            assert_eq!(
                out[2 * e],
                u32::from(x[r * 32 + p]),
                "repeat {r} element {k}: score, reserved bytes 0"
            );
            assert_eq!(
                out[2 * e + 1],
                idx[r * 32 + p],
                "repeat {r} element {k}: index"
            );
        }
    }
}

/// A sorted (descending) list of `len` raw (score, index) elements, list `q`.
fn sorted_list(seed: u64, q: u32, len: usize) -> Vec<(f32, u32)> {
    let mut r = rng(seed);
    let mut s: Vec<f32> = (0..len)
        .map(|_| {
            if r.random_range(0..10u32) == 0 {
                f32::NEG_INFINITY
            } else {
                r.random_range(0..6i32) as f32
            }
        })
        .collect();
    s.sort_by(|a, b| b.partial_cmp(a).unwrap());
    s.iter()
        .enumerate()
        .map(|(i, &v)| (v, q * 1000 + i as u32))
        .collect()
}

/// Stable merge, an earlier list winning ties; with `suspend`, stop once a list is exhausted.
fn merge_model(lists: &[Vec<(f32, u32)>], suspend: bool) -> (Vec<(f32, u32)>, Vec<usize>) {
    let mut head = vec![0usize; lists.len()];
    let mut out = Vec::new();
    loop {
        let exhausted = lists.iter().zip(&head).any(|(l, &h)| h == l.len());
        if suspend && exhausted {
            break;
        }
        let mut best: Option<usize> = None;
        for (q, l) in lists.iter().enumerate() {
            if head[q] < l.len() && best.is_none_or(|b| l[head[q]].0 > lists[b][head[b]].0) {
                best = Some(q);
            }
        }
        let Some(b) = best else { break };
        out.push(lists[b][head[b]]);
        head[b] += 1;
    }
    (out, head)
}

/// Runs sim_mrgsort on `reps` repeats of the lists; returns (merged elements, res).
fn run_mrgsort(
    lists: &[Vec<Vec<(f32, u32)>>],
    lens: [u32; 4],
    valid: u32,
    suspend: bool,
) -> (Vec<(f32, u32)>, Vec<u32>) {
    let reps = lists.len() as u32;
    let mut params = vec![
        valid,
        lens[0],
        lens[1],
        lens[2],
        lens[3],
        u32::from(suspend),
        reps,
    ];
    let mut src: Vec<u32> = Vec::new();
    for rep in lists {
        for l in rep {
            for &(s, i) in l {
                src.extend([s.to_bits(), i]);
            }
        }
    }
    src.resize(src.len().div_ceil(8).max(1) * 8, 0);
    let mut out = vec![0u32; src.len()];
    poison(&mut out);
    let mut res = vec![0u32; 8];
    lib()
        .launch(
            "sim_mrgsort",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("params", &mut params),
                GmArg::new("src", &mut src),
                GmArg::new("out", &mut out),
                GmArg::new("res", &mut res),
            ],
        )
        .unwrap();
    let merged = (0..res[0] as usize)
        .map(|e| (f32::from_bits(out[2 * e]), out[2 * e + 1]))
        .collect();
    (merged, res)
}

fn assert_pairs(what: &str, got: &[(f32, u32)], want: &[(f32, u32)]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.0.to_bits() == w.0.to_bits() && g.1 == w.1,
            "{what}[{i}]: got {g:?}, want {w:?}"
        );
    }
}

#[test]
fn mrgsort_merges_2_3_4_lists_of_unequal_lengths() {
    let cases: [([u32; 4], u32); 4] = [
        ([37, 5, 0, 0], 0b11),
        ([10, 64, 1, 0], 0b111),
        ([100, 33, 0, 7], 0b1111),
        ([3, 3, 90, 41], 0b1111),
    ];
    for (c, (lens, valid)) in cases.iter().enumerate() {
        let k = (valid.count_ones()) as usize;
        let lists: Vec<Vec<(f32, u32)>> = (0..k)
            .map(|q| sorted_list(100 + 10 * c as u64 + q as u64, q as u32, lens[q] as usize))
            .collect();
        let (got, _) = run_mrgsort(std::slice::from_ref(&lists), *lens, *valid, false);
        let (want, _) = merge_model(&lists, false);
        assert_pairs(&format!("case {c} lens {lens:?}"), &got, &want);
    }
}

#[test]
fn mrgsort_ties_take_the_earlier_list_first() {
    // every score equal: the output is list 1, then list 2, then list 3 (input order)
    let lists: Vec<Vec<(f32, u32)>> = (0..3u32)
        .map(|q| (0..9u32).map(|i| (2.5, q * 1000 + i)).collect())
        .collect();
    let (got, _) = run_mrgsort(std::slice::from_ref(&lists), [9, 9, 9, 0], 0b111, false);
    let want: Vec<(f32, u32)> = lists.concat();
    assert_pairs("all ties", &got, &want);
}

#[test]
fn mrgsort_exhausted_suspension_stops_and_reports_counts() {
    let lens = [20u32, 8, 30, 12];
    let lists: Vec<Vec<(f32, u32)>> = (0..4)
        .map(|q| sorted_list(200 + q as u64, q as u32, lens[q] as usize))
        .collect();
    let (got, res) = run_mrgsort(std::slice::from_ref(&lists), lens, 0b1111, true);
    let (want, taken) = merge_model(&lists, true);
    assert_pairs("suspended", &got, &want);
    let counts: Vec<usize> = res[1..5].iter().map(|&c| c as usize).collect();
    assert_eq!(counts, taken, "GetMrgSortResult");
    assert!(taken.iter().zip(&lens).any(|(&t, &l)| t == l as usize));
}

#[test]
fn mrgsort_repeats_merge_each_group_of_four_separately() {
    let reps: Vec<Vec<Vec<(f32, u32)>>> = (0..3u64)
        .map(|r| {
            (0..4u32)
                .map(|q| sorted_list(300 + 4 * r + u64::from(q), q, 16))
                .collect()
        })
        .collect();
    let (got, _) = run_mrgsort(&reps, [16; 4], 0b1111, false);
    let want: Vec<(f32, u32)> = reps.iter().flat_map(|l| merge_model(l, false).0).collect();
    assert_pairs("3 repeats", &got, &want);
}

fn bit(words: &[u8], j: usize) -> bool {
    (words[j / 8] >> (j % 8)) & 1 == 1
}

fn builtin(m: u8, j: usize) -> bool {
    match m {
        1 => j.is_multiple_of(2),
        2 => j % 2 == 1,
        7 => true,
        _ => j % 4 == usize::from(m - 3),
    }
}

#[test]
fn gathermask_patterns_modes_and_counts() {
    let mut r = rng(400);
    let mut x: Vec<u32> = (0..512).map(|_| r.random_range(1..u32::MAX)).collect();
    let mut pat: Vec<u32> = (0..64).map(|_| r.random_range(0..u32::MAX)).collect();
    let mut xh: Vec<u16> = (0..256).map(|_| r.random_range(1..u16::MAX)).collect();
    let mut path: Vec<u16> = (0..16).map(|_| r.random_range(0..u16::MAX)).collect();
    let mut out = vec![0u32; 11 * 512];
    let mut outh = vec![0u16; 3 * 256];
    let mut res = vec![0u32; 14];
    poison(&mut out);
    poison(&mut outh);
    lib()
        .launch(
            "sim_gathermask",
            CoreMode::Aiv,
            1,
            &mut [
                GmArg::new("x", &mut x),
                GmArg::new("pat", &mut pat),
                GmArg::new("xh", &mut xh),
                GmArg::new("path", &mut path),
                GmArg::new("out", &mut out),
                GmArg::new("outh", &mut outh),
                GmArg::new("res", &mut res),
            ],
        )
        .unwrap();
    let pb: Vec<u8> = pat.iter().flat_map(|w| w.to_le_bytes()).collect();
    let phb: Vec<u8> = path.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut want: Vec<Vec<u32>> = Vec::new();
    for m in 1..=7u8 {
        want.push(
            (0..512)
                .filter(|&e| builtin(m, e % 64))
                .map(|e| x[e])
                .collect(),
        );
    }
    // user pattern, Normal: repeat r reads its 64 bits at 32-byte block r
    want.push(
        (0..512)
            .filter(|&e| bit(&pb[(e / 64) * 32..], e % 64))
            .map(|e| x[e])
            .collect(),
    );
    // Counter mode, pattern 2, 300 elements
    want.push((0..300).filter(|&j| j % 2 == 1).map(|j| x[j]).collect());
    // Counter mode, mask 70, 2 repeats 32 elements apart, pattern re-read
    want.push(
        (0..2)
            .flat_map(|r| (0..70).filter(|&j| bit(&pb, j)).map(move |j| r * 32 + j))
            .map(|e| x[e])
            .collect(),
    );
    // in place, pattern 1, 4 repeats
    want.push((0..256).filter(|&e| e % 2 == 0).map(|e| x[e]).collect());
    for (c, w) in want.iter().enumerate() {
        assert_eq!(res[c] as usize, w.len(), "case {c}: rsvdCnt");
        let mut seg = w.clone();
        seg.resize(512, 0); // nothing written past rsvdCnt
        assert_eq!(&out[c * 512..(c + 1) * 512], &seg[..], "case {c}");
    }
    let wanth: [Vec<u16>; 3] = [
        (0..256).filter(|&e| e % 4 == 0).map(|e| xh[e]).collect(),
        (0..128)
            .filter(|&j| bit(&phb, j))
            .map(|j| xh[(j / 16) * 32 + j % 16])
            .collect(),
        (0..200).filter(|&j| bit(&phb, j)).map(|j| xh[j]).collect(),
    ];
    for (c, w) in wanth.iter().enumerate() {
        assert_eq!(res[11 + c] as usize, w.len(), "half case {c}: rsvdCnt");
        let mut seg = w.clone();
        seg.resize(256, 0);
        assert_eq!(&outh[c * 256..(c + 1) * 256], &seg[..], "half case {c}");
    }
}

#[test]
fn violations_trap() {
    let cases: [(u32, &[&str]); 11] = [
        (0, &["Sort32", "repeatTime 256 outside [0, 255]"]),
        (
            1,
            &["Sort32", "dst: misaligned address", "256-byte aligned"],
        ),
        (2, &["Sort32", "src0[5] is NaN"]),
        (3, &["MrgSort", "validBit 5 is not 3, 7 or 15"]),
        (
            4,
            &["MrgSort", "src.src2 is not sorted in descending order"],
        ),
        (5, &["MrgSort", "dst overlaps src.src3"]),
        (
            6,
            &["MrgSort", "repeatTimes 2 > 1 needs 4 lists of equal length"],
        ),
        (
            7,
            &["GatherMask", "src1Pattern 8 outside the built-in modes"],
        ),
        (8, &["GatherMask", "mask 0 in Counter mode"]),
        (9, &["GetMrgSortResult", "ifExhaustedSuspension = true"]),
        (
            10,
            &["MrgSort", "elementLengths[0] = 4096 outside [0, 4095]"],
        ),
    ];
    for (which, parts) in cases {
        let mut params = vec![which, 0, 0, 0, 0, 0, 0, 0];
        match lib().launch(
            "trap_sort",
            CoreMode::Aiv,
            1,
            &mut [GmArg::new("params", &mut params)],
        ) {
            Err(SimError::Trap { message, .. }) => {
                for p in parts {
                    assert!(
                        message.contains(p),
                        "case {which}: `{p}` missing from: {message}"
                    );
                }
            }
            other => panic!("case {which}: expected a trap, got {other:?}"),
        }
    }
}

/// Reference top-k: positions 0..n with their scores, padding (-inf, -1) up to
/// max(alignUp(n, 32), k), stable descending, first k.
fn topk_model(scores: &[f32], k: usize) -> Vec<(f32, i32)> {
    let npad = scores.len().div_ceil(32).max(k / 32) * 32;
    let mut all: Vec<(f32, i32)> = scores
        .iter()
        .enumerate()
        .map(|(i, &s)| (s, i as i32))
        .collect();
    all.resize(npad, (f32::NEG_INFINITY, -1));
    all.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap()); // stable: ties keep input order
    all.truncate(k);
    all
}

#[test]
fn topk_512_exact_with_stable_ties_and_padding() {
    const K: usize = 512;
    for (seed, n) in [(500u64, 1000usize), (501, 300), (502, 1500), (503, 1)] {
        let mut r = rng(seed);
        let mut scores: Vec<f32> = (0..n)
            .map(|_| {
                if r.random_range(0..30u32) == 0 {
                    f32::NEG_INFINITY
                } else {
                    r.random_range(0..50i32) as f32 * 0.25 - 6.0
                }
            })
            .collect();
        let mut params = vec![n as u32, 0, 0, 0, 0, 0, 0, 0];
        let mut out_s = vec![0f32; K];
        let mut out_i = vec![0i32; K];
        let mut res = vec![0u32; 8];
        poison(&mut out_s);
        poison(&mut out_i);
        lib()
            .launch(
                "sim_topk",
                CoreMode::Aiv,
                1,
                &mut [
                    GmArg::new("params", &mut params),
                    GmArg::new("scores", &mut scores),
                    GmArg::new("out_scores", &mut out_s),
                    GmArg::new("out_idx", &mut out_i),
                    GmArg::new("res", &mut res),
                ],
            )
            .unwrap_or_else(|e| panic!("n = {n}: {e}"));
        assert_eq!(
            &res[..2],
            &[K as u32, K as u32],
            "n = {n}: rsvdCnt of the two GatherMasks"
        );
        let want = topk_model(&scores, K);
        for (i, w) in want.iter().enumerate() {
            assert!(
                out_s[i].to_bits() == w.0.to_bits() && out_i[i] == w.1,
                "n = {n}, rank {i}: got ({}, {}), want {w:?}",
                out_s[i],
                out_i[i]
            );
        }
        if n < K {
            assert_eq!(
                out_i[n..],
                vec![-1; K - n][..],
                "n = {n}: -1 past the valid count"
            );
        }
    }
}
