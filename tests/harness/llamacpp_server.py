"""The tests' real llama.cpp server process: lexweb_dev/llamacpp.py (one copy, shared with the
demo's real servers).

    python -m tests.harness.llamacpp_server --model tiny.gguf --port 18080 [--ctx 1024]
        [--parallel 2] [--alias tiny]
"""

from lexweb_dev.llamacpp import main

if __name__ == "__main__":
    main()
