// Host arithmetic of a GPU launch that needs no CUDA headers, so core_test checks it on machines
// without a GPU: how many blocks each kernel gets for a device's multiprocessor count, and which
// NVIDIA driver a CUDA runtime needs.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_GPU_GRID_H_
#define CAUSAL_MOVING_AVG_CC_CORE_GPU_GRID_H_

#include <cstdint>
#include <string>

#include "cc/core/types.h"

namespace causal_moving_avg {

constexpr int kGpuThreadsPerBlock = 256;

// Blocks for a grid-stride kernel over `work_items` threads' worth of work: enough to fill every
// SM (four waves of full occupancy), the rest covered by the grid-stride loops. Never 0, whatever
// the SM count says (a failed or odd query must not launch an empty grid).
inline unsigned GridSize(int64_t work_items, int sm_count) {
  const int64_t wanted = CeilDiv(work_items, kGpuThreadsPerBlock);
  const int64_t resident = Max64(1, sm_count) * (2048 / kGpuThreadsPerBlock) * 4;
  return static_cast<unsigned>(Max64(1, Min64(wanted, resident)));
}

// Blocks for the tile scan: one per tile, at most 32 per SM (its kernels stride over tiles).
inline unsigned TileScanBlocks(int64_t num_tiles, int sm_count) {
  return static_cast<unsigned>(Max64(1, Min64(num_tiles, Max64(1, sm_count) * int64_t{32})));
}

// The oldest NVIDIA driver (its version, e.g. 525) that runs code of a CUDA runtime of version
// `cuda_version` (1000 * major + 10 * minor, as CUDART_VERSION and cudaDriverGetVersion give it):
// within a major version, newer runtimes run on the major's first driver (minor version
// compatibility). 0 where unknown.
inline int MinimumDriverFor(int cuda_version) {
  switch (cuda_version / 1000) {
    case 11:
      return 450;
    case 12:
      return 525;
    case 13:
      return 580;
    default:
      return 0;
  }
}

inline std::string CudaVersionName(int cuda_version) {
  return std::to_string(cuda_version / 1000) + "." + std::to_string(cuda_version % 1000 / 10);
}

// Empty when a driver that supports CUDA `driver_version` (cudaDriverGetVersion; 0: no driver)
// runs code built with CUDA `runtime_version`; otherwise what is wrong and how to fix it.
inline std::string DriverProblem(int driver_version, int runtime_version) {
  if (driver_version >= runtime_version ||
      (driver_version / 1000 == runtime_version / 1000 && driver_version > 0)) {
    return "";
  }
  const int minimum = MinimumDriverFor(runtime_version);
  const std::string needs = "CausalMovingAvg's GPU kernels were built with CUDA " +
                            CudaVersionName(runtime_version) + ", which needs an NVIDIA driver" +
                            (minimum > 0 ? " >= " + std::to_string(minimum) : "") +
                            " (one supporting CUDA " + std::to_string(runtime_version / 1000) + ")";
  if (driver_version == 0) return needs + "; no NVIDIA driver was found";
  return needs + "; this machine's driver supports CUDA " + CudaVersionName(driver_version) +
         " only. Update the driver, or build the library with a CUDA toolkit of the driver's "
         "generation";
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_GPU_GRID_H_
