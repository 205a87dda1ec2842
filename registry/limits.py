"""Every limit kreg puts on untrusted input, in one place: metadata and source sizes, the size of
integers an expression may produce, the CUDA launch limits (sm_90, checked on the CPU as on the GPU)
and the emulator's step budget. Pure functions of plain numbers: any module may import this one."""
from __future__ import annotations

# ---- files ------------------------------------------------------------------------------------------
METADATA_MAX_BYTES = 64 << 10        # an op or variant YAML file
SOURCE_MAX_BYTES = 1 << 20           # a variant's .cu file
COMPILE_LOG_MAX_CHARS = 20_000       # of NVRTC's log, in an error message (and so in the results store)

# ---- proofs -----------------------------------------------------------------------------------------
PROOF_BUDGET_MS = 30_000             # a variant's proof budget (ms of solver work on the reference machine)
PROOF_BUDGET_MAX_MS = 600_000        # the most a variant's YAML (`proof: {budget_ms}`) may ask for

# ---- expressions ------------------------------------------------------------------------------------
EXPR_MAX_ABS = 1 << 64               # any intermediate value of a dim expression, in magnitude

# ---- CUDA launch limits (compute capability 9.0) ----------------------------------------------------
GRID_MAX = (2**31 - 1, 65535, 65535)
BLOCK_MAX = (1024, 1024, 64)
THREADS_PER_BLOCK_MAX = 1024
SHARED_MAX_BYTES = 232448            # dynamic shared memory per block: the H100 opt-in maximum (227 KiB)
                                     # (static + dynamic shared memory of a launch together, too)
LOCAL_MAX_BYTES = 512 << 10          # local memory per thread (the CUDA limit)
REGISTERS_PER_THREAD_MAX = 255       # the most registers a thread may have (.maxnreg above it is refused)

# ---- compiled PTX -----------------------------------------------------------------------------------
# Bounds on what a candidate's PTX may declare, far above the registry's (the largest PTX 266 KB, the
# most virtual registers of a module 6 866): refused before the prover or the emulator reads it.
PTX_MAX_BYTES = 8 << 20
PTX_MAX_REGISTERS = 1 << 18          # virtual registers declared (.reg), in kernels and inline asm together

# ---- the emulator's step budget ---------------------------------------------------------------------
# The budget counts what costs time: an issue step to n threads costs 1 + n // STEP_THREADS, a batch
# of blocks BATCH_STEPS more (on one core a unit takes about 15 us at any batch size). The registry's
# kernels spend at most 2.1 per (thread + element) and 1.7% of their budget on their CPU cases
# (bench/results/step_budget.txt). A hang stops after 50 000 units (about a second) on a small case,
# after about 1.5 M (half a minute) on the largest CPU case, and no launch runs past the cap.
STEP_THREADS = 4096
BATCH_STEPS = 64
STEPS_PER_UNIT = 8                   # budget per thread and per buffer element of the case
STEPS_FLOOR = 50_000                 # every launch may spend at least this much (under a second)
STEPS_CAP = 2_000_000                # and never more than this (about half a minute)


def geometry_problems(grid, block, shared: int) -> list[str]:
    """Why a launch of this geometry is outside the CUDA limits (empty if it is inside)."""
    why = []
    for axis, n, hi in zip("xyz", grid, GRID_MAX):
        if not 1 <= n <= hi:
            why.append(f"grid.{axis} = {n} is outside the CUDA limit [1, {hi}]")
    for axis, n, hi in zip("xyz", block, BLOCK_MAX):
        if not 1 <= n <= hi:
            why.append(f"block.{axis} = {n} is outside the CUDA limit [1, {hi}]")
    threads = block[0] * block[1] * block[2]
    if not why and threads > THREADS_PER_BLOCK_MAX:
        why.append(f"{threads} threads per block exceed the CUDA limit of {THREADS_PER_BLOCK_MAX}")
    if not 0 <= shared <= SHARED_MAX_BYTES:
        why.append(f"{shared} bytes of dynamic shared memory exceed the limit of {SHARED_MAX_BYTES} (227 KiB)")
    return why


def step_budget(threads: int, elements: int) -> int:
    """Issue steps the emulator may spend on one launch of `threads` threads over buffers of
    `elements` elements in all: generous for any real kernel, small enough that a hang fails fast."""
    return min(STEPS_CAP, STEPS_FLOOR + STEPS_PER_UNIT * (int(threads) + int(elements)))
