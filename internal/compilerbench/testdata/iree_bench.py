"""IREE's side of internal/compilerbench: one program, one thread count.

Reads a job (JSON, the same fields as the Go side's job), compiles the
StableHLO text for llvm-cpu with IREE's compiler API in this process
(timed), loads the compiled module into a runtime context (the warm start
from a compiled .vmfb on disk, timed), runs main per the job's policy
(each run: the call plus copying every result to the host) and writes the
results as .npy files and a report JSON. Python only drives IREE.
"""
import json
import os
import sys
import time

import numpy as np
import iree.compiler as ireec
import iree.runtime as ireert


def main():
    job = json.load(open(sys.argv[1]))
    rep = {"compile_s": -1, "warm_s": -1, "runs_s": [], "outputs": []}
    try:
        run(job, rep)
    except Exception as e:  # reported, the Go side marks the cell
        rep["err"] = f"{type(e).__name__}: {e}"[:2000]
    json.dump(rep, open(job["report"], "w"))


def run(job, rep):
    text = open(job["path"]).read()
    vmfb = os.path.join(job["dir"], "module.vmfb")
    t0 = time.perf_counter()
    blob = ireec.compile_str(
        text,
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=host"],
    )
    rep["compile_s"] = time.perf_counter() - t0
    with open(vmfb, "wb") as f:
        f.write(blob)
    del blob

    # The task executor's worker count: one group per thread.
    ireert.flags.parse_flags(f"--task_topology_max_group_count={job['threads']}")
    config = ireert.Config("local-task")
    args_host = [np.load(p) for p in job["inputs"]]

    t0 = time.perf_counter()
    with open(vmfb, "rb") as f:
        data = f.read()
    vm_module = ireert.VmModule.copy_buffer(config.vm_instance, data)
    ctx = ireert.SystemContext(config=config)
    ctx.add_vm_module(vm_module)
    fn = ctx.modules[vm_module.name]["main"]
    rep["warm_s"] = time.perf_counter() - t0

    args = [ireert.asdevicearray(config.device, a) for a in args_host]

    def once():
        r = fn(*args)
        if not isinstance(r, (tuple, list)):
            r = (r,)
        return [np.asarray(x.to_host()) for x in r]

    t0 = time.perf_counter()
    outs = once()
    warm_run = time.perf_counter() - t0
    pol = dict(job["policy"])
    # As child_test.go's policy.forWarmup: a slow program gets exactly
    # slow_runs timed runs.
    if pol.get("slow_runs", 0) > 0 and pol.get("slow_s", 0) > 0 and warm_run >= pol["slow_s"]:
        pol["min_runs"] = pol["max_runs"] = pol["slow_runs"]
        pol["min_total_s"] = 0.0
    total = 0.0
    while len(rep["runs_s"]) < pol["max_runs"] and (
        len(rep["runs_s"]) < pol["min_runs"] or total < pol["min_total_s"]
    ):
        t0 = time.perf_counter()
        outs = once()
        d = time.perf_counter() - t0
        rep["runs_s"].append(d)
        total += d
    for i, o in enumerate(outs):
        p = os.path.join(job["dir"], f"out{i}.npy")
        # np.array, not np.ascontiguousarray: the latter makes a 0-d
        # result (a loss) 1-d.
        np.save(p, np.array(o, order="C"))
        rep["outputs"].append(p)
    rep["note"] = f"iree {ireert.version.VERSION if hasattr(ireert, 'version') else ''}".strip()


if __name__ == "__main__":
    main()
