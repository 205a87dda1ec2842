// kreg_pdl.cuh: opting in to programmatic dependent launch (PDL, sm_90). Call kreg::pdl_begin() at the
// start of the kernel, before any memory access: it lets the next kernel on the stream be scheduled
// now (griddepcontrol.launch_dependents), then waits until the previous kernel has completed with its
// writes visible (griddepcontrol.wait). The engine launches a variant with the PDL attribute only if
// its PTX passes checker/pdl.py (the wait comes before every memory access); without the attribute
// both instructions return at once. Before the wait a kernel may only compute on registers and hint
// the L2 with kreg::prefetch_l2 (no data reaches the program; the L2 is the point of coherence).
#pragma once

namespace kreg {

__device__ __forceinline__ void pdl_begin() {
#ifdef KREG_PDL_LATE       // (a bench knob: the next kernel scheduled only once this one may run)
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#else
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Ask the L2 to fetch the 128-byte line holding p (generic address; keep p inside a buffer).
__device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.L2 [%0];" ::"l"(p));
}

}  // namespace kreg
