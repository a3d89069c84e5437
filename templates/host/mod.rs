{{ header }}
//! One module per generated layer variant, and the index the runner looks them up in.

use abi::plan::VariantPlan;
{% for v in variants %}
pub mod {{ v }};
{%- endfor %}

/// Every generated variant's launch plan, sorted by name.
pub const VARIANTS: &[VariantPlan] = &[
{%- for v in variants %}
    {{ v }}::PLAN,
{%- endfor %}
];
