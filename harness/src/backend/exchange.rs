//! The TP collectives of a plan as row transfers between ranks' workspaces (swa.md §3.8):
//! which rows of which rank's `src` land where in each rank's `dst`. Backends execute the
//! transfers: the sim copies bytes between the ranks' buffers, an NPU issues HCCL
//! all-to-all calls built from the same list.

/// A collective step, resolved against a rank's buffer layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    pub pattern: Pattern,
    /// Buffer ids.
    pub src: usize,
    pub dst: usize,
    /// Bytes of one row (one index of the leading axis) of both buffers.
    pub row_bytes: usize,
    /// Capacity rows of the buffers.
    pub src_rows: usize,
    pub dst_rows: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    GroupAllToAll {
        local_groups: usize,
        src_slab_rows: usize,
        dst_slab_rows: usize,
    },
    TokenScatter,
}

/// A contiguous run of rows a rank receives: `rows` rows of rank `from`'s `src` starting at
/// `src_row` go to the receiver's `dst` at `dst_row`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    pub from: usize,
    pub src_row: usize,
    pub dst_row: usize,
    pub rows: usize,
}

impl Exchange {
    /// Checks that `t` tokens per rank fit the buffers.
    pub fn check(&self, tp: usize, t: usize) -> Result<(), String> {
        let fits = match self.pattern {
            Pattern::GroupAllToAll {
                src_slab_rows,
                dst_slab_rows,
                ..
            } => t <= src_slab_rows && tp * t <= dst_slab_rows,
            Pattern::TokenScatter => tp * t <= self.src_rows && tp * t <= self.dst_rows,
        };
        if fits {
            Ok(())
        } else {
            Err(format!(
                "{t} tokens on {tp} ranks do not fit the exchange buffers ({} and {} rows)",
                self.src_rows, self.dst_rows
            ))
        }
    }

    /// What `rank` of `tp` receives with `t` tokens per rank, in destination order.
    pub fn incoming(&self, rank: usize, tp: usize, t: usize) -> Vec<Transfer> {
        match self.pattern {
            Pattern::GroupAllToAll {
                local_groups,
                src_slab_rows,
                dst_slab_rows,
            } => (0..local_groups)
                .flat_map(|lg| {
                    let g = rank * local_groups + lg;
                    (0..tp).map(move |from| Transfer {
                        from,
                        src_row: g * src_slab_rows,
                        dst_row: lg * dst_slab_rows + from * t,
                        rows: t,
                    })
                })
                .collect(),
            Pattern::TokenScatter => (0..tp)
                .map(|from| Transfer {
                    from,
                    src_row: rank * t,
                    dst_row: from * t,
                    rows: t,
                })
                .collect(),
        }
    }

    /// Every transfer of the step, as `(to, transfer)`.
    pub fn all(&self, tp: usize, t: usize) -> Vec<(usize, Transfer)> {
        (0..tp)
            .flat_map(|to| self.incoming(to, tp, t).into_iter().map(move |x| (to, x)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a2a() -> Exchange {
        Exchange {
            pattern: Pattern::GroupAllToAll {
                local_groups: 2,
                src_slab_rows: 16,
                dst_slab_rows: 32,
            },
            src: 0,
            dst: 1,
            row_bytes: 8,
            src_rows: 64,
            dst_rows: 64,
        }
    }

    #[test]
    fn group_all_to_all_gathers_the_owned_groups_rank_major() {
        // rank 1 of 2 owns groups 2 and 3; 8 tokens per rank
        let got = a2a().incoming(1, 2, 8);
        let want = [(0, 32, 0), (1, 32, 8), (0, 48, 32), (1, 48, 40)];
        assert_eq!(got.len(), want.len());
        for (g, (from, src_row, dst_row)) in got.iter().zip(want) {
            assert_eq!(
                (g.from, g.src_row, g.dst_row, g.rows),
                (from, src_row, dst_row, 8)
            );
        }
        assert!(a2a().check(2, 16).is_ok());
        assert!(a2a().check(2, 17).is_err());
    }

    #[test]
    fn token_scatter_sends_each_owner_its_token_block() {
        let ex = Exchange {
            pattern: Pattern::TokenScatter,
            ..a2a()
        };
        let got = ex.incoming(2, 4, 8);
        let rows: Vec<(usize, usize, usize)> =
            got.iter().map(|x| (x.from, x.src_row, x.dst_row)).collect();
        assert_eq!(rows, [(0, 16, 0), (1, 16, 8), (2, 16, 16), (3, 16, 24)]);
        assert_eq!(ex.all(4, 8).len(), 16);
    }
}
