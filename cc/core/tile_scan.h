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
// kept as CarefulSums (finite sum + counts of NaN/+Inf/-Inf). A lane whose sums meet a NaN/Inf
// (or overflow) in a tile is redone by CarefulMeans from a careful anchor built the same way (tile
// sums + head), so the redo also costs O(tile + Wc / tile) and never re-reads the W inputs.
//
// Per-thread state never crosses a phase (the emulation could not keep it): what one phase
// hands to the next goes through the shared-memory scratch, and what is computed between phases
// is the same for every thread of the block.
#ifndef CAUSAL_MOVING_AVG_CC_CORE_TILE_SCAN_H_
#define CAUSAL_MOVING_AVG_CC_CORE_TILE_SCAN_H_

// The plan (tile_scan_plan.h), the thread block's scratch and scans (tile_block.h), the first
// pass (tile_sums.h) and the second (tile_means.h); the host emulation of a thread block is
// host_thread_block.h.
#include "cc/core/tile_block.h"
#include "cc/core/tile_means.h"
#include "cc/core/tile_scan_plan.h"
#include "cc/core/tile_sums.h"

#endif  // CAUSAL_MOVING_AVG_CC_CORE_TILE_SCAN_H_
