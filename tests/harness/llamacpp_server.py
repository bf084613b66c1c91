"""Run llama.cpp's own server (the `xllamacpp` wheel) in this process until SIGTERM or SIGINT.

    python -m tests.harness.llamacpp_server --model tiny.gguf --port 18080 [--ctx 1024]
        [--parallel 2] [--alias tiny]

It answers like `llama-server` started with `--ctx-size CTX --parallel N --metrics --slots
--props --threads 1 --no-webui`: `n_ctx` per slot is CTX / N. One thread, because OpenMP
threads spin while they wait: two threads under load were 30-80 times slower on the shared CPU.
SIGTERM and SIGINT end the process at once, whatever requests are open (xllamacpp installs no
signal handler of its own).
"""

import argparse
import os
import signal
import sys
import time
from types import FrameType


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx", type=int, default=1024)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--alias", default="")
    args = parser.parse_args(argv)
    # Before xllamacpp loads libgomp: OpenMP reads these once.
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    if args.alias:
        params.model_alias = [args.alias]
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.n_threads_http = 4
    params.n_gpu_layers = 0
    params.fit_params = False
    params.warmup = False
    params.endpoint_metrics = True
    params.endpoint_slots = True
    params.endpoint_props = True
    params.ui = False
    server = xllamacpp.Server(params)

    def stop(signum: int, frame: FrameType | None) -> None:
        # Not the server's destructor: with a request open it waits for that request for ever
        # (as llama-server does after one SIGTERM). The kernel closes every socket, so a client
        # sees what a killed server does: the connection drops.
        sys.stderr.flush()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    parent = os.getppid()
    # It ends with the process that started it: a test session killed with SIGKILL leaves no
    # server behind.
    while server.listening_address and os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


if __name__ == "__main__":
    main()
