// The CPU core's entry points for one dtype (CMA_CPU_DTYPE, an enumerator of DType), each in its
// baseline and AVX2 versions. The build compiles this file once per dtype, so the heaviest code
// of the project compiles once, in parallel, for every binding.
#include "cc/core/cpu.h"

#ifndef CMA_CPU_DTYPE
#error "CMA_CPU_DTYPE names the dtype to compile (e.g. -DCMA_CPU_DTYPE=kFloat32)"
#endif

namespace causal_moving_avg {

CMA_CPU_ENTRY_POINTS(, HostTypeOf<DType::CMA_CPU_DTYPE>)

}  // namespace causal_moving_avg
