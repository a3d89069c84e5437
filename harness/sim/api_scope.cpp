// Every public name the sim declares, at the scope the public Ascend C headers declare it
// (asc-devkit include/, reached through kernel_operator.h), grouped by the sim header that
// models it and the devkit header family that declares it. This file is the audit table:
// - it compiles against the sim (harness/tests/sim_api_scope.rs), so the sim declares each
//   name at this scope;
// - the same test walks the sim's headers and requires every name they declare outside
//   `AscendC::sim` to be listed here, so nothing the device lacks is visible to kernels;
// - each name under "global only" must fail as `AscendC::NAME`, on the sim (the same test)
//   and on the devkit (`cargo xtask check-headers`, which also compiles this file against
//   the devkit's headers, so a line the devkit does not declare at this scope fails there).
// Signatures (template parameters, defaults, constness, types) are what the generated
// kernels use of them; `cargo xtask check-headers` compiles every kernel against the devkit.
#include "kernel_operator.h"

// global only (kernel_common.h; the compiler's builtin types; stub_def.h in CPU debug)
using ::GetTPipePtr;
using ::KernelMetaType;
using ::QuantMode_t;
using ::bfloat16_t;
using ::event_t;
using ::half;
using ::pipe_t;

// sim/types.h: kernel_utils_constants.h, kernel_event.h, kernel_struct_*.h, utils
using AscendC::BLOCK_CUBE;
using AscendC::CMPMODE;
using AscendC::CUBE_MAX_SIZE;
using AscendC::CacheLine;
using AscendC::DEFAULT_BLK_NUM;
using AscendC::DEFAULT_BLK_STRIDE;
using AscendC::DEFAULT_REPEAT_STRIDE;
using AscendC::DcciDst;
using AscendC::HardEvent;
using AscendC::IsSameType;
using AscendC::MASK_PLACEHOLDER;
using AscendC::MAX_REPEAT_TIMES;
using AscendC::MaskMode;
using AscendC::ONE_BLK_SIZE;
using AscendC::ONE_REPEAT_BYTE_SIZE;
using AscendC::QuePosition;
using AscendC::ReduceOrder;
using AscendC::RoundMode;
using AscendC::SELMODE;
using AscendC::TEventID;
using AscendC::TOTAL_L0A_SIZE;
using AscendC::TOTAL_L0B_SIZE;
using AscendC::TOTAL_L0C_SIZE;
using AscendC::TOTAL_L1_SIZE;
using AscendC::TOTAL_UB_SIZE;
using AscendC::TOTAL_VEC_LOCAL_SIZE;
using AscendC::TPosition;
using AscendC::ToBfloat16;
using AscendC::ToFloat;

// sim/tensor.h, sim/tpipe.h: kernel_tensor.h, kernel_tpipe.h
using AscendC::GlobalTensor;
using AscendC::LocalTensor;
using AscendC::TBuf;
using AscendC::TPipe;
using AscendC::TQue;
using AscendC::TQueBind;

// sim/data_copy.h: kernel_operator_data_copy_intf.h, kernel_struct_data_copy.h
using AscendC::DataCopy;
using AscendC::DataCopyExtParams;
using AscendC::DataCopyPad;
using AscendC::DataCopyPadExtParams;
using AscendC::DataCopyPadParams;
using AscendC::DataCopyParams;
using AscendC::Nd2NzParams;

// sim/vec_common.h, vec_binary.h, vec_unary.h: kernel_operator_vec_{binary,binary_scalar,unary}_intf.h
using AscendC::Abs;
using AscendC::Add;
using AscendC::Adds;
using AscendC::BinaryRepeatParams;
using AscendC::Div;
using AscendC::Exp;
using AscendC::Ln;
using AscendC::Max;
using AscendC::Maxs;
using AscendC::Min;
using AscendC::Mins;
using AscendC::Mul;
using AscendC::MulAddDst;
using AscendC::Muls;
using AscendC::Reciprocal;
using AscendC::Relu;
using AscendC::ResetMask;
using AscendC::Rsqrt;
using AscendC::SetMaskCount;
using AscendC::SetMaskNorm;
using AscendC::SetVectorMask;
using AscendC::Sqrt;
using AscendC::Sub;
using AscendC::UnaryRepeatParams;

// sim/vec_fill.h: kernel_operator_vec_{duplicate,brcb}_intf.h
using AscendC::Brcb;
using AscendC::BrcbRepeatParams;
using AscendC::Duplicate;

// sim/vec_reduce.h: kernel_operator_vec_reduce_intf.h
using AscendC::BlockReduceMax;
using AscendC::BlockReduceSum;
using AscendC::ReduceMax;
using AscendC::ReduceSum;
using AscendC::WholeReduceMax;
using AscendC::WholeReduceSum;

// sim/vec_cast.h, vec_select.h: kernel_operator_vec_{vconv,cmpsel,gather}_intf.h
using AscendC::Cast;
using AscendC::Compare;
using AscendC::Gather;
using AscendC::Select;

// sim/vec_sort.h: kernel_operator_proposal_intf.h, kernel_operator_vec_gather_mask_intf.h
using AscendC::GatherMask;
using AscendC::GatherMaskMode;
using AscendC::GatherMaskParams;
using AscendC::GetMrgSortResult;
using AscendC::MRG_SORT_ELEMENT_LEN;
using AscendC::MrgSort;
using AscendC::MrgSort4Info;
using AscendC::MrgSortSrcList;
using AscendC::Sort32;
using AscendC::defaultGatherMaskMode;

// sim/cube.h, fixpipe.h: kernel_operator_mm_intf.h, kernel_struct_mm.h, kernel_operator_fixpipe_intf.h
using AscendC::CFG_COLUMN_MAJOR;
using AscendC::CFG_NZ;
using AscendC::CFG_ROW_MAJOR;
using AscendC::CO2Layout;
using AscendC::Fill;
using AscendC::Fixpipe;
using AscendC::FixpipeConfig;
using AscendC::FixpipeParamsM300;
using AscendC::FixpipeParamsV220;
using AscendC::InitConstValueParams;
using AscendC::LoadData;
using AscendC::LoadData2DParams;
using AscendC::LoadData2dTransposeParams;
using AscendC::LoadDataWithTranspose;
using AscendC::Mmad;
using AscendC::MmadParams;

// sim/sync.h, debug.h: kernel_operator_{common,sys_var,cache,set_atomic}_intf.h, core_mng
using AscendC::CrossCoreSetFlag;
using AscendC::CrossCoreWaitFlag;
using AscendC::DataCacheCleanAndInvalid;
using AscendC::DataCachePreload;
using AscendC::GetBlockIdx;
using AscendC::GetBlockNum;
using AscendC::GetSubBlockIdx;
using AscendC::GetSubBlockNum;
using AscendC::GetTaskRation;
using AscendC::GetUserWorkspace;
using AscendC::PipeBarrier;
using AscendC::SetAtomicAdd;
using AscendC::SetAtomicNone;
using AscendC::SetFlag;
using AscendC::SyncAll;
using AscendC::Trap;
using AscendC::WaitFlag;
