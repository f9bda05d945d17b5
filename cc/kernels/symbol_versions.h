// Included first in every source of the op library (CMakeLists.txt): pins C++ runtime symbols to
// their oldest versions, so the library loads with the libstdc++ of older distributions
// (tests/test_packaging.py checks the wheel's platform tag).
#ifndef CAUSAL_MOVING_AVG_CC_KERNELS_SYMBOL_VERSIONS_H_
#define CAUSAL_MOVING_AVG_CC_KERNELS_SYMBOL_VERSIONS_H_

// GCC 12 gave condition_variable::wait a new default version (GLIBCXX_3.4.30, for thread
// cancellation); the original version is the same function for code that never cancels threads.
#if defined(__GNUC__)
__asm__(
    ".symver _ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE,"
    "_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE@GLIBCXX_3.4.11");
#endif

#endif  // CAUSAL_MOVING_AVG_CC_KERNELS_SYMBOL_VERSIONS_H_
