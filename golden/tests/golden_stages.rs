//! Hand-checkable cases per golden stage.

use golden::arith::{bf16_round, round_half_even};
use golden::attention::{KvSources, pack_heads, sparse_attention};
use golden::cache_insert::insert_rows;
use golden::candidates::{self, Candidate};
use golden::collectives::{all_to_all_groups, reduce_scatter};
use golden::compressor::{self, Geometry, StateTable, Weights};
use golden::fixtures::random::Draws;
use golden::fixtures::rope_rows::{inv_freq, rope_tables};
use golden::gemm::{EXACT_I8_K, Mat, Threads, matmul_i8};
use golden::hc_post::hc_post;
use golden::hc_pre::{cube_dot, sinkhorn};
use golden::mask::{MASK_VALUE, sparse_bias};
use golden::quant::quantize_row;
use golden::rope::{RopeRows, rotate, rotate_inverse};
use golden::topk::top_k;
use golden::{Dims, GoldenError, Layer, LayerSpec, RopeProfile};
use half::bf16;

fn small() -> Dims {
    LayerSpec::small(Layer::Swa, 1).dims
}

#[test]
fn rope_rotates_pairs_by_known_angles() {
    // Pair 0 by 90° (c = 0, s = 1), pair 1 by 180° (c = −1, s = 0).
    let mut x = vec![1.0f32, 2.0, 3.0, 4.0];
    let (cos, sin) = ([0.0f32, -1.0], [1.0f32, 0.0]);
    rotate(&mut x, &cos, &sin);
    assert_eq!(x, [-2.0, 1.0, -3.0, -4.0]);
    rotate_inverse(&mut x, &cos, &sin);
    assert_eq!(x, [1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn rope_tables_hold_cos_sin_of_position_times_inv_freq() {
    // Plain profile: inv_freq[0] = 1, so position 1 is angle 1 rad in pair 0.
    let (cos, sin) = rope_tables(&RopeProfile::PLAIN, 64, [0i64, 1, 100]);
    assert_eq!(cos.len(), 3 * 64);
    assert!(
        cos[..64].iter().all(|&c| c == bf16::ONE) && sin[..64].iter().all(|&s| s == bf16::ZERO)
    );
    assert_eq!(cos[64], bf16::from_f32(1f32.cos()));
    assert_eq!(sin[64], bf16::from_f32(1f32.sin()));
    // Columns 32..63 duplicate 0..31.
    assert_eq!(cos[128..160], cos[160..192]);
    let f = inv_freq(&RopeProfile::PLAIN, 64);
    assert_eq!(
        sin[128 + 5],
        bf16::from_f32(((100.0 * f[5]) as f64).sin() as f32)
    );
    // The token row drives q: rotating [1, 0] by the row of position 1 gives (cos 1, sin 1).
    let rows = RopeRows::from_tables(&cos, &sin, 64, 32);
    let mut x = vec![0.0f32; 64];
    x[0] = 1.0;
    rotate(&mut x, rows.cos(1), rows.sin(1));
    assert_eq!(
        (x[0], x[1]),
        (bf16_round(1f32.cos()), bf16_round(1f32.sin()))
    );
}

#[test]
fn yarn_frequencies_at_the_band_edges() {
    let yarn = RopeProfile::COMPRESSED;
    let plain = RopeProfile { yarn: None, ..yarn };
    let (base, blended) = (inv_freq(&plain, 64), inv_freq(&yarn, 64));
    // FLASH: low = floor(c(32)) = 15, high = ceil(c(1)) = 25.
    for i in 0..=15 {
        assert_eq!(blended[i], base[i], "i={i} is below the band: unchanged");
    }
    for i in 25..32 {
        assert_eq!(
            blended[i],
            base[i] / 16.0,
            "i={i} is above the band: divided by the factor"
        );
    }
    for i in 16..25 {
        assert!(
            blended[i] < base[i] && blended[i] > base[i] / 16.0,
            "i={i} blends"
        );
    }
    assert_eq!(base[0], 1.0);
    assert_eq!(base[1], (1.0 / 160_000f64.powf(2.0 / 64.0)) as f32);
}

#[test]
fn round_half_even_matches_ties_to_even() {
    for x in [
        0.5f32, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.49, -3.7, 5e6, 1e-8,
    ] {
        assert_eq!(round_half_even(x), x.round_ties_even(), "{x}");
    }
}

#[test]
fn sinkhorn_output_is_near_doubly_stochastic() {
    let logits = Draws::new(3).normal("logits", 16, 4.0);
    let mut c = logits.clone();
    sinkhorn(&mut c, 4, 20, 1e-6);
    for i in 0..4 {
        let row: f32 = (0..4).map(|o| c[i * 4 + o]).sum();
        let col: f32 = (0..4).map(|o| c[o * 4 + i]).sum();
        assert!((row - 1.0).abs() < 1e-3, "row {i} sums to {row}");
        assert!((col - 1.0).abs() < 1e-5, "column {i} sums to {col}");
    }
    assert!(c.iter().all(|&v| v > 0.0));
    // One iteration is a softmax per row then one column step: columns sum to 1.
    let mut one = logits;
    sinkhorn(&mut one, 4, 1, 1e-6);
    let col0: f32 = (0..4).map(|i| one[i * 4]).sum();
    assert!((col0 - 1.0).abs() < 1e-5);
}

#[test]
fn cube_dot_is_the_dot_product_within_rounding() {
    let d = Draws::new(5);
    let (x, w) = (d.normal("x", 4096, 1.0), d.normal("w", 4096, 0.04));
    let exact: f64 = x
        .iter()
        .zip(&w)
        .map(|(&a, &b)| f64::from(a) * f64::from(b))
        .sum();
    let got = f64::from(cube_dot(&x, &w));
    assert!(
        (got - exact).abs() < 1e-5 * exact.abs().max(1.0),
        "{got} vs {exact}"
    );
    // Groups of four are summed exactly: [1, 2^-30, -1, 0] in one group yields 2^-30.
    let mut x = vec![0.0f32; 16];
    let mut w = vec![0.0f32; 16];
    x[..3].copy_from_slice(&[1.0, 2f32.powi(-30), -1.0]);
    w[..3].copy_from_slice(&[1.0, 1.0, 1.0]);
    assert_eq!(cube_dot(&x, &w), 2f32.powi(-30));
}

#[test]
fn int8_quantisation_round_trip_is_within_half_a_step() {
    let row = Draws::new(7).normal("row", 1024, 0.3);
    let mut q = vec![0i8; row.len()];
    let scale = quantize_row(&row, &mut q);
    let amax = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    assert_eq!(
        scale,
        1.0 / (127.0 / amax),
        "scale is 1/(127/amax), not amax/127"
    );
    assert!(q.iter().any(|&v| v.abs() == 127));
    for (&x, &v) in row.iter().zip(&q) {
        assert!(
            (x - f32::from(v) * scale).abs() <= scale * 0.5 + 1e-7,
            "{x} -> {v}"
        );
    }
    // An all-zero row uses the 1e-4 floor: no 127/0.
    let mut z = vec![1i8; 8];
    let s = quantize_row(&[0.0; 8], &mut z);
    assert_eq!(z, [0; 8]);
    assert_eq!(s, 1.0 / (127.0 / 1e-4f32));
}

#[test]
fn int8_products_are_exact_on_both_paths() {
    let d = Draws::new(11);
    // One slice, two, Pro's K = 1536 (sums past 2^24), three slices with a ragged last one.
    for k in [EXACT_I8_K, EXACT_I8_K + 16, 1536, 3 * EXACT_I8_K + 5] {
        let mut a: Vec<i8> = d
            .uniform("a", 3 * k, -128.0, 128.0)
            .iter()
            .map(|&v| v.floor() as i8)
            .collect();
        let b: Vec<i8> = d
            .uniform("b", k * 5, -128.0, 128.0)
            .iter()
            .map(|&v| v.floor() as i8)
            .collect();
        a[..k].fill(-128); // the largest |product| sums
        let got = matmul_i8(Mat::rows(&a, 3, k), Mat::rows(&b, k, 5), Threads::All);
        for i in 0..3 {
            for j in 0..5 {
                let exact: i64 = (0..k)
                    .map(|p| i64::from(a[i * k + p]) * i64::from(b[p * 5 + j]))
                    .sum();
                assert_eq!(got[i * 5 + j], exact as i32 as f32, "k={k} ({i},{j})");
            }
        }
    }
}

#[test]
fn cache_insert_skips_minus_one_and_touches_only_mapped_rows() {
    let width = 4;
    let mut pool: Vec<f32> = (0..8 * width).map(|v| v as f32).collect();
    let before = pool.clone();
    let rows: Vec<f32> = vec![-1.0; 4 * width];
    insert_rows(&mut pool, width, &rows, &[-1, 5, -1, 2], "slots").unwrap();
    for r in 0..8 {
        let row = &pool[r * width..(r + 1) * width];
        if r == 5 || r == 2 {
            assert_eq!(row, [-1.0; 4]);
        } else {
            assert_eq!(
                row,
                &before[r * width..(r + 1) * width],
                "row {r} must be untouched"
            );
        }
    }
    let err = insert_rows(&mut pool, width, &rows[..width], &[8], "slots").unwrap_err();
    assert!(
        matches!(err, GoldenError::Contract(ref m) if m.contains("slots[0]=8")),
        "{err}"
    );
    assert!(insert_rows(&mut pool, width, &rows[..width], &[-2], "slots").is_err());
}

#[test]
fn window_mask_is_zero_then_minus_1e20() {
    let bias = sparse_bias(&[1, 128, 3], 128);
    assert_eq!(bias.len(), 3 * 128);
    assert_eq!(bias[0], 0.0);
    assert!(bias[1..128].iter().all(|&b| b == MASK_VALUE));
    assert!(bias[128..256].iter().all(|&b| b == 0.0));
    assert_eq!(&bias[256..259], &[0.0, 0.0, 0.0]);
    assert_eq!(bias[259], -1.0e20);
}

/// One head, head_dim 128 (nope 64), the given candidate rows.
fn tiny_attention(rows: &[Vec<f32>], q: &[f32], sink: f32, tiles: Vec<Vec<Candidate>>) -> Vec<f32> {
    let d = Dims {
        heads: 1,
        o_groups: 1,
        ..small()
    };
    let pool: Vec<bf16> = rows.iter().flatten().map(|&v| bf16::from_f32(v)).collect();
    let q: Vec<bf16> = q.iter().map(|&v| bf16::from_f32(v)).collect();
    let rope = RopeRows {
        half: 32,
        cos: vec![1.0; 32],
        sin: vec![0.0; 32],
    };
    let kv = KvSources {
        raw: &pool,
        compressed: &[],
        width: 128,
    };
    sparse_attention(&d, &q, &[tiles], kv, &[sink], &rope)
        .iter()
        .map(|v| v.to_f32())
        .collect()
}

#[test]
fn attention_with_one_valid_row_returns_it_and_the_sink_scales_it_down() {
    let row: Vec<f32> = (0..128).map(|i| (i as f32 - 64.0) / 32.0).collect();
    let q = vec![0.0f32; 128]; // score 0 for every lane
    let mut tile = vec![Candidate::Masked; 128];
    tile[0] = Candidate::Raw(0);
    // A sink far below the scores leaves o = v.
    let no_sink = tiny_attention(std::slice::from_ref(&row), &q, -1e30, vec![tile.clone()]);
    assert_eq!(
        no_sink,
        row.iter().map(|&v| bf16_round(v)).collect::<Vec<_>>()
    );
    // Sink 0 = score 0: the denominator doubles, every output halves.
    let with_sink = tiny_attention(std::slice::from_ref(&row), &q, 0.0, vec![tile.clone()]);
    for (a, b) in with_sink.iter().zip(&no_sink) {
        assert_eq!(*a, bf16_round(b / 2.0));
    }
    // No valid lane: zeros.
    let none = tiny_attention(&[row], &q, 0.0, vec![vec![Candidate::Masked; 128]]);
    assert!(none.iter().all(|&v| v == 0.0));
}

#[test]
fn sink_lowers_every_probability() {
    let d = Draws::new(13);
    let rows: Vec<Vec<f32>> = (0..128)
        .map(|r| d.normal(&format!("row{r}"), 128, 1.0))
        .collect();
    let q = d.normal("q", 128, 1.0);
    let tile: Vec<Candidate> = (0..128).map(Candidate::Raw).collect();
    let base = tiny_attention(&rows, &q, -1e30, vec![tile.clone()]);
    let sunk = tiny_attention(&rows, &q, 2.0, vec![tile]);
    let ratio: Vec<f32> = sunk
        .iter()
        .zip(&base)
        .filter(|(_, b)| b.abs() > 0.05)
        .map(|(s, b)| s / b)
        .collect();
    assert!(!ratio.is_empty());
    // Every output is scaled by the same l / (l + e^(sink − m)) < 1 (up to bf16 rounding).
    for r in &ratio {
        assert!(
            *r < 1.0 && (r - ratio[0]).abs() < 0.02,
            "{r} vs {}",
            ratio[0]
        );
    }
}

#[test]
fn tiles_merge_like_one_big_tile() {
    let d = Draws::new(17);
    let rows: Vec<Vec<f32>> = (0..256)
        .map(|r| d.normal(&format!("r{r}"), 128, 1.0))
        .collect();
    let q = d.normal("q", 128, 0.5);
    let all: Vec<Candidate> = (0..256).map(Candidate::Raw).collect();
    let one = tiny_attention(&rows, &q, 0.0, vec![all.clone()]);
    let two = tiny_attention(
        &rows,
        &q,
        0.0,
        vec![all[..128].to_vec(), all[128..].to_vec()],
    );
    for (a, b) in one.iter().zip(&two) {
        assert!((a - b).abs() <= 0.01 * a.abs().max(0.05), "{a} vs {b}");
    }
}

#[test]
fn packed_heads_put_head_g_times_hpg_plus_hh_at_g_t_hh() {
    let d = Dims {
        heads: 4,
        head_dim: 128,
        o_groups: 2,
        ..small()
    };
    let tokens = 3;
    let o: Vec<bf16> = (0..tokens * 4 * 128)
        .map(|i| bf16::from_f32((i / 128) as f32))
        .collect();
    let packed = pack_heads(&d, &o, 16);
    let group_in = 2 * 128;
    for g in 0..2 {
        for t in 0..16 {
            for hh in 0..2 {
                let v = packed[(g * 16 + t) * group_in + hh * 128].to_f32();
                let want = if t < tokens {
                    (t * 4 + g * 2 + hh) as f32
                } else {
                    0.0
                };
                assert_eq!(v, want, "g={g} t={t} hh={hh}");
            }
        }
    }
}

#[test]
fn all_to_all_orders_group_tokens_rank_major_and_reduce_scatter_sums_ascending() {
    let d = Dims {
        heads: 4,
        head_dim: 128,
        o_groups: 4,
        tp: 2,
        ..small()
    };
    let (t_pad, local_t, gin) = (16, 3, d.o_group_in());
    // Rank r's packed value at (g, t): 100·r + 10·g + t.
    let packed: Vec<Vec<bf16>> = (0..2)
        .map(|r| {
            (0..4 * t_pad * gin)
                .map(|i| {
                    let (g, t) = (i / (t_pad * gin), (i / gin) % t_pad);
                    bf16::from_f32((100 * r + 10 * g + t) as f32)
                })
                .collect()
        })
        .collect();
    let windows = all_to_all_groups(&d, &packed, t_pad, local_t);
    for (dst, w) in windows.iter().enumerate() {
        for lg in 0..2 {
            for u in 0..2 * local_t {
                let (src, t) = (u / local_t, u % local_t);
                let g = dst * 2 + lg;
                assert_eq!(
                    w[(lg * 2 * local_t + u) * gin].to_f32(),
                    (100 * src + 10 * g + t) as f32
                );
            }
        }
    }
    let partials = vec![vec![1.0f32, 2.0, 3.0, 4.0], vec![0.5f32, 0.25, 1e-8, 8.0]];
    let owned = reduce_scatter(&partials, 1, 2);
    assert_eq!(owned[0], [bf16::from_f32(1.5), bf16::from_f32(2.25)]);
    assert_eq!(owned[1], [bf16::from_f32(3.0 + 1e-8), bf16::from_f32(12.0)]);
}

#[test]
fn hc_post_is_the_fixed_order_formula() {
    let d = Dims {
        hidden: 2,
        ..small()
    };
    let attn = [bf16::from_f32(1.0), bf16::from_f32(-2.0)];
    let x_hc: Vec<f32> = (0..8).map(|i| i as f32 * 0.5).collect();
    let post = [1.0f32, 0.5, 2.0, 0.0];
    let comb: Vec<f32> = (0..16).map(|i| i as f32 / 16.0).collect();
    let y = hc_post(&d, &attn, &x_hc, &post, &comb);
    for o in 0..4 {
        for dd in 0..2 {
            let mut want = attn[dd].to_f32() * post[o];
            for i in 0..4 {
                want += x_hc[i * 2 + dd] * comb[i * 4 + o];
            }
            assert_eq!(y[o * 2 + dd], want);
        }
    }
}

#[test]
fn top_k_breaks_ties_by_ascending_index() {
    let scores = [1.0f32, 3.0, 3.0, 2.0, 3.0];
    assert_eq!(top_k(&scores, 2), [1, 2]);
    assert_eq!(top_k(&scores, 4), [1, 2, 4, 3]);
    assert_eq!(top_k(&scores, 9), [1, 2, 4, 3, 0]);
    assert!(top_k(&scores, 0).is_empty());
}

/// A compressor of ratio `ratio` over tokens at `positions`, with a state pool
/// of 64 pages mapped identically.
fn pooled_boundaries(ratio: usize, overlap: bool, positions: &[i32]) -> Vec<(usize, usize)> {
    let (hidden, hd, block) = (8, 4, 8);
    let g = Geometry {
        ratio,
        head_dim: hd,
        overlap,
        state_block: block,
    };
    let d = Draws::new(19);
    let out = g.out_dim();
    let w = |n: &str| {
        d.normal(n, out * hidden, 0.1)
            .iter()
            .map(|&v| bf16::from_f32(v))
            .collect::<Vec<_>>()
    };
    let (wkv, wgate) = (w("wkv"), w("wgate"));
    let ape = vec![0.0f32; ratio * out];
    let norm = vec![bf16::ONE; hd];
    let x = d.normal("x", positions.len() * hidden, 1.0);
    let width = 2048;
    let table: Vec<i32> = (0..width as i32).map(|c| c % 64).collect();
    let mut state = vec![0.0f32; 64 * block * g.state_width()];
    let slots: Vec<i64> = positions
        .iter()
        .map(|&p| i64::from(p) % (64 * block) as i64)
        .collect();
    let pooled = compressor::update_and_pool(
        g,
        &x,
        hidden,
        positions.len(),
        Weights {
            wkv: &wkv,
            wgate: &wgate,
            ape: &ape,
            norm_w: &norm,
        },
        positions,
        &slots,
        StateTable {
            entries: &table,
            width,
        },
        &mut state,
        ("slots", "table"),
    )
    .unwrap();
    pooled.iter().map(|p| (p.request, p.boundary)).collect()
}

#[test]
fn compressed_rows_are_emitted_exactly_at_the_first_boundary() {
    let seq = |start: i32| (start..start + 8).collect::<Vec<i32>>();
    // Ratio 128: (p + 1) % 128 == 0 at p = 8191 (token 7), none for 8192..8199.
    assert_eq!(pooled_boundaries(128, false, &seq(8184)), [(0, 7)]);
    assert_eq!(pooled_boundaries(128, false, &seq(8185)), [(0, 6)]);
    assert!(pooled_boundaries(128, false, &seq(8192)).is_empty());
    // Ratio 4: boundaries at s = 3 and 7 from p0 = 0, only the first is pooled.
    assert_eq!(pooled_boundaries(4, true, &seq(0)), [(0, 3)]);
    assert_eq!(pooled_boundaries(4, true, &seq(2)), [(0, 1)]);
    assert_eq!(pooled_boundaries(4, true, &seq(7)), [(0, 0)]);
}

#[test]
fn compressor_pools_a_softmax_weighted_mean_per_channel() {
    // One channel, ratio 4, no overlap; state rows hand-written: kv = q, score = ln(q + 1).
    let g = Geometry {
        ratio: 4,
        head_dim: 1,
        overlap: false,
        state_block: 2,
    };
    let mut state = vec![0.0f32; 4 * 2 * 2];
    for q in 0..4usize {
        state[q * 2] = q as f32;
        state[q * 2 + 1] = ((q + 1) as f32).ln();
    }
    let table = [0i32, 1, 2, 3];
    // Token 3 (boundary) with state writes disabled: pool positions 0..=3.
    let pooled = compressor::update_and_pool(
        g,
        &[0.0; 4],
        1,
        4,
        Weights {
            wkv: &[bf16::ZERO],
            wgate: &[bf16::ZERO],
            ape: &[0.0; 4],
            norm_w: &[bf16::ONE],
        },
        &[0, 1, 2, 3],
        &[-1, -1, -1, -1],
        StateTable {
            entries: &table,
            width: 4,
        },
        &mut state,
        ("slots", "table"),
    )
    .unwrap();
    // Weights (q+1)/10: Σ q (q+1)/10 = (0 + 2 + 6 + 12)/10 = 2.
    assert_eq!(pooled.len(), 1);
    assert!(
        (pooled[0].values[0] - 2.0).abs() < 1e-6,
        "{}",
        pooled[0].values[0]
    );
}

#[test]
fn hca_candidates_cover_the_window_then_every_visible_compressed_row() {
    let spec = LayerSpec::small(Layer::Hca, 1);
    let golden::LayerKind::Hca(h) = &spec.kind else {
        unreachable!()
    };
    let d = &spec.dims;
    // One request at p = 300..307: C_t = 2 rows for p ≥ 255 (p + 1 ≥ 256), capped by kv_seq_len.
    let positions: Vec<i32> = (300..308).collect();
    let indices: Vec<i32> = (0..8 * 128).map(|i| i % 128).collect();
    let table = [7i32, -1];
    let tiles = candidates::hca(d, h, &indices, &positions, &[308], &table, 2, 8);
    assert_eq!(tiles[0].len(), 2, "one window tile, one compressed tile");
    assert_eq!(tiles[0][1][0], Candidate::Compressed(7 * 32));
    assert_eq!(tiles[0][1][1], Candidate::Compressed(7 * 32 + 1));
    assert_eq!(tiles[0][1][2], Candidate::Masked);
    // kv_seq_len 200 caps C_t at 1.
    let capped = candidates::hca(d, h, &indices, &positions, &[200], &table, 2, 8);
    assert_eq!(capped[0][1][1], Candidate::Masked);
}

#[test]
fn csa_candidates_keep_top_k_slots_below_the_causal_bound() {
    let spec = LayerSpec::small(Layer::Csa, 1);
    let golden::LayerKind::Csa(c) = &spec.kind else {
        unreachable!()
    };
    let d = &spec.dims;
    let positions: Vec<i32> = (40..48).collect();
    let indices = vec![-1i32; 8 * 128];
    let mut topk = vec![-1i32; 8 * c.index_topk];
    // Token 0 (p = 40): bound (40 + 1) / 4 = 10; slot 9 kept, 10 masked.
    topk[0] = 9;
    topk[1] = 10;
    topk[2] = 3;
    let table: Vec<i32> = vec![5; c.cmp_table_blocks(d)];
    let tiles = candidates::csa(d, c, &indices, &positions, &topk, &table, table.len(), 8).unwrap();
    assert_eq!(
        tiles[0].len(),
        5,
        "window + 512 slots = five 128-lane tiles"
    );
    assert_eq!(tiles[0][1][0], Candidate::Compressed(5 * 32 + 9));
    assert_eq!(tiles[0][1][1], Candidate::Masked);
    assert_eq!(tiles[0][1][2], Candidate::Compressed(5 * 32 + 3));
    // A kept slot on an unmapped page breaks the contract.
    let bad: Vec<i32> = vec![-1; table.len()];
    assert!(candidates::csa(d, c, &indices, &positions, &topk, &bad, bad.len(), 8).is_err());
}
