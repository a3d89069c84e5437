// Synchronisation the building blocks share: cross-pipe hand-offs and cube-pipe ordering.
#pragma once

#include "kernel_operator.h"

namespace dsv4 {

// Orders the earlier work of pipe SRC before the later work of pipe DST (HardEvent
// SRC_DST): a set and its wait, on an event id no queue holds. The kernel's queues take
// their ids from the TPipe's pool and keep a freed slot's id set until the slot is
// allocated again, so a fixed id could set a flag that is still set (and lose it).
template <AscendC::HardEvent EVENT>
__aicore__ inline void Handshake()
{
    const int32_t id = GetTPipePtr()->FetchEventID<EVENT>();
    AscendC::SetFlag<EVENT>(id);
    AscendC::WaitFlag<EVENT>(id);
}

// Orders the earlier work of pipe SRC (before Set) before what pipe DST issues after Wait,
// the wait issued later than the set, other work between them (HardEvent SRC_DST): an id of
// the TPipe's pool held from construction to Release.
template <AscendC::HardEvent EVENT>
class LaterHandoff {
public:
    __aicore__ inline explicit LaterHandoff(AscendC::TPipe& pipe) : pipe_(pipe), id_(pipe.AllocEventID<EVENT>()) {}
    __aicore__ inline void Set() { AscendC::SetFlag<EVENT>(id_); }
    __aicore__ inline void Wait() { AscendC::WaitFlag<EVENT>(id_); }
    __aicore__ inline void Release() { pipe_.ReleaseEventID<EVENT>(id_); }

private:
    AscendC::TPipe& pipe_;
    AscendC::TEventID id_;
};

// Vector results become readable by the scalar unit (LocalTensor::GetValue), and scalar
// writes (LocalTensor::SetValue) visible to the vector unit.
__aicore__ inline void VectorToScalar() { Handshake<AscendC::HardEvent::V_S>(); }
__aicore__ inline void ScalarToVector() { Handshake<AscendC::HardEvent::S_V>(); }

// Before an MTE3 write of BYTES to GM that continues the 32-byte block this core's previous
// MTE3 write left partial (`continues`): the MTE writes whole blocks (read-modify-write), so
// the earlier part must land first. Nothing to order when BYTES is whole blocks.
template <uint32_t BYTES>
__aicore__ inline void BeforeContinuedBlock(bool continues)
{
    if constexpr (BYTES % 32 != 0) {
        if (continues) {
            AscendC::PipeBarrier<PIPE_MTE3>();
        }
    }
}

// A K-accumulating Mmad reads the L0C tile the previous Mmad wrote. Mmad.md: from 10 output
// fractals ((m / 16) * (n / 16) >= 10) the cube orders that read after the write itself;
// below, a PipeBarrier<PIPE_M> must separate the two.
__aicore__ inline void BeforeAccumulatingMmad(uint32_t m, uint32_t n)
{
    if ((m / 16) * (n / 16) < 10) {
        AscendC::PipeBarrier<PIPE_M>();
    }
}

}  // namespace dsv4
