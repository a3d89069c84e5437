//! Kernels of stage hc_post (swa.md §3.9), building block `dsv4/hc_post.h`: the
//! attention output folded back into the HC streams, f32 in the reference order.

use abi::{DType, Dim};

use super::kind::{Data, Kind, Tile, TileCheck, Tiled, tiling};
use crate::budget::{self, Buffer, row};
use crate::chip::Chip;
use crate::chip::Mem::Ub;
use crate::diag::Diagnostics;
use crate::kernel_plan::gemm;
use crate::kernel_plan::{Builder, ByColumns, Cores, Kernel, Prologue, Value};

pub struct HcPost;

tiling! {
    /// An item of `tokens` tokens × `cols` columns.
    tokens, cols
}

impl Kind for HcPost {
    const NAME: &'static str = "hc_post";
    const NEEDS: &'static [Data] = &[Data::AttnOut, Data::XMixed];
    const PRODUCES: &'static [Data] = &[Data::XOut];
    type Spec = Tiled<Tiling>;
    type Params = Tiling<Tile>;

    fn read(spec: &Tiled<Tiling>, d: &mut Diagnostics) -> Tiling<Tile> {
        spec.tiling.value.read(d)
    }

    fn check(t: &Tiling<Tile>, c: &mut TileCheck) {
        c.tokens(t.tokens);
        c.divides(t.cols, "cols", c.plan.model.hidden, "hidden");
    }

    fn plan(t: &Tiling<Tile>, b: &mut Builder) {
        let p = b.plan;
        let (hidden, hc) = (p.model.hidden, p.model.hc_mult);
        let (tokens, cols) = (t.tokens.value, t.cols.value);
        // The kernel moves whole 32-byte blocks (no DataCopyPad path): 16 bf16 per block.
        if cols % 16 != 0 {
            b.missing(format!(
                "tile cols {cols} is not a multiple of 16 (hc_post.h moves whole 32-byte blocks of bf16)"
            ));
            return;
        }
        let per_token = |n: usize| vec![Dim::Var("t"), Dim::Const(n)];
        b.workspace("attn_out", per_token(hidden), DType::Bf16);
        b.workspace("post", per_token(hc), DType::F32);
        b.workspace("comb", per_token(hc * hc), DType::F32);
        let kernel = kernel(hc, hidden, tokens, cols);
        // At TP 1 the rows o_proj rounds to bf16 (group_combine.h) can be this kernel's
        // prologue: they then stay on chip.
        // At TP > 1 the reduce-scatter's sum (rank_sum.h) can be, likewise.
        let offer = match b.last_launch() {
            Some((l, producer)) if p.fuse && l.args.last() == Some(&"attn_out") => {
                let (cap, products) = (p.shape.local_t, l.args[0]);
                match with_combine(producer, &kernel, cap, p.chip) {
                    Some(o) => Some((by_columns(&o.fused, products, cap, p.chip), o)),
                    None => with_rank_sum(producer, &kernel, cap, p.chip).map(|o| (None, o)),
                }
            }
            _ => None,
        };
        let blocks = reach(&kernel, hidden, p.shape.local_t, p.chip);
        b.launch(
            kernel,
            blocks,
            &["attn_out", "x_hc", "post", "comb", "x_out"],
        );
        if let Some((ranges, offer)) = offer {
            b.prologue(offer);
            if let Some(ranges) = ranges {
                b.by_columns(ranges);
            }
        }
    }
}

/// The fused group sum and mix `fused` (reading the group products from `products`) on
/// column ranges of the hidden rows, each on as many vector cores as its items reach (at
/// most all of them): wo_b's ranges may then run beside it (`gemm::overlap`).
fn by_columns(
    fused: &Kernel,
    products: &'static str,
    cap: usize,
    chip: &Chip,
) -> Option<ByColumns> {
    let [hidden, cols] = ["HIDDEN", "COLS"].map(|n| fused.u32_param(n).expect("hc_post's params"));
    gemm::by_columns(fused, products, hidden, cols, |n| {
        reach(fused, n, cap, chip)
    })
}

/// The vector cores the items of an hc_post kernel (`kernel`: TOKENS × COLS each) over
/// `cols` of the columns reach at `cap` tokens, at most all of them.
fn reach(kernel: &Kernel, cols: usize, cap: usize, chip: &Chip) -> u32 {
    let [tokens, item_cols] =
        ["TOKENS", "COLS"].map(|n| kernel.u32_param(n).expect("hc_post's params"));
    chip.aiv_cores.min(cap / tokens * (cols / item_cols)) as u32
}

/// `dsv4/hc_post.h` for items of `tokens` × `cols`.
fn kernel(hc: usize, hidden: usize, tokens: usize, cols: usize) -> Kernel {
    Kernel {
        name: format!("hc_post_hc{hc}_d{hidden}_t{tokens}_c{cols}"),
        doc: "hc_post: x_out[o] = ((a·post[o] + x0·comb[0][o]) + …) + x3·comb[3][o], all f32"
            .into(),
        block: "hc_post.h",
        class: "HcPost",
        cores: Cores::Aiv,
        params: vec![
            ("HC", Value::u32(hc)),
            ("HIDDEN", Value::u32(hidden)),
            ("TOKENS", Value::u32(tokens)),
            ("COLS", Value::u32(cols)),
        ],
        args: vec!["attn_out", "x_hc", "post", "comb", "x_out"],
        buffers: buffers(tokens, cols, hc),
        parts: Vec::new(),
    }
}

/// `dsv4/group_combine_hc_post.h`: `combine`'s bf16 rows (group_combine.h) summed per item
/// of `post`'s and mixed at once ([`fused_items`]); `None` when `combine` is not that or no
/// item fits. `cap`: the tokens a launch may have.
fn with_combine(combine: &Kernel, post: &Kernel, cap: usize, chip: &Chip) -> Option<Prologue> {
    let bf16 = combine.param("OUT_BF16") == Some(Value::Bool(true));
    if combine.block != "group_combine.h" || !bf16 {
        return None;
    }
    let (groups, rows) = (combine.u32_param("GROUPS")?, combine.u32_param("ROWS")?);
    let [tokens, hidden] =
        ["TOKENS", "HIDDEN"].map(|n| post.u32_param(n).expect("hc_post's params"));
    if combine.u32_param("N")? != hidden {
        return None;
    }
    let (part, buffers) = fused_items(post, chip, |c| combined_buffers(groups, tokens, c, hidden))?;
    let mut params = vec![
        ("GROUPS", Value::u32(groups)),
        ("ROWS", Value::u32(rows)),
        ("N", Value::u32(hidden)),
        ("PRODUCT_BUFFERS", Value::u32(PRODUCT_BUFFERS)),
    ];
    params.extend(part.params.iter().copied());
    let fused = Kernel {
        name: format!("group_combine_g{groups}_r{rows}_{}", part.name),
        doc: format!("{}, from o_proj's dequantised group sums", part.doc),
        block: "group_combine_hc_post.h",
        class: "GroupCombineHcPost",
        cores: Cores::Aiv,
        params,
        args: vec!["p", "scale", "wo_b_scale", "x_hc", "post", "comb", "x_out"],
        buffers,
        parts: Vec::new(),
    };
    Some(prologue(combine, post, fused, cap, chip))
}

/// `dsv4/rank_sum_hc_post.h`: the reduce-scatter's sum (`sum`, rank_sum.h) of each item of
/// `post`'s, rounded and mixed at once ([`fused_items`]); `None` when `sum` is not that or no
/// item fits. `cap`: the tokens a launch may have.
fn with_rank_sum(sum: &Kernel, post: &Kernel, cap: usize, chip: &Chip) -> Option<Prologue> {
    if sum.block != "rank_sum.h" {
        return None;
    }
    let tp = sum.u32_param("TP")?;
    let [tokens, hidden] =
        ["TOKENS", "HIDDEN"].map(|n| post.u32_param(n).expect("hc_post's params"));
    if sum.u32_param("N")? != hidden {
        return None;
    }
    let (part, buffers) = fused_items(post, chip, |c| summed_buffers(tokens, c))?;
    let mut params = vec![("TP", Value::u32(tp)), ("N", Value::u32(hidden))];
    params.extend(part.params.iter().copied());
    let fused = Kernel {
        name: format!("rank_sum_tp{tp}_{}", part.name),
        doc: format!(
            "{}, from the reduce-scatter's sum of the ranks' partials",
            part.doc
        ),
        block: "rank_sum_hc_post.h",
        class: "RankSumHcPost",
        cores: Cores::Aiv,
        params,
        args: vec!["window", "x_hc", "post", "comb", "x_out"],
        buffers,
        parts: Vec::new(),
    };
    Some(prologue(sum, post, fused, cap, chip))
}

/// hc_post's kernel at `post`'s item columns or, where the producer's buffers
/// (`producer(cols)`), the item's f32 sum, rounded to bf16 and widened back, and hc_post's
/// but its attention rows would overflow UB, a half or a quarter of them, with all the fused
/// kernel's buffers; `None` where none fits.
fn fused_items(
    post: &Kernel,
    chip: &Chip,
    producer: impl Fn(usize) -> Vec<Buffer>,
) -> Option<(Kernel, Vec<Buffer>)> {
    let [hc, hidden, tokens, cols] =
        ["HC", "HIDDEN", "TOKENS", "COLS"].map(|n| post.u32_param(n).expect("hc_post's params"));
    [cols, cols / 2, cols / 4]
        .into_iter()
        .filter(|&c| c % 16 == 0 && hidden.is_multiple_of(c))
        .map(|c| {
            let part = kernel(hc, hidden, tokens, c);
            let mut buffers = producer(c);
            buffers.extend([
                row("acc", Ub, DType::F32, tokens * c, 1, None),
                row("attn_out", Ub, DType::Bf16, tokens * c, 1, None),
                row("attn_f32", Ub, DType::F32, tokens * c, 1, None),
            ]);
            let shared = |b: &&Buffer| b.name != "attn_out" && b.name != "attn_f32";
            buffers.extend(part.buffers.iter().filter(shared).cloned());
            (part, buffers)
        })
        .find(|(_, buffers)| budget::bytes_in(buffers, Ub, chip) <= chip.capacity(Ub))
}

/// The offer of `post` to take `producer` as its prologue (`fused`, on as many vector cores
/// as its items reach at `cap` tokens).
fn prologue(producer: &Kernel, post: &Kernel, fused: Kernel, cap: usize, chip: &Chip) -> Prologue {
    let hidden = fused.u32_param("HIDDEN").expect("hc_post's params");
    Prologue {
        producer: producer.name.clone(),
        consumer: post.name.clone(),
        input: "attn_out",
        block_dim: reach(&fused, hidden, cap, chip),
        fused,
    }
}

/// The rank sum's own UB in rank_sum_hc_post.h for items of `tokens` × `cols`: a source
/// rank's rows (f32, double buffered).
fn summed_buffers(tokens: usize, cols: usize) -> Vec<Buffer> {
    vec![row("rows_in", Ub, DType::F32, tokens * cols, 2, Some(cols))]
}

/// Group products group_combine_hc_post.h keeps in flight: as many as the TPipe's V_MTE2
/// event ids allow beside the scales' queue and the x_hc rows' two (8 in all), so the next
/// item's products load while the vector unit mixes this one.
const PRODUCT_BUFFERS: usize = 5;

/// The group sum's own UB in group_combine_hc_post.h for items of `tokens` × `cols`: the
/// groups' products (i32, [`PRODUCT_BUFFERS`]), the rows' scales (a 32-byte block run per
/// group, then each spread over a block), one group's term (f32), wo_b_scale whole.
fn combined_buffers(groups: usize, tokens: usize, cols: usize, hidden: usize) -> Vec<Buffer> {
    use DType::*;
    let (t, c) = (tokens, cols);
    vec![
        row("products", Ub, I32, t * c, PRODUCT_BUFFERS, Some(c)),
        row("scales", Ub, F32, groups * t.next_multiple_of(8), 1, None),
        row(
            "scale_blocks",
            Ub,
            F32,
            groups * t.next_multiple_of(8) * 8,
            1,
            None,
        ),
        row("term", Ub, F32, t * c, 1, None),
        row("wo_b_scale", Ub, F32, hidden, 1, None),
    ]
}

/// hc_post.h's UB: an item of `tokens` tokens × `cols` columns (attn_out, the x_hc rows and
/// the x_out rows, double buffered), attn_out widened, a product row, and the group's post
/// and comb (moved with DataCopyPad), each starting on a block.
fn buffers(tokens: usize, cols: usize, hc: usize) -> Vec<Buffer> {
    use DType::*;
    let (t, c) = (tokens, cols);
    vec![
        row("attn_out", Ub, Bf16, t * c, 2, Some(c)),
        row("x_hc", Ub, F32, t * hc * c, 2, Some(c)),
        row("x_out", Ub, F32, t * hc * c, 2, Some(c)),
        row("attn_f32", Ub, F32, t * c, 1, None),
        row("product", Ub, F32, c, 1, None),
        row(
            "weights",
            Ub,
            F32,
            (t * hc).next_multiple_of(8) + (t * hc * hc).next_multiple_of(8),
            1,
            None,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chip;

    /// group_combine.h's kernel as o_proj plans it (only what the offer reads).
    fn combine(hidden: usize, bf16: bool) -> Kernel {
        Kernel {
            name: format!("group_combine_g8_r16_n{hidden}"),
            doc: String::new(),
            block: "group_combine.h",
            class: "GroupCombine",
            cores: Cores::Aiv,
            params: vec![
                ("GROUPS", Value::u32(8)),
                ("ROWS", Value::u32(16)),
                ("N", Value::u32(hidden)),
                ("TILE_N", Value::u32(512)),
                ("OUT_BF16", Value::Bool(bf16)),
            ],
            args: vec!["p", "scale", "wo_b_scale", "out"],
            buffers: Vec::new(),
            parts: Vec::new(),
        }
    }

    fn cols(k: &Kernel) -> Option<Value> {
        k.param("COLS")
    }

    /// hc_post offers to take the TP 1 (bf16) group sum, at its own columns where the sum's
    /// buffers fit beside its own, at fewer where they do not (FLASH at 512 tokens: 1024
    /// columns of 2 tokens hold 150 KiB of hc_post's alone); never the f32 partial of TP > 1,
    /// which a collective sums first, nor a sum of other rows.
    #[test]
    fn hc_post_takes_the_bf16_group_sum_at_columns_that_fit() {
        let chip = chip::find("910b").unwrap();
        let at = |cols: usize, sum: &Kernel| {
            let post = kernel(4, 4096, 2, cols);
            with_combine(sum, &post, 512, chip)
        };
        let deployment = at(512, &combine(4096, true)).expect("offered");
        assert_eq!(cols(&deployment.fused), Some(Value::u32(512)));
        assert_eq!((deployment.input, deployment.block_dim), ("attn_out", 48));
        assert_eq!(
            deployment.fused.args,
            ["p", "scale", "wo_b_scale", "x_hc", "post", "comb", "x_out"]
        );
        let wide = at(1024, &combine(4096, true)).expect("offered at fewer columns");
        assert_eq!(cols(&wide.fused), Some(Value::u32(512)));
        assert!(budget::bytes_in(&wide.fused.buffers, Ub, chip) <= chip.capacity(Ub));
        assert!(at(512, &combine(4096, false)).is_none(), "f32 partial");
        assert!(at(512, &combine(7168, true)).is_none(), "other rows");
    }

    /// rank_sum.h's kernel as o_reduce_scatter plans it (only what the offer reads).
    fn rank_sum(tp: usize, hidden: usize) -> Kernel {
        Kernel {
            name: format!("rank_sum_tp{tp}_n{hidden}"),
            block: "rank_sum.h",
            class: "RankSum",
            params: vec![("TP", Value::u32(tp)), ("N", Value::u32(hidden))],
            args: vec!["window", "out"],
            ..combine(hidden, true)
        }
    }

    /// At TP > 1 hc_post offers to take the reduce-scatter's sum (each item's rows summed
    /// over the ranks, rounded once, mixed at once) at its own columns where the f32 rows
    /// fit beside its buffers (FLASH TP 2: 1024 columns of 2 tokens); never a sum of other
    /// rows, nor a kernel that is neither sum.
    #[test]
    fn hc_post_takes_the_rank_sum_at_tp_above_1() {
        let chip = chip::find("910b").unwrap();
        let post = kernel(4, 4096, 2, 1024);
        let offer = with_rank_sum(&rank_sum(2, 4096), &post, 256, chip).expect("offered");
        assert_eq!(cols(&offer.fused), Some(Value::u32(1024)));
        assert_eq!(offer.fused.param("TP"), Some(Value::u32(2)));
        assert_eq!((offer.input, offer.block_dim), ("attn_out", 48));
        assert_eq!(
            offer.fused.args,
            ["window", "x_hc", "post", "comb", "x_out"]
        );
        assert!(budget::bytes_in(&offer.fused.buffers, Ub, chip) <= chip.capacity(Ub));
        assert!(
            with_rank_sum(&rank_sum(2, 7168), &post, 256, chip).is_none(),
            "other rows"
        );
        assert!(
            with_rank_sum(&combine(4096, true), &post, 256, chip).is_none(),
            "no rank sum"
        );
        assert!(
            with_combine(&rank_sum(2, 4096), &post, 256, chip).is_none(),
            "no group sum"
        );
    }
}
