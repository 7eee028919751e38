"""A small JAX program for the JAX-through-the-wrapper test (jax_test.go).

It jits a few functions on fixed NumPy inputs on the platform that
JAX_PLATFORMS names (a plugin loaded through PJRT_NAMES_AND_LIBRARY_PATHS)
and prints one JSON object: JAX's version, the devices' platform, and per
function the SHA-256 of its output's raw bytes (so two processes can be
compared bit for bit) and the time of its first call. Inputs are NumPy arrays, not jnp ones, so the only
compiles are the jitted functions' own.
"""

import hashlib
import json
import sys
import time

import numpy as np

import jax
import jax.numpy as jnp

# JAX's own persistent cache must stay off: a hit there would skip the
# PJRT compile the test counts.
jax.config.update("jax_enable_compilation_cache", False)


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def softmax_rows(x):
    return jax.nn.softmax(x, axis=-1)


def reduce_mix(x):
    return jnp.sum(jnp.sin(x) * jnp.cos(x), axis=0) + jnp.max(x)


def int_ops(a, b):
    return (a * 3 + b) // 7 - jnp.cumsum(a, axis=1)


def main():
    rng = np.random.default_rng(1234)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w1 = rng.standard_normal((32, 64)).astype(np.float32)
    w2 = rng.standard_normal((64, 8)).astype(np.float32)
    a = rng.integers(-1000, 1000, size=(8, 12)).astype(np.int32)
    b = rng.integers(-1000, 1000, size=(8, 12)).astype(np.int32)
    programs = [
        ("mlp", mlp, (x, w1, w2)),
        ("softmax_rows", softmax_rows, (x,)),
        ("reduce_mix", reduce_mix, (x,)),
        ("int_ops", int_ops, (a, b)),
    ]
    results = []
    for name, fn, args in programs:
        start = time.perf_counter()
        out = np.asarray(jax.block_until_ready(jax.jit(fn)(*args)))
        # The first call's time: tracing, the PJRT compile (or the
        # cache's load) and one run.
        first_ms = (time.perf_counter() - start) * 1000
        results.append({
            "name": name,
            "dtype": str(out.dtype),
            "shape": list(out.shape),
            "sha256": hashlib.sha256(out.tobytes()).hexdigest(),
            "first_call_ms": round(first_ms, 1),
        })
    json.dump({
        "jax": jax.__version__,
        "platform": jax.devices()[0].platform,
        "results": results,
    }, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
