//! The tiling words the runtime writes have the layout of `dsv4::TilingData`, the struct
//! every generated kernel reads (blocks/dsv4/tiling_data.h).

use abi::tiling::{TILING_FIELDS, TILING_WORDS};
use std::path::Path;

#[test]
fn the_runtime_writes_the_fields_of_the_kernel_tiling_struct_in_order() {
    let header = Path::new(env!("CARGO_MANIFEST_DIR")).join("../blocks/dsv4/tiling_data.h");
    let text = std::fs::read_to_string(&header).unwrap();
    let body = &text[text.find("struct TilingData {").expect("the struct")..];
    let body = &body[..body.find("};").expect("its end")];
    let mut fields = Vec::new();
    let mut words = 0;
    for line in body.lines().map(str::trim) {
        let Some(decl) = line.strip_prefix("uint32_t ") else {
            continue;
        };
        let decl = &decl[..decl.find(';').expect("a declaration")];
        match decl.split_once('[') {
            Some((name, n)) => {
                assert_eq!(name, "reserved", "only the reserved words are an array");
                words += n.trim_end_matches(']').parse::<usize>().unwrap();
            }
            None => {
                fields.push(decl.to_string());
                words += 1;
            }
        }
    }
    assert_eq!(fields, TILING_FIELDS);
    assert_eq!(words, TILING_WORDS);
}
