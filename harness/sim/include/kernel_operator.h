// CPU model of the Ascend C API subset used by the generated kernels (dav-c220 / 910B).
// Same names and signatures as the official kernel_operator.h; one header per API family.
#pragma once

#include "sim/types.h"
#include "sim/memory.h"
#include "sim/hazard.h"
#include "sim/tensor.h"
#include "sim/tpipe.h"
#include "sim/data_copy.h"
#include "sim/vec_common.h"
#include "sim/vec_binary.h"
#include "sim/vec_unary.h"
#include "sim/vec_fill.h"
#include "sim/vec_reduce.h"
#include "sim/vec_cast.h"
#include "sim/vec_select.h"
#include "sim/vec_sort.h"
#include "sim/cube.h"
#include "sim/fixpipe.h"
#include "sim/sync.h"
#include "sim/debug.h"
