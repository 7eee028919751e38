"""One process of a real two-process JAX job on loopback, for xla/jaxtest:
jax.distributed with its coordinator at argv[1], process argv[2] of
argv[3]; one jit over a mesh spanning every process's CPU devices. Prints
one line "JAXTEST_DIST <json>": the process index JAX reports, the result,
JAX's own cache events, and every persistent-cache key JAX computed, taken
from JAX (its log_persistent_cache_hit/miss calls), with hit or miss.

Python is only the test's hand on JAX; nothing here is product code.
"""
import json
import sys

import jax

coordinator, process_id, num_processes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

# JAX on CPU needs a collectives implementation to run one computation
# across processes; gloo ships in jaxlib. The option moved over releases.
try:
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
except Exception:  # an older or newer JAX without the option: its default
    pass
try:
    jax.config.update("jax_cpu_enable_gloo_collectives", True)
except Exception:
    pass

jax.distributed.initialize(
    coordinator_address=coordinator,
    num_processes=num_processes,
    process_id=process_id,
    initialization_timeout=300,
)

import numpy as np
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxhook

devices = np.array(jax.devices())
mesh = Mesh(devices, ("x",))
sharding = NamedSharding(mesh, P("x"))
n = len(jax.devices())
local = len(jax.local_devices())
# Each process holds rows [4*i, 4*i+4) of arange(4*n) per local device.
start = 4 * local * jax.process_index()
local_rows = np.arange(start, start + 4 * local, dtype=np.int32)
x = jax.make_array_from_process_local_data(sharding, local_rows, (4 * n,))


@jax.jit
def step(x):
    y = x * 3 + 1
    return jnp.sum(y * y), jnp.max(y)


s, m = step(x)
print(
    "JAXTEST_DIST "
    + json.dumps(
        {
            "jax": jax.__version__,
            "process_index": jax.process_index(),
            "process_count": jax.process_count(),
            "devices": n,
            "sum": int(s),
            "max": int(m),
            "events": jaxhook.events,
            "keys": jaxhook.keys,
            "parts": jaxhook.parts,
        },
        sort_keys=True,
    ),
    flush=True,
)
jax.distributed.shutdown()
