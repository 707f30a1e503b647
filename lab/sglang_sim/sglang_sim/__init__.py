"""SIMULATED SGLang server for the ddtree.sglang lab.

Lab hosts have no GPU, so this package stands in for `python -m sglang.launch_server`:
same flags, SGLang-worded start-up and failure logs, a memory rule calibrated to the field
notes, and SGLang's HTTP API shapes with deterministic simulated text.
"""

__version__ = "0.1.0"
# what /get_server_info reports as the SGLang version of this simulated, DDTree-patched build
SIMULATED_SGLANG_VERSION = "0.5.9+ddtree.sim"
