//===- Clones.h - Kernel loops compiled for several x86-64 levels -*- C++
//-*-===//
//
// TRAINC_CPU_CLONES before a function compiles it for x86-64-v4 (AVX-512),
// x86-64-v3 (AVX2) and the baseline (SSE2), and an ifunc picks one by the
// CPU's features when the library loads, so the binary still runs on any
// x86-64. For integer loops, which give the same bits in every clone
// (Bitwise.cpp, Elementwise.cpp's integer ops); VectorMath.cpp's float
// formulas have their own, with the flags that keep their bits equal.
// Not under Clang, which takes no target_clones on function templates.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CPU_CLONES_H
#define TRAINC_RUNTIME_CPU_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    defined(__ELF__)
#define TRAINC_CPU_CLONES                                                      \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TRAINC_CPU_CLONES
#endif

#endif // TRAINC_RUNTIME_CPU_CLONES_H
