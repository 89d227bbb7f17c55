#include "launch/tma.hpp"

#include <cuda.h>

#include <sstream>

#include "moegemm/error.hpp"
#include "runtime/driver.hpp"

namespace moegemm::launch {

static_assert(sizeof(CUtensorMap) == sizeof(TmaDescriptor), "TmaDescriptor must mirror CUtensorMap");
static_assert(alignof(TmaDescriptor) >= 64, "CUtensorMap needs 64-byte alignment");

TmaDescriptor make_tma_descriptor(const TmaSpec& s) {
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  switch (s.element) {
    case TmaElement::kUint8:
      type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
      break;
    case TmaElement::kBFloat16:
      type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
      break;
    case TmaElement::kFloat32:
      type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
      break;
  }
  cuuint64_t dims[3];
  cuuint64_t strides[2];
  cuuint32_t box[3];
  cuuint32_t element_strides[3] = {1, 1, 1};
  for (int i = 0; i < s.rank; ++i) {
    dims[i] = s.dims[i];
    box[i] = s.box[i];
  }
  for (int i = 0; i + 1 < s.rank; ++i) strides[i] = s.strides_bytes[i];
  TmaDescriptor out{};
  const CUresult r = jit::driver().cuTensorMapEncodeTiled(
      reinterpret_cast<CUtensorMap*>(&out), type, static_cast<cuuint32_t>(s.rank), const_cast<void*>(s.base), dims,
      strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      s.swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::ostringstream os;
    os << "cuTensorMapEncodeTiled(" << s.what << ", dims [";
    for (int i = 0; i < s.rank; ++i) os << (i ? ", " : "") << s.dims[i];
    os << "], box [";
    for (int i = 0; i < s.rank; ++i) os << (i ? ", " : "") << s.box[i];
    os << "])";
    jit::check(r, os.str().c_str());
  }
  return out;
}

}  // namespace moegemm::launch
