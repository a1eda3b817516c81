// warpd runtime: what the host allows for transparent huge pages on memory
// files (memfd/shmem), which back every CPU array.
//
// Linux decides per host (/sys/kernel/mm/transparent_hugepage/shmem_enabled):
//   never        memory files get 4 KiB pages only (a common default);
//   advise       huge pages where the mapping asked for them (MADV_HUGEPAGE)
//                and the pages are created through that mapping;
//   always, within_size, force
//                huge pages for files however they are filled;
//   deny         none, not even on tmpfs mounts that ask.
// A kernel streaming over tens of MiB spends a large part of its time on TLB
// misses with 4 KiB pages (a native OpenMP saxpy over 2^22 floats took
// 1.3-1.4x as long on 4 KiB memfd pages as on anonymous huge pages, the
// memory of bench/'s native loop). SegmentPool therefore asks for huge pages on large segments and,
// under `advise`, commits them through its mapping; the setting itself is the
// administrator's (docs/operations.md). Thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace warpd::runtime {

enum class ShmemHugePages {
  kNone,       // never, deny, or the file is missing or unreadable
  kOnAdvice,   // advise
  kAlways,     // always, within_size, force
};

// The mode in shmem_enabled's text: the bracketed word ("always [never]").
ShmemHugePages ParseShmemHugePages(std::string_view shmem_enabled);

// This host's mode, read once.
ShmemHugePages HostShmemHugePages();

// The huge page size (hpage_pmd_size), read once; 2 MiB when unreadable.
uint64_t HugePageBytes();

// "never", "advise", ...: the host's bracketed word, for logs and the bench.
std::string_view HostShmemHugePagesText();

}  // namespace warpd::runtime
