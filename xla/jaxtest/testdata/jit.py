"""Drives a real JAX for xla/jaxtest: creates the CPU backend, compiles and
runs one jit, and prints one line "JAXTEST <json>" with what the Go test
checks: versions, the result, JAX's own persistent-cache events, the XLA
options JAX put into the compile options, and the environment it saw.

Python is only the test's hand on JAX; nothing here is product code.
"""
import json
import os
import sys

import jax
import jax.numpy as jnp
import jaxlib
from jax import monitoring

events = {}


def _listen(event, **kwargs):
    events[event] = events.get(event, 0) + 1


monitoring.register_event_listener(_listen)

# Integers, so the expected result is exact on every CPU.
x = jnp.arange(8, dtype=jnp.int32)
f = jax.jit(lambda x: (x * 2 + 1, jnp.sum(x * x)))
y, s = f(x)
y.block_until_ready()

# The XLA cache options JAX sets itself (jax/_src/compiler.py
# get_compile_options), read back from the options JAX would compile with.
xla_options = {}
try:
    from jax._src import compiler

    # Each object held in a name: with jaxlib 0.12 a chained read through
    # the temporaries segfaults once they are freed.
    opts = compiler.get_compile_options(num_replicas=1, num_partitions=1)
    build = opts.executable_build_options
    d = build.debug_options
    for name in (
        "xla_gpu_kernel_cache_file",
        "xla_gpu_per_fusion_autotune_cache_dir",
        "xla_gpu_experimental_autotune_cache_mode",
        "xla_gpu_enable_llvm_module_compilation_parallelism",
    ):
        v = getattr(d, name, None)
        if v is not None:
            xla_options[name] = str(v)
except Exception as e:  # a private API: record that it moved, do not fail
    xla_options["error"] = repr(e)

print(
    "JAXTEST "
    + json.dumps(
        {
            "jax": jax.__version__,
            "jaxlib": jaxlib.__version__,
            "backend": jax.default_backend(),
            "devices": len(jax.devices()),
            "y": [int(v) for v in y],
            "sum": int(s),
            "events": events,
            "xla_options": xla_options,
            "env": {
                k: v
                for k, v in os.environ.items()
                if k == "XLA_FLAGS" or k.startswith("JAX_") or k.startswith("XLACACHE_")
            },
        },
        sort_keys=True,
    ),
    flush=True,
)
