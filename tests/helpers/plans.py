"""Engine plans the tests compare with the safe one."""
from kreg.engine import plan as P


def fastest_plan(dev):
    """Per op the registry's non-safe variant where one exists (unsafe, or vendor on the GPU outside the
    decode graph, as the fastest profile does), else safe."""
    from kreg.registry.catalog import load_catalog
    cat, names = load_catalog(), {}
    for op in P.ENGINE_OPS:
        alts = sorted(e.name for e in cat.entries if e.op == op and set(e.variant.types.values()) <= {"bf16"}
                      and e.variant.safety in (("unsafe", "vendor") if dev.kind == "gpu" else ("unsafe",))
                      and P._not_capturable(e) is None)
        if alts:
            names[op] = alts[0]
    return P.explicit(dev, "bf16", names)
