// What the tile scan's thread block shares (see tile_scan.h): its shared-memory scratch, which
// thread serves which lane, and the scans across a lane's threads. Written for any executor
// with a Phase(body) that runs body for every thread, then a barrier.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_TILE_BLOCK_H_
#define CAUSAL_MOVING_AVG_CC_CORE_TILE_BLOCK_H_

#include <cstddef>
#include <cstdint>

#include "cc/core/numerics.h"
#include "cc/core/tile_scan_plan.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

// Cells are padded by one every 16: a thread's consecutive steps lie items * inner cells apart,
// which would otherwise put a warp's accesses in few shared-memory banks.
CMA_HOST_DEVICE inline int64_t PaddedCell(int64_t i) { return i + (i >> 4); }

// One value per thread, and room for the next round of a scan.
template <typename Sum>
struct DoubleBuffer {
  Sum* current;
  Sum* spare;
};

// Shared-memory scratch of one thread block, carved from raw bytes (CUDA does not allow
// __shared__ arrays of types with constructors).
template <typename Sum>
struct TileScratch {
  using Acc = typename Sum::Value;
  using Careful = CarefulSum<Sum>;
  static constexpr int64_t kCells = kTileThreads * TileItems<Sum>();
  static constexpr int64_t kPaddedCells = kCells + kCells / 16;
  static constexpr size_t kCellBytes = kPaddedCells * (sizeof(Sum) + sizeof(Acc));
  static constexpr size_t kBytes =
      kCellBytes + 4 * kTileThreads * sizeof(Sum) + kTileMaxInner * sizeof(int);
  static_assert(2 * kTileThreads * sizeof(Careful) <= kCellBytes + 4 * kTileThreads * sizeof(Sum),
                "careful sums reuse the cells' and the scans' bytes");
  static_assert(kBytes <= 48 * 1024, "the static shared-memory limit of a thread block");

  Sum* cells;  // one per (step, lane) of the tile: differences, then their prefix sums
  Acc* means;  // the outputs, staged for a coalesced store
  DoubleBuffer<Sum>
      thread_sums;           // per thread: its steps' sum, then scanned across its lane's threads
  DoubleBuffer<Sum> anchor;  // per thread: its share of A, then summed across its lane's threads
  // Per thread, careful sums (tile sums, and the redo's anchor): they reuse the bytes of the cells
  // and of the two scans above, never in use at the same time.
  DoubleBuffer<Careful> careful;
  int* bad_lane;  // lanes whose sums are not finite

  CMA_HOST_DEVICE static TileScratch Carve(unsigned char* bytes) {
    TileScratch s;
    s.cells = reinterpret_cast<Sum*>(bytes);
    s.means = reinterpret_cast<Acc*>(s.cells + kPaddedCells);
    s.careful = {reinterpret_cast<Careful*>(bytes), nullptr};
    s.careful.spare = s.careful.current + kTileThreads;
    s.thread_sums = {reinterpret_cast<Sum*>(bytes + kCellBytes), nullptr};
    s.thread_sums.spare = s.thread_sums.current + kTileThreads;
    s.anchor = {s.thread_sums.spare + kTileThreads, nullptr};
    s.anchor.spare = s.anchor.current + kTileThreads;
    s.bad_lane = reinterpret_cast<int*>(s.anchor.spare + kTileThreads);
    return s;
  }
};

// Thread tid serves lane tid % inner as the j-th of its lane's threads; threads with
// j >= threads_per_lane (when inner does not divide kTileThreads) only join the barriers.
struct TileThread {
  int64_t lane;
  int64_t j;
  bool active;
};
CMA_HOST_DEVICE inline TileThread TileThreadAt(const TileScanPlan& plan, int tid) {
  const int inner = static_cast<int>(plan.call.view.inner);  // < 32: 32-bit division is cheaper
  const int j = tid / inner;
  return {tid - j * inner, j, j < plan.threads_per_lane};
}

// One Hillis-Steele step for thread tid: its value plus that of thread `earlier` (if >= 0).
template <typename V>
CMA_HOST_DEVICE void ScanStep(const DoubleBuffer<V>& buffer, int tid, int64_t earlier) {
  V sum = buffer.current[tid];
  if (earlier >= 0) {
    sum = buffer.current[earlier];
    sum.Merge(buffer.current[tid]);
  }
  buffer.spare[tid] = sum;
}

// Inclusive scan of `a` (and of `b`, if given) across the threads of each lane (Hillis-Steele);
// the results end in a->current (b->current).
template <typename V, typename Block>
CMA_HOST_DEVICE void ScanAcrossLaneThreads(const Block& block, const TileScanPlan& plan,
                                           DoubleBuffer<V>* a, DoubleBuffer<V>* b) {
  const int64_t inner = plan.call.view.inner;
  for (int64_t offset = 1; offset < plan.threads_per_lane; offset *= 2) {
    block.Phase([&](int tid) {
      const TileThread th = TileThreadAt(plan, tid);
      const int64_t earlier = th.active && th.j >= offset ? tid - offset * inner : -1;
      ScanStep(*a, tid, earlier);
      if (b != nullptr) ScanStep(*b, tid, earlier);
    });
    Swap(&a->current, &a->spare);
    if (b != nullptr) Swap(&b->current, &b->spare);
  }
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_TILE_BLOCK_H_
