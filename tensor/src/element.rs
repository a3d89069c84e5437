//! The element types a tensor can hold, and their byte view.

use crate::data::Data;
use abi::DType;
use half::bf16;

/// A Rust type that is one of the ABI dtypes.
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {
    const DTYPE: DType;
    fn slice(data: &Data) -> Option<&[Self]>;
    fn slice_mut(data: &mut Data) -> Option<&mut [Self]>;
    fn wrap(values: Vec<Self>) -> Data;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
    impl Sealed for f32 {}
    impl Sealed for i8 {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

macro_rules! element {
    ($t:ty, $variant:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            fn slice(data: &Data) -> Option<&[Self]> {
                match data {
                    Data::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(data: &mut Data) -> Option<&mut [Self]> {
                match data {
                    Data::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(values: Vec<Self>) -> Data {
                Data::$variant(values)
            }
        }
    };
}

element!(bf16, Bf16);
element!(half::f16, F16);
element!(f32, F32);
element!(i8, I8);
element!(i32, I32);
element!(i64, I64);

/// The bytes of a slice of ABI elements, in host (little-endian) order.
pub(super) fn bytes_of<T: Element>(values: &[T]) -> &[u8] {
    // SAFETY: every `Element` is a plain integer/float type (sealed above) with
    // no padding and no invalid bit patterns, `u8` has alignment 1, and the
    // byte length is exactly the slice's size in memory.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

/// The bytes of a mutable slice of ABI elements (any bit pattern is a valid element).
pub(super) fn bytes_of_mut<T: Element>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `bytes_of`; additionally every byte pattern is a valid value of
    // these types, so writes through the byte view cannot create invalid elements.
    unsafe {
        std::slice::from_raw_parts_mut(
            values.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(values),
        )
    }
}
