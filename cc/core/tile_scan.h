// Tile scans: the GPU's algorithm for narrow layouts (inner < 32) with windows too long to sum
// directly, written once for two executors: the CUDA kernels (one thread block per tile, phases
// separated by __syncthreads) and a host emulation that runs each phase thread by thread, so
// core_test checks the algorithm, indexing included, on machines without a GPU.
//
// A tile is `tile_steps` consecutive steps of one row with all its lanes: one contiguous span of
// memory, loaded and stored coalesced. With Wc = min(W, steps) (a longer window sums the same
// inputs), x[j] = 0 for j < 0, and a tile starting at step t0:
//   window sum at t0 + k = A + sum_{j <= k} (x[t0 + j] - x[t0 - Wc + j])
//   A = window sum at t0 - 1 = sum_{j < Wc % tile_steps} x[t0 - Wc + j]        (the head)
//                            + sums of the Wc / tile_steps whole tiles before t0 (tile sums)
// The head lies in the span the tile reads anyway (the leaving values); the tile sums come from a
// first pass (TileSums) that only windows of at least a tile need. So an output costs two input
// reads plus Wc / tile_steps^2 tile sums whatever W is, the prefix sums are thread-block scans in
// shared memory, and every tile restarts from the input, so rounding cannot drift. Tile sums are
// kept as CarefulWindows (finite sum + counts of NaN/+Inf/-Inf). A lane whose sums meet a NaN/Inf
// (or overflow) in a tile is redone by CarefulMeans from a careful anchor built the same way (tile
// sums + head), so the redo also costs O(tile + Wc / tile) and never re-reads the W inputs.
//
// Per-thread state never crosses a phase (the emulation could not keep it): what one phase
// hands to the next goes through the shared-memory scratch, and what is computed between phases
// is the same for every thread of the block.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_TILE_SCAN_H_
#define CAUSAL_MOVING_AVG_CC_CORE_TILE_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <limits>

#include "cc/core/numerics.h"
#include "cc/core/running_means.h"
#include "cc/core/types.h"

namespace causal_moving_avg {

constexpr int kTileThreads = 256;
// Narrower than a warp: the layouts the tile scan serves (wider ones are coalesced per lane).
constexpr int64_t kTileMaxInner = 32;

// Consecutive steps one thread scans serially: fills the scratch to about 16 KB per Sum array.
// A compile-time count, so the loops over a thread's steps unroll on the GPU and all of its loads
// are in flight together.
template <typename Sum>
constexpr int64_t TileItems() {
  return sizeof(Sum) > 8 ? 4 : 8;
}

struct TileScanPlan {
  Geometry geometry;
  int64_t window;  // as given: sets the divisor
  Edge edge;
  int64_t summed_window;     // Wc = min(window, steps): sets which inputs are summed
  int64_t threads_per_lane;  // P = kTileThreads / inner; thread tid serves lane tid % inner
  int64_t tile_steps;        // P * TileItems<Sum>()
  int64_t tiles_per_row;
  int64_t num_tiles;    // outer * tiles_per_row
  int64_t whole_tiles;  // Wc / tile_steps: tile sums in A
  int64_t head_steps;   // Wc % tile_steps: leaving values in A
};

// Requires steps >= 1 and 1 <= inner < kTileMaxInner.
template <typename Sum>
CMA_HOST_DEVICE inline TileScanPlan MakeTileScanPlan(Geometry geometry, int64_t window, Edge edge) {
  TileScanPlan plan;
  plan.geometry = geometry;
  plan.window = window;
  plan.edge = edge;
  plan.summed_window = Min64(window, geometry.steps);
  plan.threads_per_lane = kTileThreads / geometry.inner;
  plan.tile_steps = plan.threads_per_lane * TileItems<Sum>();
  plan.tiles_per_row = CeilDiv(geometry.steps, plan.tile_steps);
  plan.num_tiles = geometry.outer * plan.tiles_per_row;
  plan.whole_tiles = plan.summed_window / plan.tile_steps;
  plan.head_steps = plan.summed_window % plan.tile_steps;
  return plan;
}

// Global scratch for the tile sums, one CarefulWindow per (tile, lane); none when no window
// spans a whole tile.
template <typename Sum>
inline int64_t TileSumsBytes(const TileScanPlan& plan) {
  return plan.whole_tiles == 0 ? 0
                               : plan.num_tiles * plan.geometry.inner *
                                     static_cast<int64_t>(sizeof(CarefulWindow<Sum>));
}

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
  using Careful = CarefulWindow<Sum>;
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
  const int inner = static_cast<int>(plan.geometry.inner);  // < 32: 32-bit division is cheaper
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
  const int64_t inner = plan.geometry.inner;
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

// First pass: every lane's careful sum over tile `tile`, into sums[tile * inner + lane].
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void TileSums(const Block& block, const TileScanPlan& plan, const T* x,
                              CarefulWindow<Sum>* sums, int64_t tile,
                              const TileScratch<Sum>& scratch) {
  using Acc = typename Sum::Value;
  const int64_t inner = plan.geometry.inner;
  const int64_t row = tile / plan.tiles_per_row;
  const int64_t t0 = (tile % plan.tiles_per_row) * plan.tile_steps;
  const T* row_x = x + row * plan.geometry.steps * inner;
  constexpr int64_t kItems = TileItems<Sum>();
  DoubleBuffer<CarefulWindow<Sum>> careful = scratch.careful;
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    CarefulWindow<Sum> sum;
    if (th.active) {
      Acc values[kItems];
      CMA_UNROLL
      for (int64_t m = 0; m < kItems; ++m) {
        const int64_t t = t0 + th.j + m * plan.threads_per_lane;  // coalesced across threads
        values[m] = t < plan.geometry.steps ? static_cast<Acc>(row_x[t * inner + th.lane]) : Acc(0);
      }
      CMA_UNROLL
      for (int64_t m = 0; m < kItems; ++m) sum.Add(values[m], 1);
    }
    careful.current[tid] = sum;
  });
  ScanAcrossLaneThreads<CarefulWindow<Sum>>(block, plan, &careful, nullptr);
  block.Phase([&](int tid) {
    if (tid < inner) {
      sums[tile * inner + tid] = careful.current[(plan.threads_per_lane - 1) * inner + tid];
    }
  });
}

// What every step of TileMeans knows of its tile: where it lies and what precedes it.
template <typename T, typename Sum>
struct TileView {
  int64_t tile_in_row;
  int64_t t0, t1;      // its steps
  int64_t first_tile;  // the first of the whole tiles summed into A (may be < 0: none before 0)
  const T* row_x;
  T* row_y;
  const CarefulWindow<Sum>* row_sums;  // the row's tile sums (TileSums' results)
};

template <typename T, typename Sum>
CMA_HOST_DEVICE TileView<T, Sum> TileAt(const TileScanPlan& plan, const T* x, T* y,
                                        const CarefulWindow<Sum>* sums, int64_t tile) {
  const int64_t inner = plan.geometry.inner;
  const int64_t steps = plan.geometry.steps;
  const int64_t row = tile / plan.tiles_per_row;
  TileView<T, Sum> view;
  view.tile_in_row = tile % plan.tiles_per_row;
  view.t0 = view.tile_in_row * plan.tile_steps;
  view.t1 = Min64(steps, view.t0 + plan.tile_steps);
  view.first_tile = view.tile_in_row - plan.whole_tiles;
  view.row_x = x + row * steps * inner;
  view.row_y = y + row * steps * inner;
  view.row_sums = sums + row * plan.tiles_per_row * inner;
  return view;
}

// Step 1. Differences entering - leaving into the cells, and each thread's share of A (a tile
// sum that holds a NaN/Inf makes the share NaN, so the lane is redone). All loads come first, so
// none waits for a shared-memory store.
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void LoadDifferences(const Block& block, const TileScanPlan& plan,
                                     const TileView<T, Sum>& tile,
                                     const TileScratch<Sum>& scratch) {
  using Acc = typename Sum::Value;
  constexpr int64_t kItems = TileItems<Sum>();
  const int64_t inner = plan.geometry.inner;
  const int64_t per_lane = plan.threads_per_lane;
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    Sum anchor_share;
    if (th.active) {
      Acc entering[kItems];
      Acc leaving[kItems];
      CMA_UNROLL
      for (int64_t m = 0; m < kItems; ++m) {
        const int64_t k = th.j + m * per_lane;  // coalesced across threads
        const int64_t t = tile.t0 + k;
        const int64_t t_leaving = t - plan.summed_window;
        const bool in_tile = t < tile.t1;
        leaving[m] = t_leaving >= 0 && (in_tile || k < plan.head_steps)
                         ? static_cast<Acc>(tile.row_x[t_leaving * inner + th.lane])
                         : Acc(0);
        entering[m] = in_tile ? static_cast<Acc>(tile.row_x[t * inner + th.lane]) : Acc(0);
      }
      CMA_UNROLL
      for (int64_t m = 0; m < kItems; ++m) {
        const int64_t k = th.j + m * per_lane;
        if (k < plan.head_steps) anchor_share.Add(leaving[m]);
        Sum difference;
        if (tile.t0 + k < tile.t1) difference.Slide(entering[m], leaving[m]);
        scratch.cells[PaddedCell(k * inner + th.lane)] = difference;
      }
    }
    for (int64_t b = Max64(0, tile.first_tile) + th.j; th.active && b < tile.tile_in_row;
         b += per_lane) {
      const CarefulWindow<Sum>& tile_sum = tile.row_sums[b * inner + th.lane];
      anchor_share.Merge(tile_sum.finite_sum);
      if (!tile_sum.AllFinite()) anchor_share.Add(std::numeric_limits<Acc>::quiet_NaN());
    }
    scratch.anchor.current[tid] = anchor_share;
    if (tid < kTileMaxInner) scratch.bad_lane[tid] = 0;
  });
}

// Step 2. Each thread's consecutive steps, scanned serially; the thread's total for step 3.
template <typename Sum, typename Block>
CMA_HOST_DEVICE void ScanThreadSteps(const Block& block, const TileScanPlan& plan,
                                     const TileScratch<Sum>& scratch) {
  constexpr int64_t kItems = TileItems<Sum>();
  const int64_t inner = plan.geometry.inner;
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    Sum running;
    for (int64_t m = 0; th.active && m < kItems; ++m) {
      Sum& cell = scratch.cells[PaddedCell((th.j * kItems + m) * inner + th.lane)];
      running.Merge(cell);
      cell = running;
    }
    scratch.thread_sums.current[tid] = running;
  });
}

// Step 4. Window sums = A + the lane's exclusive prefix before this thread + the thread's own
// prefix; the means staged in shared memory, lanes whose sums are not finite flagged.
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void ComputeMeans(const Block& block, const TileScanPlan& plan,
                                  const TileView<T, Sum>& tile, const TileScratch<Sum>& scratch,
                                  const DoubleBuffer<Sum>& thread_prefix,
                                  const DoubleBuffer<Sum>& anchor) {
  using Acc = typename Sum::Value;
  constexpr int64_t kItems = TileItems<Sum>();
  const int64_t inner = plan.geometry.inner;
  const InverseDivisors<Acc> divisors(plan.edge, plan.window);
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    if (!th.active) return;
    Sum base = anchor.current[(plan.threads_per_lane - 1) * inner + th.lane];
    if (th.j > 0) base.Merge(thread_prefix.current[(th.j - 1) * inner + th.lane]);
    for (int64_t m = 0; m < kItems; ++m) {
      const int64_t k = th.j * kItems + m;
      const int64_t t = tile.t0 + k;
      if (t >= tile.t1) break;
      Sum window_sum = base;
      window_sum.Merge(scratch.cells[PaddedCell(k * inner + th.lane)]);
      const Acc sum = window_sum.Get();
      if (!IsFinite(sum)) scratch.bad_lane[th.lane] = 1;
      scratch.means[PaddedCell(k * inner + th.lane)] = sum * divisors.At(t);
    }
  });
}

// Step 5. Coalesced store of the lanes whose sums stayed finite.
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void StoreMeans(const Block& block, const TileScanPlan& plan,
                                const TileView<T, Sum>& tile, const TileScratch<Sum>& scratch) {
  constexpr int64_t kItems = TileItems<Sum>();
  const int64_t inner = plan.geometry.inner;
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    if (!th.active || scratch.bad_lane[th.lane]) return;
    CMA_UNROLL
    for (int64_t m = 0; m < kItems; ++m) {
      const int64_t k = th.j + m * plan.threads_per_lane;
      if (tile.t0 + k >= tile.t1) break;
      tile.row_y[(tile.t0 + k) * inner + th.lane] =
          RoundTo<T>(scratch.means[PaddedCell(k * inner + th.lane)]);
    }
  });
}

// Step 6 (rare). Lanes that met a NaN/Inf (or overflowed) are redone counting non-finite values,
// from a careful A that the lane's threads build from the tile sums and the head as in step 1;
// then one thread per lane runs the tile serially: O(tile), never the W inputs before it.
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void RedoBadLanes(const Block& block, const TileScanPlan& plan,
                                  const TileView<T, Sum>& tile, const TileScratch<Sum>& scratch) {
  using Acc = typename Sum::Value;
  const int64_t inner = plan.geometry.inner;
  const int64_t per_lane = plan.threads_per_lane;
  DoubleBuffer<CarefulWindow<Sum>> careful = scratch.careful;
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    CarefulWindow<Sum> share;
    if (th.active && scratch.bad_lane[th.lane]) {
      for (int64_t k = th.j; k < plan.head_steps; k += per_lane) {
        const int64_t t_leaving = tile.t0 + k - plan.summed_window;
        if (t_leaving >= 0) share.Add(static_cast<Acc>(tile.row_x[t_leaving * inner + th.lane]), 1);
      }
      for (int64_t b = Max64(0, tile.first_tile) + th.j; b < tile.tile_in_row; b += per_lane) {
        share.Merge(tile.row_sums[b * inner + th.lane]);
      }
    }
    careful.current[tid] = share;
  });
  ScanAcrossLaneThreads<CarefulWindow<Sum>>(block, plan, &careful, nullptr);
  block.Phase([&](int tid) {
    const TileThread th = TileThreadAt(plan, tid);
    if (th.active && th.j == 0 && scratch.bad_lane[th.lane]) {
      CarefulMeans<T, Sum>(careful.current[(per_lane - 1) * inner + th.lane], tile.row_x + th.lane,
                           tile.row_y + th.lane, inner, tile.t0, tile.t1, plan.window, plan.edge);
    }
  });
}

// Second pass: the outputs of tile `tile`. `sums` holds TileSums' results (unused when
// plan.whole_tiles == 0).
template <typename T, typename Sum, typename Block>
CMA_HOST_DEVICE void TileMeans(const Block& block, const TileScanPlan& plan, const T* x, T* y,
                               const CarefulWindow<Sum>* sums, int64_t tile_index,
                               const TileScratch<Sum>& scratch) {
  const TileView<T, Sum> tile = TileAt(plan, x, y, sums, tile_index);
  LoadDifferences(block, plan, tile, scratch);
  ScanThreadSteps(block, plan, scratch);
  // Step 3: the threads' totals and the shares of A, each scanned across the lane's threads.
  DoubleBuffer<Sum> thread_prefix = scratch.thread_sums;
  DoubleBuffer<Sum> anchor = scratch.anchor;
  ScanAcrossLaneThreads<Sum>(block, plan, &thread_prefix, &anchor);
  ComputeMeans(block, plan, tile, scratch, thread_prefix, anchor);
  StoreMeans(block, plan, tile, scratch);
  // Read after a barrier, the flags are the same for every thread, so all take the same branch.
  bool any_bad = false;
  for (int64_t lane = 0; lane < plan.geometry.inner; ++lane) {
    any_bad = any_bad || scratch.bad_lane[lane] != 0;
  }
  if (any_bad) RedoBadLanes(block, plan, tile, scratch);
}

// The host executor: runs a phase for every thread of the thread block in turn (the barrier is
// implicit).
struct HostThreadBlock {
  template <typename Body>
  void Phase(Body&& body) const {
    for (int tid = 0; tid < kTileThreads; ++tid) body(tid);
  }
};

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_CORE_TILE_SCAN_H_
