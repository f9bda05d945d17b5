// The GPU launcher's host-side interface, free of TensorFlow and of CUDA device code: which
// kernel a shape runs, the scratch it needs, and one type-erased entry point. The TF GPU kernel,
// the XLA CUDA handler and the standalone harness all launch through LaunchOnGpu; the kernels
// themselves live in gpu_kernels.cu.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_GPU_LAUNCH_H_
#define CAUSAL_MOVING_AVG_CC_CORE_GPU_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "cc/core/call.h"
#include "cc/core/numerics.h"
#include "cc/core/stream.h"
#include "cc/core/tile_scan_plan.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// Which kernel a call runs. Short windows are summed directly (gpu_direct.h), coalesced across a
// warp on any layout. Longer ones: one thread per lane coalesces only when a warp's lanes are
// contiguous (inner >= 32), so wide layouts run the running sums of the plan's units and narrow
// ones tile scans (tile_scan.h). Packed sequences (ids) always take the direct sums, the one
// kernel that cuts a window at its sequence's start (LaneHistory); their cost grows with W.
// kAuto means ChooseGpuKernel's choice; the harness forces the others to compare them. The limits
// come from that comparison on an H200 (float32; inner 1 and 8 against the tile scan, inner 64-256
// against the running kernel; benchmarks/results/2026-12-04-gpu-h200.md): plain direct sums were
// faster up to the largest window compared on narrow layouts, and up to W = 8 on wide ones.
// float64's direct sums are compensated (SplitSumOf), several times the work: they keep the
// limit measured for compensated sums, and wide float64 layouts the running kernel.
enum class GpuKernel { kAuto, kDirect, kTileScan, kRunning };
constexpr int64_t kGpuDirectMaxWindow = 64;
constexpr int64_t kGpuWideDirectMaxWindow = 8;
constexpr int64_t kGpuCompensatedDirectMaxWindow = 16;
inline GpuKernel ChooseGpuKernel(const Call& call) {
  if (call.HasSegments()) return GpuKernel::kDirect;
  const bool plain = SplitSumIsPlain(call.dtype);
  if (call.view.inner >= kTileMaxInner) {
    return plain && call.window <= kGpuWideDirectMaxWindow ? GpuKernel::kDirect
                                                           : GpuKernel::kRunning;
  }
  const int64_t limit = plain ? kGpuDirectMaxWindow : kGpuCompensatedDirectMaxWindow;
  return call.window <= limit ? GpuKernel::kDirect : GpuKernel::kTileScan;
}
inline GpuKernel ResolveGpuKernel(GpuKernel kernel, const Call& call) {
  if (call.HasSegments()) return GpuKernel::kDirect;
  return kernel == GpuKernel::kAuto ? ChooseGpuKernel(call) : kernel;
}

inline const char* GpuKernelName(GpuKernel kernel) {
  switch (kernel) {
    case GpuKernel::kDirect:
      return "direct";
    case GpuKernel::kTileScan:
      return "tile-scan";
    case GpuKernel::kRunning:
      return "running";
    default:
      return "auto";
  }
}

// Device memory a call needs besides x and y, in bytes: the tile sums of long windows, and a
// stream's stage (its inputs and outputs, then the tile sums of whichever of the stage and the
// rest needs more). Reads only the call's description, not its pointers.
constexpr int64_t kGpuScratchAlign = 256;
inline int64_t StageBytes(const Call& call) {
  return CeilDiv(StageOf(call).Elements() * SizeOf(call.dtype), kGpuScratchAlign) *
         kGpuScratchAlign;
}
inline int64_t GpuScratchBytes(const Call& call, GpuKernel kernel = GpuKernel::kAuto) {
  if (NeedsStage(call) && call.view.outer * call.view.inner > 0) {
    const Call staged = StageCall(call, nullptr, nullptr);
    const int64_t tiles = Max64(GpuScratchBytes(staged, kernel),
                                call.view.steps > 0 ? GpuScratchBytes(RestCall(call), kernel) : 0);
    return 2 * StageBytes(call) + tiles;
  }
  if (call.Elements() == 0) return 0;
  if (ResolveGpuKernel(kernel, call) != GpuKernel::kTileScan) return 0;
  static_assert(std::is_same_v<SumOf<float>, SumOf<double>>, "one sum type for every dtype");
  return TileSumsBytes<SumOf<double>>(MakeTileScanPlan<SumOf<double>>(call));
}

// The outcome of preparing a device or launching on it, worded once for every caller (the TF
// kernel, the XLA handler, the harness): which step failed, and the runtime's error.
struct GpuStatus {
  enum class Step {
    kNone,          // success
    kStickyBefore,  // the context was already broken by an earlier error (not this op's)
    kDriver,        // the driver is older than the runtime the kernels were built with
    kDeviceQuery,   // a runtime query about the current device failed
    kLoadKernels,   // loading the kernels' module onto the device failed
    kLaunch,        // the launch itself failed
    kStickyAfter,   // the launch met a sticky error that an earlier kernel may have caused
  };
  Step step = Step::kNone;
  cudaError_t error = cudaSuccess;
  int driver_version = 0;
  int runtime_version = 0;

  bool ok() const { return step == Step::kNone; }
  // "CausalMovingAvg: ..." naming the failed step, the error and, where it helps, the fix.
  std::string Message() const;
};

// Prepares the current device (the one whose context is current on this thread: TensorFlow's or
// XLA's for the op) once per process and device, and gives its multiprocessor count (>= 1): checks
// the driver against the runtime, asks the runtime (never a cudaDeviceProp filled by another
// runtime) for the count, and loads every kernel of the library, so that no kernel loads lazily
// at its first launch inside a training step. Later calls read a cache.
GpuStatus PrepareCurrentGpu(int* sm_count);

// Loads the module of every kernel of the library onto the current device (cudaFuncGetAttributes
// on each); part of PrepareCurrentGpu.
cudaError_t LoadGpuKernels();

// Enqueues a checked call, non-empty or a stream's (device pointers; a stream's `seen` too) on
// `stream` of the current device, preparing the device first if needed. `scratch` holds at least
// GpuScratchBytes(call, kernel) bytes of device memory (may be null when that is 0). Any kernel
// computes any shape, except the tile scan, which needs inner < kTileMaxInner. An error left by an
// earlier runtime call on this thread is cleared first, so a failure reported here is this
// launch's, or a sticky one named as such.
GpuStatus LaunchOnGpu(const Call& call, cudaStream_t stream, void* scratch,
                      GpuKernel kernel = GpuKernel::kAuto);

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_GPU_LAUNCH_H_
