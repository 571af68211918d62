//===- HostDevice.h - Functions both the CPU and CUDA kernels call -*- C++
//-*-===//
//
// TRAINC_HD marks a function of the shared kernel math (runtime/src/math/,
// base/Float16.h): compiled by nvcc it is __host__ __device__, so a CUDA
// kernel calls the very function the CPU kernel calls and the CPU tests
// exercise; compiled by the host compiler it is an always-inlined function
// (the CPU's vectorized loops rely on it being inlined into each clone).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_BASE_HOSTDEVICE_H
#define TRAINC_RUNTIME_BASE_HOSTDEVICE_H

#if defined(__CUDACC__)
#define TRAINC_HD __host__ __device__ __forceinline__
#else
#define TRAINC_HD inline __attribute__((always_inline))
#endif

#endif // TRAINC_RUNTIME_BASE_HOSTDEVICE_H
