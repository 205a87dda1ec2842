// kreg_pdl.cuh: opting in to programmatic dependent launch (PDL, sm_90). Call kreg::pdl_begin() as the
// kernel's first statement, before any memory access: it waits until the previous kernel on the stream
// has completed with its writes visible (griddepcontrol.wait), then lets the next kernel be scheduled
// early (griddepcontrol.launch_dependents). The engine launches a variant with the PDL attribute only
// if its PTX passes checker/pdl.py (the wait comes before every memory access); without the attribute
// both instructions return at once.
#pragma once

namespace kreg {

__device__ __forceinline__ void pdl_begin() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace kreg
