// What the two FFI handlers (ffi_host.cc, ffi_cuda.cc) share: the custom call's operands,
// results and attributes after each platform's context, and reading them. Includes XLA's
// public FFI header, so only handler files may include it (see custom_call.h).
#ifndef CAUSAL_MOVING_AVG_CC_XLA_FFI_HANDLER_H_
#define CAUSAL_MOVING_AVG_CC_XLA_FFI_HANDLER_H_

#include <cstdint>
#include <string>
#include <utility>

#include "cc/core/call.h"
#include "cc/core/types.h"
#include "cc/xla/custom_call.h"
#include "xla/ffi/api/ffi.h"

// XLA decodes the attribute dictionary into XlaCallAttributes, member by member from the list.
#define CMA_XLA_STRUCT_MEMBER(type, name, mlir_type) , ::xla::ffi::StructMember<type>(#name)
#define CMA_XLA_APPLY(macro, ...) macro(__VA_ARGS__)
CMA_XLA_APPLY(
    XLA_FFI_REGISTER_STRUCT_ATTR_DECODING,
    ::causal_moving_avg::XlaCallAttributes CMA_FOR_EACH_XLA_ATTRIBUTE(CMA_XLA_STRUCT_MEMBER));
#undef CMA_XLA_APPLY
#undef CMA_XLA_STRUCT_MEMBER

namespace causal_moving_avg {

// x, history, seen and the sequence ids in; y, the next history, the next seen and the scratch out;
// the attributes.
template <typename Binding>
auto BindCustomCall(Binding binding) {
  namespace ffi = ::xla::ffi;
  return std::move(binding)
      .template Arg<ffi::AnyBuffer>()
      .template Arg<ffi::AnyBuffer>()
      .template Arg<ffi::AnyBuffer>()
      .template Arg<ffi::AnyBuffer>()
      .template Ret<ffi::AnyBuffer>()
      .template Ret<ffi::AnyBuffer>()
      .template Ret<ffi::AnyBuffer>()
      .template Ret<ffi::AnyBuffer>()
      .template Attrs<XlaCallAttributes>();
}

// The custom call's buffers, as the handlers receive them.
struct XlaBuffers {
  ::xla::ffi::AnyBuffer x, history, seen, ids;
  ::xla::ffi::Result<::xla::ffi::AnyBuffer> y, next_history, next_seen, scratch;
};

// XLA's element type of each dtype, in the list's order (CMA_FOR_EACH_DTYPE).
inline constexpr ::xla::ffi::DataType kXlaDataTypes[] = {
    ::xla::ffi::DataType::F16, ::xla::ffi::DataType::BF16, ::xla::ffi::DataType::F32,
    ::xla::ffi::DataType::F64};

// Reads a custom call into the core's Call and checks it (the attributes come from our XLA
// kernel, but an HLO module can be written by hand); an error names the problem.
inline ::xla::ffi::Error ReadXlaCall(XlaBuffers& buffers, const XlaCallAttributes& attributes,
                                     Call* call) {
  const ::xla::ffi::AnyBuffer& x = buffers.x;
  const ::xla::ffi::AnyBuffer& y = *buffers.y;
  namespace ffi = ::xla::ffi;
  const auto invalid = [](const std::string& problem) {
    return ffi::Error::InvalidArgument("CausalMovingAvg: " + problem);
  };
  bool known = false;
  DType dtype = DType::kFloat32;
#define CMA_XLA_DTYPE(enumerator, name)                                         \
  if (x.element_type() == kXlaDataTypes[static_cast<int>(DType::enumerator)]) { \
    dtype = DType::enumerator;                                                  \
    known = true;                                                               \
  }
  CMA_FOR_EACH_DTYPE(CMA_XLA_DTYPE)
#undef CMA_XLA_DTYPE
  if (!known) return invalid("x must be float16, bfloat16, float32 or float64");
  *call = Call{{attributes.outer, attributes.steps, attributes.inner},
               dtype,
               attributes.window,
               static_cast<Edge>(attributes.edge),
               x.untyped_data(),
               y.untyped_data()};
  if (attributes.stream != 0) {
    call->stream = true;
    call->history = buffers.history.untyped_data();
    call->seen = static_cast<const int64_t*>(buffers.seen.untyped_data());
    call->next_history = buffers.next_history->untyped_data();
    call->next_seen = static_cast<int64_t*>(buffers.next_seen->untyped_data());
  }
  if (attributes.ids != 0) {
    const bool wide = attributes.ids == static_cast<int32_t>(Call::Ids::kInt64);
    const auto type = wide ? ::xla::ffi::DataType::S64 : ::xla::ffi::DataType::S32;
    if (buffers.ids.element_type() != type ||
        static_cast<int64_t>(buffers.ids.element_count()) != call->view.outer * call->view.steps) {
      return invalid("the sequence ids do not fit x");
    }
    call->ids_kind = wide ? Call::Ids::kInt64 : Call::Ids::kInt32;
    call->segment_ids = buffers.ids.untyped_data();
  }
  if (const std::string problem = CheckCall(*call); !problem.empty()) return invalid(problem);
  const int64_t elements = static_cast<int64_t>(x.element_count());
  if (elements != call->Elements() || static_cast<int64_t>(y.element_count()) != elements ||
      y.element_type() != x.element_type()) {
    return invalid("the [outer, steps, inner] attributes do not describe the operand and result");
  }
  if (call->IsStream()) {
    const int64_t state = call->view.outer * call->HistorySteps() * call->view.inner;
    if (static_cast<int64_t>(buffers.history.element_count()) != state ||
        static_cast<int64_t>(buffers.next_history->element_count()) != state ||
        buffers.history.element_type() != x.element_type() ||
        buffers.seen.element_type() != ::xla::ffi::DataType::S64 ||
        buffers.seen.element_count() != 1 ||
        buffers.next_seen->element_type() != ::xla::ffi::DataType::S64 ||
        buffers.next_seen->element_count() != 1) {
      return invalid("the stream's operands do not fit x and the window");
    }
  }
  return ffi::Error::Success();
}

}  // namespace causal_moving_avg

#endif  // CAUSAL_MOVING_AVG_CC_XLA_FFI_HANDLER_H_
