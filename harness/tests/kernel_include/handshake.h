// Shared by the test kernels: orders every earlier instruction of E's source pipe before
// every later one of its destination pipe, on an event id from the TPipe's pool (the queues
// take theirs there too, and on an AIC the TPipe holds M_MTE1 0..2).
#pragma once

#include "kernel_operator.h"

template <AscendC::HardEvent E>
__aicore__ inline void Sync()
{
    const int32_t id = GetTPipePtr()->FetchEventID<E>();
    AscendC::SetFlag<E>(id);
    AscendC::WaitFlag<E>(id);
}
