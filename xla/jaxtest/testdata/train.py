"""A real JAX training loop for xla/jaxtest and its benchmark: an MLP
regression on fixed synthetic data, with four jitted functions (init,
train step with value_and_grad and SGD, eval loss, predict), run for
--steps steps. Prints one line "JAXTEST_TRAIN <json>": JAX's own cache
events, keys and hits (jaxhook), the final parameters' SHA-256 and the
losses as exact hex floats (bit-identical runs give identical text), and
the seconds from the script's start to the end of the first step.

Sizes: --layers and --width set the compile cost (the benchmark uses a
deep net whose compile takes seconds; the tests a small one).

Python is only the test's hand on JAX; nothing here is product code.
"""
import time

t0 = time.monotonic()

import argparse
import hashlib
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxhook

ap = argparse.ArgumentParser()
ap.add_argument("--layers", type=int, default=3)
ap.add_argument("--width", type=int, default=32)
ap.add_argument("--steps", type=int, default=5)
ap.add_argument("--summary", action="store_true", help="print one line for people instead of the JSON")
ap.add_argument("--variants", type=int, default=0, help="after training, compile and run this many more distinct jits (one cache entry each)")
args = ap.parse_args()

IN, OUT, BATCH = 16, 4, 64


@jax.jit
def init(key):
    params = []
    d = IN
    for i in range(args.layers):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (d, args.width), jnp.float32) / jnp.sqrt(d), jnp.zeros((args.width,), jnp.float32)))
        d = args.width
    key, k = jax.random.split(key)
    params.append((jax.random.normal(k, (d, OUT), jnp.float32) / jnp.sqrt(d), jnp.zeros((OUT,), jnp.float32)))
    return params


def forward(params, x):
    # Unrolled over the layers: a deeper net is a bigger program to compile.
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads)
    return params, loss


eval_loss = jax.jit(loss_fn)
predict = jax.jit(forward)

rng = np.random.default_rng(0)
x = jnp.asarray(rng.standard_normal((BATCH, IN), dtype=np.float32))
y = jnp.asarray(rng.standard_normal((BATCH, OUT), dtype=np.float32))

params = init(jax.random.PRNGKey(0))
losses = []
first_step = None
for step in range(args.steps):
    params, loss = train_step(params, x, y)
    loss.block_until_ready()
    if first_step is None:
        first_step = time.monotonic() - t0
    losses.append(float(loss))
final = float(eval_loss(params, x, y))
pred = predict(params, x)

# Distinct programs, each its own cache entry, written one after another:
# a process that keeps writing entries for a while.
variant_sum = 0.0
for i in range(args.variants):
    f = jax.jit(lambda v, i=i: jnp.sum(jnp.tanh(v * (i + 1)) + i))
    variant_sum += float(f(x))

h = hashlib.sha256()
for leaf in jax.tree_util.tree_leaves(params) + [pred]:
    h.update(np.asarray(leaf).tobytes())

if args.summary:
    hits = sum(1 for k in jaxhook.keys if k["hit"])
    print("first step after %.2f s; JAX's persistent cache: %d hits, %d misses; loss %.6f -> %.6f"
          % (first_step, hits, len(jaxhook.keys) - hits, losses[0], final), flush=True)
    raise SystemExit(0)

print(
    "JAXTEST_TRAIN "
    + json.dumps(
        {
            "jax": jax.__version__,
            "events": jaxhook.events,
            "keys": jaxhook.keys,
            "losses": [v.hex() for v in losses],
            "final_loss": final.hex(),
            "params_sha256": h.hexdigest(),
            "variant_sum": variant_sum.hex(),
            "first_step_s": first_step,
            "total_s": time.monotonic() - t0,
            "cache_dir": os.environ.get("JAX_COMPILATION_CACHE_DIR", ""),
            "enable_xla_caches": os.environ.get("JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES", ""),
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
        },
        sort_keys=True,
    ),
    flush=True,
)
