"""Built-in kernels: op contracts (ops/), safe and unsafe variants, shared headers (include/)."""
