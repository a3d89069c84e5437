//! A product overlapped with its consumer: where a vector kernel reads C range by range of
//! its columns (QHeads: head by head), the product runs in column ranges (`MatmulAt` in
//! `dsv4/matmul.h`) and each range's consumer runs beside the next range's product, one
//! mixed launch (`dsv4/together.h` with a cube part):
//!
//! ```text
//! cube:    C[0]        C[1]         …  C[R-1]
//! vector:              consume[0]   …  consume[R-2]   consume[R-1]
//! ```
//!
//! R + 1 launches instead of two, but the vector work runs under the cube's, and the mixed
//! launches' 72 cores load at once: a product alone on the 24 cube cores streams at most their
//! share of HBM (hicann/ge's Load fit, 457 GB/s), its C written back at the same rate, while
//! the consumer waits for all of it.

use crate::chip::Chip;
use crate::kernel_plan::together;
use crate::kernel_plan::{Kernel, Value};

/// A vector kernel reading C column range by column range: `kernel(first, cols)` finishes
/// columns `[first, first + cols)` (a multiple of `unit` each), on the blocks it returns;
/// `args` are what it binds, C among them.
pub struct Consumer<'a> {
    pub unit: usize,
    pub args: &'a [&'a str],
    pub kernel: &'a dyn Fn(usize, usize) -> (Kernel, u32),
}

/// How many column ranges an overlapped product runs in (FLASH `wq_b` at 512 tokens: two
/// 185 µs with its QHeads, four 205 µs, each range's items reading A again).
pub(super) const RANGES: usize = 2;

/// Whether C's `n` columns cut into [`RANGES`] ranges of whole consumer units.
pub(super) fn cuts(n: usize, unit: usize) -> bool {
    n.is_multiple_of(RANGES * unit)
}

/// What [`overlaps`] weighs of a product, its ranges and its chip.
pub(crate) struct Product {
    /// The fusion pass may fuse (`fuse: false` in a spec turns every overlap off).
    pub fuse: bool,
    /// Alone, the product gives the vector cores a share of its columns (they are busy).
    pub shared: bool,
    /// Items of a range's product as launched (None: C does not [`cuts`] or a range cannot
    /// be planned), and blocks of a range's consumer.
    pub range_items: Option<usize>,
    pub consumer_blocks: u32,
    pub cube_cores: usize,
    pub vector_cores: usize,
}

/// Whether a product runs in [`RANGES`] column ranges rather than whole: where the fusion
/// pass may fuse, the product alone leaves the vector cores free, C cuts into ranges of
/// whole consumer units, each range's product still gives every cube core an item (else a
/// range's cube side takes as long as the whole product's) and a range's consumer fits the
/// mixed launch's vector cores.
pub(crate) fn overlaps(p: &Product) -> bool {
    let fills = p.range_items.is_some_and(|i| i >= p.cube_cores);
    p.fuse && !p.shared && fills && p.consumer_blocks <= p.vector_cores as u32
}

/// The mixed launch's kernel: `cube` (a matmul kernel of a range's columns) at the product's
/// column `col0` (`MatmulAt`) on the cube cores, beside `vector` on `blocks` vector cores.
pub(super) fn beside(
    mut cube: Kernel,
    col0: usize,
    vector: &Kernel,
    blocks: u32,
    chip: &Chip,
) -> Kernel {
    cube.name = format!("{}_col{col0}", cube.name);
    cube.class = "MatmulAt";
    cube.params.push(("COL0", Value::u32(col0)));
    together::kernel(&[(&cube, chip.aic_cores as u32), (vector, blocks)], chip)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overlapped only where fusion is on, the vector cores are free, C cuts into whole
    /// consumer units, each range still gives every cube core an item and a range's consumer
    /// fits the vector cores.
    #[test]
    fn a_product_overlaps_its_consumer_where_the_ranges_fill_the_cube() {
        let flash = Product {
            fuse: true,
            shared: false,
            range_items: Some(24),
            consumer_blocks: 44,
            cube_cores: 24,
            vector_cores: 48,
        };
        assert!(overlaps(&flash));
        let not = |p: Product, why: &str| assert!(!overlaps(&p), "{why}");
        not(
            Product {
                fuse: false,
                ..flash
            },
            "fuse: false",
        );
        not(
            Product {
                shared: true,
                ..flash
            },
            "shared",
        );
        not(
            Product {
                range_items: Some(12),
                ..flash
            },
            "few items",
        );
        not(
            Product {
                range_items: None,
                ..flash
            },
            "no ranges",
        );
        not(
            Product {
                consumer_blocks: 64,
                ..flash
            },
            "more blocks than vector cores",
        );
        assert!(cuts(32768, 512) && !cuts(512, 512) && !cuts(1536, 512));
    }
}
