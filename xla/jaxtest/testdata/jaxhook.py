"""What the xla/jaxtest drivers read from JAX itself: its jax.monitoring
events, every persistent-cache key it computes with hit or miss (from its
own log_persistent_cache_hit/miss calls), and the hash of each part of
each key (its cache_key DEBUG log). Import after jax, before compiling.

Python is only the test's hand on JAX; nothing here is product code.
"""
import logging

from jax import monitoring
from jax._src import compiler

events = {}
keys = []
parts = []


def _listen(event, **kwargs):
    events[event] = events.get(event, 0) + 1


monitoring.register_event_listener(_listen)

# compiler.py calls these module functions by name for every lookup in the
# persistent cache, with the key it computed.
_hit, _miss = compiler.log_persistent_cache_hit, compiler.log_persistent_cache_miss


def _log_hit(module_name, cache_key):
    keys.append({"module": module_name, "key": cache_key, "hit": True})
    return _hit(module_name, cache_key)


def _log_miss(module_name, cache_key):
    keys.append({"module": module_name, "key": cache_key, "hit": False})
    return _miss(module_name, cache_key)


compiler.log_persistent_cache_hit = _log_hit
compiler.log_persistent_cache_miss = _log_miss


class _Parts(logging.Handler):
    """Collects "get_cache_key hash of serialized <part>: <hex>"
    (cache_key.py _log_cache_key_hash): which part differs when two keys
    do."""

    def emit(self, record):
        msg = record.getMessage()
        prefix = "get_cache_key hash of serialized "
        if msg.startswith(prefix):
            name, _, h = msg[len(prefix):].partition(": ")
            if name == "computation" or not parts:
                parts.append({})
            parts[-1][name] = h


_log = logging.getLogger("jax._src.cache_key")
_log.setLevel(logging.DEBUG)
_log.addHandler(_Parts(logging.DEBUG))
_log.propagate = False
