//===- Optimizer.cu - adamw_update ----------------------------------------===//
//
// One AdamW step of one parameter, elementwise: math/AdamW.h's
// adamwElement, the formula cpu/Optimizer.cpp calls, compiled here with
// -fmad=false and IEEE sqrt and division, so both devices produce the same
// bits. f32 and f64 only, as on the CPU (the optimizer pass keeps the
// decomposed update for 16-bit parameters).
//
// Operands: param, grad, exp_avg, exp_avg_sq, then the 0-d neg_step_size,
// bias_correction2_sqrt, decay_factor and grad_scale, which live in device
// memory: each thread reads them in the kernel (they are computed by
// earlier kernels of the step), never the host. The optional ninth operand,
// a 0-d i1 skip flag, is device memory too: when it is set, the kernel
// copies the old param and moments to the results that are not their
// memory and computes nothing. The results may be the memory of operands
// 0, 2 and 3 (the executable updates in place): each thread reads an
// element's inputs before it writes that element's results.
//
// Differs from the CPU: a 16-bit parameter with the skip flag set is an
// unsupported-dtype error here (the host cannot read the flag), where the
// CPU copies; the compiler never emits adamw_update for 16-bit parameters.
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "math/AdamW.h"

namespace trainc::cuda {
namespace {

/// The operands and results of one update, as kernel arguments.
template <typename T> struct AdamwArgs {
  const T *p, *g, *m, *v;
  /// The 0-d operands 4-7 (device memory).
  const T *negStep, *biasCorrection2Sqrt, *decay, *gradScale;
  /// The skip flag, or null.
  const Bool *skip;
  T *newP, *newM, *newV;
  /// The attributes, rounded to T on the host as the CPU does.
  T beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps;
};

template <typename T> __global__ void adamwKernel(AdamwArgs<T> a, int64_t n) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (a.skip && load(a.skip, 0)) {
    // The results keep the old values.
    for (int64_t i = first; i < n; i += step) {
      if (a.newP != a.p)
        a.newP[i] = a.p[i];
      if (a.newM != a.m)
        a.newM[i] = a.m[i];
      if (a.newV != a.v)
        a.newV[i] = a.v[i];
    }
    return;
  }
  const math::AdamwScalars<T> c = {
      *a.negStep, *a.biasCorrection2Sqrt, *a.decay, *a.gradScale,
      a.beta1,    a.oneMinusBeta1,        a.beta2,  a.oneMinusBeta2,
      a.eps};
  for (int64_t i = first; i < n; i += step) {
    T p1, m1, v1;
    math::adamwElement(c, a.p[i], a.g[i], a.m[i], a.v[i], p1, m1, v1);
    a.newP[i] = p1;
    a.newM[i] = m1;
    a.newV[i] = v1;
  }
}

template <typename T> Status adamw(const KernelCall &call) {
  const Span<TensorRef> &in = call.inputs;
  AdamwArgs<T> a;
  a.p = in[0].as<const T>();
  a.g = in[1].as<const T>();
  a.m = in[2].as<const T>();
  a.v = in[3].as<const T>();
  a.negStep = in[4].as<const T>();
  a.biasCorrection2Sqrt = in[5].as<const T>();
  a.decay = in[6].as<const T>();
  a.gradScale = in[7].as<const T>();
  a.skip = in.size == 9 ? in[8].as<const Bool>() : nullptr;
  a.newP = call.outputs[0].as<T>();
  a.newM = call.outputs[1].as<T>();
  a.newV = call.outputs[2].as<T>();
  a.beta1 = T(call.floats[0]);
  a.oneMinusBeta1 = T(1 - call.floats[0]);
  a.beta2 = T(call.floats[1]);
  a.oneMinusBeta2 = T(1 - call.floats[1]);
  a.eps = T(call.floats[2]);
  int64_t n = in[0].numElements();
  if (n == 0)
    return okStatus();
  adamwKernel<T><<<gridFor(n), kThreads, 0, streamOf(call).handle()>>>(a, n);
  return checkLaunch(call, "adamwKernel");
}

} // namespace

Status runAdamwUpdate(const KernelCall &call) {
  switch (call.inputs[0].dtype) {
  case DType::F32:
    return adamw<float>(call);
  case DType::F64:
    return adamw<double>(call);
  default:
    return unsupported(call, call.inputs[0].dtype);
  }
}

} // namespace trainc::cuda
