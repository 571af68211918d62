//===- Patches.h - extract_patches and fold_patches, per element -*- C++
//-*-===//
//
// A convolution's patches (graph.extract_patches) and their transpose
// (graph.fold_patches), over d = 1 to 3 spatial dimensions. With x
// [N, C, S...] and patches p [C, K..., N, O...], kernel position k and
// output position o read input position
//
//   s_i = o_i * stride_i + k_i * dilation_i - padLow_i       (patchSource)
//
// (0 where some s_i is outside [0, S_i)). fold_patches sums, for each input
// position, the patch elements that read it, in row-major order of k, at
// most one per kernel position (patchReader finds it), starting from 0 in
// the accumulator type (f32 for f32 and 16-bit floats, f64 for f64) and
// rounding once. The CPU (cpu/Patches.cpp: rows of the patches added into
// rows of x, kernel position by kernel position) and CUDA
// (cuda/Patches.cu: one thread per element of x, foldPatchesAt) add the
// same terms in that order, so both give the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_PATCHES_H
#define TRAINC_RUNTIME_MATH_PATCHES_H

#include "base/HostDevice.h"

#include <cstdint>

namespace trainc::math {

constexpr int kMaxPatchDims = 3;

/// The geometry of one extract_patches / fold_patches instruction.
struct PatchGeometry {
  int d = 0;
  int64_t n = 0, c = 0;
  int64_t spatial[kMaxPatchDims] = {}, kernel[kMaxPatchDims] = {},
          out[kMaxPatchDims] = {}, stride[kMaxPatchDims] = {},
          dilation[kMaxPatchDims] = {}, padLow[kMaxPatchDims] = {};

  /// Products of the spatial, kernel and output sizes.
  TRAINC_HD int64_t spatialSize() const { return productOf(spatial); }
  TRAINC_HD int64_t kernelSize() const { return productOf(kernel); }
  TRAINC_HD int64_t outSize() const { return productOf(out); }

private:
  TRAINC_HD int64_t productOf(const int64_t *v) const {
    int64_t p = 1;
    for (int i = 0; i < d; ++i)
      p *= v[i];
    return p;
  }
};

/// The geometry of an instruction: `ints` are its kernel sizes, strides,
/// dilations and low paddings (d each), `x` the input's dims [N, C, S...]
/// and `patches` the patches' dims [C, K..., N, O...].
inline PatchGeometry patchGeometry(const int64_t *ints, int d, const int64_t *x,
                                   const int64_t *patches) {
  PatchGeometry g;
  g.d = d;
  g.n = x[0];
  g.c = x[1];
  for (int i = 0; i < d; ++i) {
    g.spatial[i] = x[2 + i];
    g.kernel[i] = ints[i];
    g.stride[i] = ints[d + i];
    g.dilation[i] = ints[2 * d + i];
    g.padLow[i] = ints[3 * d + i];
    g.out[i] = patches[d + 2 + i];
  }
  return g;
}

/// The input position that output position `o` reads at kernel position
/// `k` along one dimension (may be outside the input: padding).
TRAINC_HD int64_t patchSource(int64_t o, int64_t k, int64_t stride,
                              int64_t dilation, int64_t padLow) {
  return o * stride + k * dilation - padLow;
}

/// The output position that reads input position `s` at kernel position
/// `k` along one dimension, or -1 when none does.
TRAINC_HD int64_t patchReader(int64_t s, int64_t k, int64_t stride,
                              int64_t dilation, int64_t padLow, int64_t out) {
  int64_t t = s + padLow - k * dilation;
  if (t < 0 || t % stride != 0)
    return -1;
  t /= stride;
  return t < out ? t : -1;
}

/// fold_patches' element (n, c, s...) of x, `s` its flat spatial index:
/// the sum, in the accumulator type Acc, of the patch elements that read it
/// (`load(i)` gives patch element i as Acc), kernel positions in row-major
/// order.
template <typename Acc, typename Load>
TRAINC_HD Acc foldPatchesAt(const PatchGeometry &g, int64_t n, int64_t c,
                            int64_t s, Load load) {
  int64_t pos[kMaxPatchDims];
  for (int i = g.d - 1; i >= 0; --i) {
    pos[i] = s % g.spatial[i];
    s /= g.spatial[i];
  }
  int64_t kernels = g.kernelSize(), outs = g.outSize();
  Acc sum = Acc(0);
  for (int64_t k = 0; k < kernels; ++k) {
    int64_t rest = k, o = 0, scale = 1;
    bool reads = true;
    for (int i = g.d - 1; i >= 0; --i) {
      int64_t ki = rest % g.kernel[i];
      rest /= g.kernel[i];
      int64_t oi = patchReader(pos[i], ki, g.stride[i], g.dilation[i],
                               g.padLow[i], g.out[i]);
      reads = reads && oi >= 0;
      o += oi * scale;
      scale *= g.out[i];
    }
    if (reads)
      sum += load(((c * kernels + k) * g.n + n) * outs + o);
  }
  return sum;
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_PATCHES_H
