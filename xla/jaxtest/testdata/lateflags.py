"""Sets XLA_FLAGS to a flag no XLA knows after importing JAX (which loads
XLA's library) and before the first backend is created, then creates it.
Prints IMPORTED, then DEVICES if the backend came up. For xla/jaxtest:
whether XLA reads XLA_FLAGS when its library loads or when a client is
created.
"""
import os

import jax

print("IMPORTED", flush=True)
os.environ["XLA_FLAGS"] = "--xla_jaxtest_no_such_flag=1"
jax.devices()
print("DEVICES", flush=True)
