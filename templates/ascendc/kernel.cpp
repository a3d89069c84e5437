{{ header }}
// {{ k.doc }}
{%- for h in k.includes() %}
#include "dsv4/{{ h }}"
{%- endfor %}

namespace {
{%- if k.parts.is_empty() %}
struct Params {
{%- for (name, v) in k.params %}
{%- let (ty, lit) = v.cpp() %}
    static constexpr {{ ty }} {{ name }} = {{ lit }};
{%- endfor %}
{%- for b in k.buffers %}
    static constexpr uint32_t {{ b.knob() }} = {{ b.bytes() }};
{%- endfor %}
};
{%- else %}
{%- for p in k.parts %}
// {{ p.name }}: {{ p.doc }}
struct P{{ loop.index0 }} {
{%- for (name, v) in p.params %}
{%- let (ty, lit) = v.cpp() %}
    static constexpr {{ ty }} {{ name }} = {{ lit }};
{%- endfor %}
{%- for b in p.buffers %}
    static constexpr uint32_t {{ b.knob() }} = {{ b.bytes() }};
{%- endfor %}
{%- if k.runs_together() %}
    using Block = dsv4::{{ p.class }}<P{{ loop.index0 }}>;
{%- endif %}
};
{%- endfor %}
{%- endif %}
}  // namespace

extern "C" __global__ {{ k.marking() }} void {{ k.name }}(
{%- for a in k.args %}GM_ADDR {{ a }}, {% endfor %}GM_ADDR workspace, GM_ADDR tiling)
{
    dsv4::{{ k.class }}<{{ k.param_structs() }}>::Run({% for a in k.args %}{{ a }}, {% endfor %}workspace, tiling);
}
