// The C++ type TensorFlow (and XLA on CPU) holds each of the op's dtypes in: Eigen's half types.
// Free of TensorFlow's framework headers, so the XLA handlers can use it too.
#ifndef CAUSAL_MOVING_AVG_CC_KERNELS_TF_TYPES_H_
#define CAUSAL_MOVING_AVG_CC_KERNELS_TF_TYPES_H_

#include "Eigen/Core"
#include "cc/core/types.h"

namespace causal_moving_avg {

template <DType kDType>
using TfTypeOf = CppTypeOf<Eigen::half, Eigen::bfloat16, kDType>;

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_KERNELS_TF_TYPES_H_
