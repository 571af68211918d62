//===- DataMovement.cpp - broadcast, reshape, transpose, slice, concat... -===//
//
// Ops that only move elements (never compute on them), so one
// implementation per op serves every dtype, working on elements of
// dtypeSize bytes:
//   broadcast_in_dim  y[i] = x[j], j_d = (x.shape[d] == 1 ? 0 : i_dims[d])
//   reshape           y = x (row-major order kept: a copy)
//   transpose         y[i] = x[j], j_perm[d] = i_d
//   slice             y[i] = x[start + i * strides]
//   concatenate       y = the operands placed one after another along dim
//   gather            y[a..., j..., b...] = x[a..., idx[j...], b...]
//   iota              y[i] = i_dim (converted to y's dtype)
//
// Shape legend: broadcast, transpose and slice are all "read x at the
// offset sum_d i_d * s_d" for per-result-dim strides s (0 for a broadcast
// dim), handled by stridedCopy. Concatenate and gather view tensors as
// [outer, n, inner] around their dim and copy runs of `inner` elements.
//
// Contiguous inner runs move with memcpy; strided runs with a typed loop
// on unsigned words of the element size. Large copies split over threads
// by rows.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace trainc::cpu {
namespace {

/// Elements moved per parallel chunk.
constexpr int64_t kGrain = 16384;

/// Rows per parallel chunk when each row is `rowElements` long.
int64_t rowGrain(int64_t rowElements) {
  return std::max<int64_t>(1, kGrain / std::max<int64_t>(rowElements, 1));
}

int64_t product(const int64_t *dims, int begin, int end) {
  int64_t n = 1;
  for (int d = begin; d < end; ++d)
    n *= dims[d];
  return n;
}

template <typename W>
void copyBlockWords(const char *in, char *out, int64_t rows, int64_t cols,
                    int64_t inRowStride, int64_t inColStride,
                    int64_t outRowStride) {
  const W *src = reinterpret_cast<const W *>(in);
  W *dst = reinterpret_cast<W *>(out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      dst[r * outRowStride + j] = src[r * inRowStride + j * inColStride];
}

/// out[r * outRowStride + j] = in[r * inRowStride + j * inColStride] for
/// r < rows, j < cols; strides count elements of `size` bytes.
void copyBlock(const char *in, char *out, int64_t rows, int64_t cols,
               int64_t inRowStride, int64_t inColStride, int64_t outRowStride,
               size_t size) {
  switch (size) {
  case 1:
    return copyBlockWords<uint8_t>(in, out, rows, cols, inRowStride,
                                   inColStride, outRowStride);
  case 2:
    return copyBlockWords<uint16_t>(in, out, rows, cols, inRowStride,
                                    inColStride, outRowStride);
  case 4:
    return copyBlockWords<uint32_t>(in, out, rows, cols, inRowStride,
                                    inColStride, outRowStride);
  case 8:
    return copyBlockWords<uint64_t>(in, out, rows, cols, inRowStride,
                                    inColStride, outRowStride);
  }
}

/// Copies n elements read `stride` elements apart (0 repeats one element)
/// to contiguous `out`.
void copyRun(const char *in, char *out, int64_t n, int64_t stride,
             size_t size) {
  if (stride == 1)
    std::memcpy(out, in, n * size);
  else
    copyBlock(in, out, 1, n, 0, stride, 0, size);
}

/// The copy of stridedCopy (on its merged dims) when the innermost result
/// dim reads the input with a stride but an outer dim `c` reads it
/// contiguously, as in a transpose: row by row, every read would touch a
/// new cache line. Square tiles over dims c and the innermost one use
/// whole cache lines on both sides.
void tiledCopy(const char *in, char *out, const std::vector<int64_t> &dims,
               const std::vector<int64_t> &steps, int c, size_t size) {
  constexpr int64_t kTile = 32;
  int rank = int(dims.size()), last = rank - 1;
  std::vector<int64_t> outSteps(rank, 1);
  for (int d = rank - 2; d >= 0; --d)
    outSteps[d] = outSteps[d + 1] * dims[d + 1];
  // The grid of tiles: dims c and last counted in tiles.
  std::vector<int64_t> grid = dims;
  grid[c] = (dims[c] + kTile - 1) / kTile;
  grid[last] = (dims[last] + kTile - 1) / kTile;
  int64_t tiles = 1;
  for (int64_t g : grid)
    tiles *= g;
  parallelFor(tiles, rowGrain(kTile * kTile), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t inOffset = 0, outOffset = 0, rest = t, extent[2] = {1, 1};
      for (int d = last; d >= 0; --d) {
        int64_t i = rest % grid[d];
        rest /= grid[d];
        if (d == c || d == last) {
          i *= kTile;
          extent[d == last] = std::min(kTile, dims[d] - i);
        }
        inOffset += i * steps[d];
        outOffset += i * outSteps[d];
      }
      copyBlock(in + inOffset * size, out + outOffset * size, extent[0],
                extent[1], steps[c], steps[last], outSteps[c], size);
    }
  });
}

/// Fills `out` with n copies of the element at `value`.
void fillRun(const char *value, char *out, int64_t n, size_t size) {
  copyRun(value, out, n, /*stride=*/0, size);
}

/// out[i] = in[sum_d i_d * strides[d]] for every index i of `shape`, out
/// contiguous. Strides are in elements of `size` bytes.
void stridedCopy(const char *in, char *out, const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &strides, size_t size) {
  // Drop size-1 dims and merge a dim into its outer neighbour when the pair
  // reads like one dim; this turns most copies into few long runs.
  std::vector<int64_t> dims, steps;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0)
      return;
    if (shape[d] == 1)
      continue;
    if (!dims.empty() && steps.back() == strides[d] * shape[d]) {
      dims.back() *= shape[d];
      steps.back() = strides[d];
    } else {
      dims.push_back(shape[d]);
      steps.push_back(strides[d]);
    }
  }
  if (!dims.empty() && steps.back() > 1)
    for (int c = 0; c + 1 < int(dims.size()); ++c)
      if (steps[c] == 1)
        return tiledCopy(in, out, dims, steps, c, size);
  int64_t inner = 1, innerStride = 1;
  if (!dims.empty()) {
    inner = dims.back();
    innerStride = steps.back();
    dims.pop_back();
    steps.pop_back();
  }
  int64_t rows = 1;
  for (int64_t d : dims)
    rows *= d;
  int rank = int(dims.size());
  parallelFor(rows, rowGrain(inner), [&](int64_t begin, int64_t end) {
    // The input offset of row `begin`, then stepped like an odometer.
    std::vector<int64_t> index(rank);
    int64_t offset = 0;
    int64_t rest = begin;
    for (int d = rank - 1; d >= 0; --d) {
      index[d] = rest % dims[d];
      rest /= dims[d];
      offset += index[d] * steps[d];
    }
    for (int64_t row = begin; row < end; ++row) {
      copyRun(in + offset * size, out + row * inner * size, inner, innerStride,
              size);
      for (int d = rank - 1; d >= 0; --d) {
        offset += steps[d];
        if (++index[d] < dims[d])
          break;
        offset -= steps[d] * dims[d];
        index[d] = 0;
      }
    }
  });
}

std::vector<int64_t> resultShape(const TensorRef &t) {
  return std::vector<int64_t>(t.dims, t.dims + t.rank);
}

Status broadcastInDim(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  std::vector<int64_t> xStrides = stridesOf(x);
  std::vector<int64_t> strides(y.rank, 0); // New dims repeat: stride 0.
  for (int d = 0; d < x.rank; ++d)
    strides[call.ints[d]] = x.dims[d] == 1 ? 0 : xStrides[d];
  stridedCopy(x.as<char>(), y.as<char>(), resultShape(y), strides,
              dtypeSize(x.dtype));
  return okStatus();
}

Status transpose(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  std::vector<int64_t> xStrides = stridesOf(x);
  std::vector<int64_t> strides(y.rank);
  for (int d = 0; d < y.rank; ++d)
    strides[d] = xStrides[call.ints[d]];
  stridedCopy(x.as<char>(), y.as<char>(), resultShape(y), strides,
              dtypeSize(x.dtype));
  return okStatus();
}

Status slice(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  const int64_t *start = call.ints.data;
  const int64_t *step = call.ints.data + 2 * x.rank;
  std::vector<int64_t> xStrides = stridesOf(x);
  std::vector<int64_t> strides(x.rank);
  int64_t first = 0;
  for (int d = 0; d < x.rank; ++d) {
    strides[d] = xStrides[d] * step[d];
    first += start[d] * xStrides[d];
  }
  size_t size = dtypeSize(x.dtype);
  stridedCopy(x.as<char>() + first * size, y.as<char>(), resultShape(y),
              strides, size);
  return okStatus();
}

Status reshape(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  if (x.data == y.data) // Aliased by the planner: nothing to move.
    return okStatus();
  int64_t bytes = x.numElements() * int64_t(dtypeSize(x.dtype));
  // Split large copies: one thread rarely saturates memory bandwidth.
  const char *src = x.as<char>();
  char *dst = y.as<char>();
  parallelFor(bytes, kGrain * 16, [=](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, end - begin);
  });
  return okStatus();
}

/// Concatenate of short pieces (a few elements of each operand per row, as
/// in a strided slice's gradient, which interleaves a value with zeros):
/// operand by operand, its pieces copied as elements of T (its size), not
/// one memcpy call per piece.
template <typename T>
void concatenateShort(const KernelCall &call, int64_t outer, int64_t inner,
                      int dim) {
  const TensorRef &y = call.outputs[0];
  int64_t row = y.dims[dim] * inner;
  T *out = y.as<T>();
  parallelFor(outer, rowGrain(row), [&](int64_t begin, int64_t end) {
    int64_t offset = 0;
    for (const TensorRef &x : call.inputs) {
      int64_t n = x.dims[dim] * inner;
      const T *in = x.as<T>();
      for (int64_t o = begin; o < end; ++o)
        for (int64_t j = 0; j < n; ++j)
          out[o * row + offset + j] = in[o * n + j];
      offset += n;
    }
  });
}

/// Result viewed as [outer, sum of operand sizes along dim * inner]: each
/// outer row is every operand's row, one after another.
Status concatenate(const KernelCall &call) {
  const TensorRef &y = call.outputs[0];
  int dim = int(call.ints[0]);
  size_t size = dtypeSize(y.dtype);
  int64_t outer = product(y.dims, 0, dim);
  int64_t inner = product(y.dims, dim + 1, y.rank);
  int64_t rowBytes = y.dims[dim] * inner * int64_t(size);
  // Pieces of 16 bytes or less on average: element copies beat memcpy calls.
  if (rowBytes <= 16 * int64_t(call.inputs.size) && outer > 1)
    switch (size) {
    case 2:
      concatenateShort<uint16_t>(call, outer, inner, dim);
      return okStatus();
    case 4:
      concatenateShort<uint32_t>(call, outer, inner, dim);
      return okStatus();
    case 8:
      concatenateShort<uint64_t>(call, outer, inner, dim);
      return okStatus();
    }
  char *out = y.as<char>();
  parallelFor(outer, rowGrain(rowBytes / int64_t(size)),
              [&](int64_t begin, int64_t end) {
                for (int64_t o = begin; o < end; ++o) {
                  char *dst = out + o * rowBytes;
                  for (const TensorRef &x : call.inputs) {
                    int64_t bytes = x.dims[dim] * inner * int64_t(size);
                    std::memcpy(dst, x.as<char>() + o * bytes, bytes);
                    dst += bytes;
                  }
                }
              });
  return okStatus();
}

/// "[1, 2]": the multi-index of flat position `i` in `t`.
std::string formatIndex(const TensorRef &t, int64_t i) {
  std::vector<int64_t> index(t.rank);
  for (int d = t.rank - 1; d >= 0; --d) {
    index[d] = i % t.dims[d];
    i /= t.dims[d];
  }
  std::string s = "[";
  for (int d = 0; d < t.rank; ++d)
    s += (d ? ", " : "") + std::to_string(index[d]);
  return s + "]";
}

/// Operand viewed as [outer, n, inner] around `axis`, result as [outer,
/// m, inner] for m indices: result row (o, j) is operand row (o, idx[j]).
Status gather(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &indices = call.inputs[1];
  const TensorRef &y = call.outputs[0];
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    return unsupportedDType(call, indices.dtype);
  int axis = int(call.ints[0]);
  int64_t n = x.dims[axis];
  int64_t outer = product(x.dims, 0, axis);
  int64_t inner = product(x.dims, axis + 1, x.rank);
  int64_t m = indices.numElements();
  // Check and wrap every index once, before anything is written.
  std::vector<int64_t> rows(m);
  for (int64_t j = 0; j < m; ++j) {
    int64_t index = loadAs<int64_t>(indices, j);
    if (index < -n || index >= n)
      return kernelError(
          call, "index " + std::to_string(index) + " at position " +
                    formatIndex(indices, j) + " of the indices is out of " +
                    "range for axis " + std::to_string(axis) + " of size " +
                    std::to_string(n) + " (valid: [" + std::to_string(-n) +
                    ", " + std::to_string(n) + "))");
    rows[j] = index < 0 ? index + n : index;
  }
  int64_t rowBytes = inner * int64_t(dtypeSize(x.dtype));
  const char *in = x.as<char>();
  char *out = y.as<char>();
  parallelFor(outer * m, rowGrain(inner), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t o = r / m, j = r % m;
      std::memcpy(out + r * rowBytes, in + (o * n + rows[j]) * rowBytes,
                  rowBytes);
    }
  });
  return okStatus();
}

/// Result viewed as [outer, n, inner] around `dim`: row (o, k) is inner
/// copies of k. The value of k is stored as storeAs does, exact in every
/// dtype for k < 2^24 (above that, f16 is infinite anyway and bf16 rounds
/// k through float first).
Status iota(const KernelCall &call) {
  const TensorRef &y = call.outputs[0];
  if (y.dtype == DType::I1)
    return unsupportedDType(call, y.dtype);
  int dim = int(call.ints[0]);
  int64_t n = y.dims[dim];
  int64_t inner = product(y.dims, dim + 1, y.rank);
  size_t size = dtypeSize(y.dtype);
  int64_t rows = y.numElements() / std::max<int64_t>(inner, 1);
  // 32- and 64-bit integers (jax.random's counters, often along the last
  // dimension) by a typed loop: storeAs per row is slow for short rows.
  auto typed = [&](auto zero) {
    using T = decltype(zero);
    T *ys = y.as<T>();
    parallelFor(rows, rowGrain(inner), [=](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        std::fill_n(ys + r * inner, inner, T(r % n));
    });
    return okStatus();
  };
  switch (y.dtype) {
  case DType::I32:
    return typed(int32_t());
  case DType::I64:
    return typed(int64_t());
  case DType::U32:
    return typed(uint32_t());
  case DType::U64:
    return typed(uint64_t());
  default:
    break;
  }
  char *out = y.as<char>();
  parallelFor(rows, rowGrain(inner), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      uint64_t value = 0; // One element of y.dtype.
      TensorRef element = y;
      element.data = &value;
      storeAs<int64_t>(element, 0, r % n);
      fillRun(reinterpret_cast<const char *>(&value), out + r * inner * size,
              inner, size);
    }
  });
  return okStatus();
}

} // namespace

Status runDataMovement(const KernelCall &call) {
  switch (call.op) {
  case Opcode::BroadcastInDim:
    return broadcastInDim(call);
  case Opcode::Reshape:
    return reshape(call);
  case Opcode::Transpose:
    return transpose(call);
  case Opcode::Slice:
    return slice(call);
  case Opcode::Concatenate:
    return concatenate(call);
  case Opcode::Gather:
    return gather(call);
  case Opcode::Iota:
    return iota(call);
  default:
    return kernelError(call, "not a data movement op");
  }
}

} // namespace trainc::cpu
