//! Fixture metadata against the reference's documented test vectors
//! (swa.md §4.1–4.2), start-position rules, and collision refusal.

use golden::fixtures::block_table::BlockTable;
use golden::fixtures::metadata::{
    compressed_slot_mapping, kv_seq_lens, positions, slot_mapping, window_indices,
};
use golden::fixtures::start_pos::default_pattern;
use golden::fixtures::{self, FixtureError, FixtureOptions, StartPositions};
use golden::{Dims, Layer, LayerKind, LayerSpec};

/// FLASH metadata for `batch` requests with the SWA default set.
fn flash_metadata(batch: usize) -> (Vec<i64>, Vec<i32>, Vec<i32>) {
    let spec = LayerSpec::flash_swa(1);
    let starts = StartPositions::Default.resolve(&spec, batch).unwrap();
    let pos = positions(&starts, 8);
    let table = BlockTable::interleaved(batch, (1usize << 20) / 32, 512);
    let slots = slot_mapping(&pos, 8, &table, 32);
    let (idx, lens) = window_indices(&pos, 8, &table, 32, 128);
    (slots, idx, lens)
}

#[test]
fn swa_metadata_matches_the_documented_vectors_at_batch_64() {
    let (slots, idx, lens) = flash_metadata(64);
    // b = 0, start 8192: slots 0..7, full window wrapping in the pool.
    assert_eq!(&slots[..8], &[0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!((lens[0], idx[0], idx[127]), (128, 8193, 0));
    // b = 1, start 127.
    assert_eq!(
        &slots[8..16],
        &[6207, 8224, 8225, 8226, 8227, 8228, 8229, 8230]
    );
    assert_eq!(&idx[8 * 128..8 * 128 + 3], &[32, 33, 34]);
    // b = 2, start 31: partial windows with −1 tails.
    let t = 16;
    assert_eq!(
        &slots[t..t + 8],
        &[95, 2112, 2113, 2114, 2115, 2116, 2117, 2118]
    );
    assert_eq!((lens[t], idx[t * 128], idx[t * 128 + 31]), (32, 64, 95));
    assert!(idx[t * 128 + 32..(t + 1) * 128].iter().all(|&i| i == -1));
    assert_eq!(lens[t + 7], 39);
}

#[test]
fn swa_metadata_matches_the_documented_vectors_at_batch_32_and_16() {
    let (slots, idx, _) = flash_metadata(32);
    assert_eq!((idx[0], slots[8]), (12289, 3135));
    let (slots, idx, _) = flash_metadata(16);
    assert_eq!((idx[0], slots[8]), (14337, 1599));
}

#[test]
fn default_start_sets_are_deduplicated_and_tiled() {
    assert_eq!(default_pattern(&LayerSpec::flash_swa(1)), [8192, 127, 31]);
    assert_eq!(
        default_pattern(&LayerSpec::flash_hca(1)),
        [8192, 127, 128, 255, 7, 10]
    );
    assert_eq!(
        default_pattern(&LayerSpec::flash_csa(1)),
        [8192, 0, 2, 3, 7, 127, 128, 63, 255, 511]
    );
    let starts = StartPositions::Default
        .resolve(&LayerSpec::flash_hca(1), 8)
        .unwrap();
    assert_eq!(starts, [8192, 127, 128, 255, 7, 10, 8192, 127]);
}

#[test]
fn default_starts_are_clipped_to_the_layers_position_ceiling() {
    // A CSA layer with 8192 positions: the long-context start 8192 becomes the largest
    // legal one (8192 − 8); starts past it (511 at 512 positions) clip to the same.
    let mut spec = LayerSpec::flash_csa(1);
    spec.dims.max_seq_len = 8192;
    assert_eq!(
        default_pattern(&spec),
        [8184, 0, 2, 3, 7, 127, 128, 63, 255, 511]
    );
    assert!(StartPositions::Default.resolve(&spec, 16).is_ok());
    spec.dims.max_seq_len = 264;
    assert_eq!(default_pattern(&spec), [256, 0, 2, 3, 7, 127, 128, 63, 255]);
}

#[test]
fn start_positions_parse_scalars_and_lists() {
    assert_eq!(
        StartPositions::parse("8192").unwrap(),
        StartPositions::Scalar(8192)
    );
    assert_eq!(
        StartPositions::parse(" 1, 2,,3 ").unwrap(),
        StartPositions::List(vec![1, 2, 3])
    );
    assert!(StartPositions::parse(",").is_err());
    let err = StartPositions::parse("12,x").unwrap_err().to_string();
    assert!(err.contains("`x`"), "{err}");
}

#[test]
fn start_positions_outside_the_ceiling_are_refused_with_the_limit() {
    let spec = LayerSpec::flash_swa(1);
    let err = StartPositions::Scalar(-1)
        .resolve(&spec, 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("non-negative"), "{err}");
    let err = StartPositions::Scalar(1_048_569)
        .resolve(&spec, 1)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("MAX_SEQ_LEN=1048576") && err.contains("1048568"),
        "{err}"
    );
    assert_eq!(
        StartPositions::Scalar(1_048_568).resolve(&spec, 2).unwrap(),
        [1_048_568, 1_048_568]
    );
    // CSA's ceiling in this snapshot is 16384.
    let err = StartPositions::Scalar(16_380)
        .resolve(&LayerSpec::flash_csa(1), 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("MAX_SEQ_LEN=16384"), "{err}");
    // A list must have one start per request.
    let err = StartPositions::List(vec![1, 2, 3])
        .resolve(&spec, 4)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("needs 4 entries") && err.contains("got 3"),
        "{err}"
    );
}

/// Small weights, FLASH pool and batch: the reference's collision regime.
fn flash_pool_swa(tp: usize) -> LayerSpec {
    LayerSpec {
        dims: Dims {
            decode_batch: 64,
            kv_pool_blocks: 512,
            ..LayerSpec::small(Layer::Swa, tp).dims
        },
        kind: LayerKind::Swa,
    }
}

#[test]
fn a_63_request_batch_colliding_in_the_pool_is_refused() {
    let spec = flash_pool_swa(1);
    let starts = StartPositions::Default.resolve(&spec, 63).unwrap();
    let opts = FixtureOptions {
        starts: StartPositions::List(starts.iter().map(|&s| i64::from(s)).collect()),
        ..FixtureOptions::default()
    };
    match fixtures::build(&spec, &opts).unwrap_err() {
        FixtureError::Collision {
            mapping,
            duplicates,
            ..
        } => {
            assert_eq!(mapping, "swa_slot_mapping");
            assert_eq!(
                duplicates, 140,
                "swa.md §7 pitfall 9 counts 140 duplicate write rows"
            );
        }
        other => panic!("expected a collision, got {other}"),
    }
    // The default set at the sub-capacity batch of TP 2 (31 requests) is collision-free.
    let ok = FixtureOptions {
        tokens: Some(248),
        ..FixtureOptions::default()
    };
    assert!(fixtures::build(&flash_pool_swa(2), &ok).is_ok());
}

#[test]
fn token_counts_follow_the_contract() {
    let spec = LayerSpec::small(Layer::Swa, 1);
    for tokens in [0, 12, 136] {
        let opts = FixtureOptions {
            tokens: Some(tokens),
            ..FixtureOptions::default()
        };
        assert!(
            matches!(fixtures::build(&spec, &opts), Err(FixtureError::Tokens(_))),
            "{tokens}"
        );
    }
    // A scalar start means one request unless the token count says otherwise.
    let one = FixtureOptions {
        starts: StartPositions::Scalar(5000),
        ..FixtureOptions::default()
    };
    let f = fixtures::build(&spec, &one).unwrap();
    assert_eq!(
        f.inputs.values::<i32>("position_ids").unwrap(),
        &(5000..5008).collect::<Vec<_>>()[..]
    );
    let mismatch = FixtureOptions {
        tokens: Some(16),
        starts: StartPositions::List(vec![1, 2, 3]),
        ..FixtureOptions::default()
    };
    assert!(matches!(
        fixtures::build(&spec, &mismatch),
        Err(FixtureError::Tokens(_))
    ));
}

#[test]
fn compressed_slots_mark_every_boundary_token_only() {
    let pos = positions(&[0, 124], 8);
    let table = BlockTable::interleaved(2, 128, 256);
    let slots = compressed_slot_mapping(&pos, 8, &table, 4, 32);
    let marked: Vec<usize> = (0..16).filter(|&t| slots[t] >= 0).collect();
    // p + 1 ≡ 0 mod 4: positions 3, 7 and 127, 131 (both ratio-4 boundaries of a step).
    assert_eq!(marked, [3, 7, 11, 15]);
    assert_eq!(slots[3], table.row(0, 0, 32));
    assert_eq!(slots[15], table.row(1, 32, 32));
    assert_eq!(kv_seq_lens(&[0, 124], 8), [8, 132]);
}

#[test]
fn swa_small_pool_aliasing_is_counted_not_refused() {
    // The reference's small vectors (16 requests, 64 pages) give each request a
    // 128-row ring < window + seq − 1 = 135 rows: earlier window lanes read
    // rows this step rewrote. The fixture reports them.
    let spec = LayerSpec {
        dims: Dims {
            decode_batch: 16,
            kv_pool_blocks: 64,
            ..LayerSpec::small(Layer::Swa, 1).dims
        },
        kind: LayerKind::Swa,
    };
    let f = fixtures::build(&spec, &FixtureOptions::default()).unwrap();
    assert!(f.window_aliases > 0);
    // The FLASH pool regime has none.
    assert_eq!(
        fixtures::build(&flash_pool_swa(1), &FixtureOptions::default())
            .unwrap()
            .window_aliases,
        0
    );
}
