{{ header }}
// {{ k.doc }}
#include "dsv4/{{ k.block }}"

namespace {
struct Params {
{%- for (name, v) in k.params %}
{%- let (ty, lit) = v.cpp() %}
    static constexpr {{ ty }} {{ name }} = {{ lit }};
{%- endfor %}
{%- for b in k.buffers %}
    static constexpr uint32_t {{ b.knob() }} = {{ b.bytes() }};
{%- endfor %}
};
}  // namespace

extern "C" __global__ {{ k.marking() }} void {{ k.name }}(
{%- for a in k.args %}GM_ADDR {{ a }}, {% endfor %}GM_ADDR workspace, GM_ADDR tiling)
{
    dsv4::{{ k.class }}<Params>::Run({% for a in k.args %}{{ a }}, {% endfor %}workspace, tiling);
}
