{{ header }}
//! One module per generated layer variant, and the index the runner looks them up in.

use harness::abi::VariantAbi;
{% for v in variants %}
pub mod {{ v }};
{%- endfor %}

/// Every generated variant, sorted by name.
pub const VARIANTS: &[VariantAbi] = &[
{%- for v in variants %}
    {{ v }}::ABI,
{%- endfor %}
];
