"""Prints the environment a command under `xlacache exec` is given (the
variables that matter to JAX and xlacache) as one line "JAXTEST_ENV <json>",
without importing JAX: the cheap probe before the real run."""
import json
import os

print(
    "JAXTEST_ENV "
    + json.dumps(
        {k: v for k, v in os.environ.items() if k == "XLA_FLAGS" or k.startswith("JAX_") or k.startswith("XLACACHE_")},
        sort_keys=True,
    ),
    flush=True,
)
