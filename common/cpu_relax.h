// warpd: a pause for spin-wait loops (x86 PAUSE, Arm YIELD), so a spinning
// thread yields the core's shared resources to its sibling and wastes less
// power.
//
//   while (!ready.load(std::memory_order_acquire)) warpd::CpuRelax();
#pragma once

namespace warpd {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace warpd
