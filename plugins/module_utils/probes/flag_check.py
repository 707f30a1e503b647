# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The flag check's probe: asks the installed SGLang's own parser about a unit's flags.

Not imported by the module for its functions: the module sends this file's source to the
release's interpreter (``python -c``), which runs main(). So it may use only the standard
library plus the installed SGLang, in Python 3.8 syntax. The request (argv, module) comes as
JSON on stdin; the answer is one line on stdout after MARK; whatever SGLang prints goes to stderr.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import importlib
import json
import logging
import os
import re
import sys
import traceback
import warnings

MARK = "DDTREE_SGLANG_FLAG_CHECK "
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
SUMMARY = (
    "model_path",
    "served_model_name",
    "tp_size",
    "dp_size",
    "pp_size",
    "mem_fraction_static",
    "context_length",
    "max_running_requests",
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_num_draft_tokens",
    "host",
    "port",
)
QUIET_CATEGORIES = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)
# SGLang 0.5.23's start-up checks that read only the parsed flags and the platform: steps of
# ServerArgs.resolve_once() (sglang/srt/arg_groups/pipeline.py::run_resolution_pipeline), in the
# pipeline's order. The pipeline as a whole cannot run here: it imports the model's config through
# transformers and sizes pools from the GPUs' free memory, which the running service holds. A step
# that cannot run here (an import the release lacks, the model's config) is skipped and named.
STARTUP_STEPS = (
    ("sglang.srt.arg_groups.validation_hook", "validate_prefill_decode_interval"),
    ("sglang.srt.arg_groups.validation_hook", "validate_response_store"),
    ("sglang.srt.arg_groups.validation_hook", "validate_sampling_mask_max_tokens"),
    ("sglang.srt.arg_groups.platform_hook", "handle_hardware_runtime_validation"),
    ("sglang.srt.arg_groups.serving_hook", "handle_ssl_validation"),
    ("sglang.srt.arg_groups.pd_disaggregation_hook", "handle_pd_disaggregation"),
    ("sglang.srt.arg_groups.mamba_hook", "handle_mamba_backend"),
    ("sglang.srt.arg_groups.hicache_hook", "handle_hicache"),
    ("sglang.srt.arg_groups.speculative_hook", "handle_speculative_decoding"),
    ("sglang.srt.arg_groups.serving_hook", "handle_other_validations"),
)
# how SGLang's checks refuse; raised in its own argument code, anything else is "could not run here"
REFUSALS = (ValueError, AssertionError, NotImplementedError)
CHECK_FILES = ("sglang/srt/arg_groups/", "sglang/srt/server_args.py")


class ParserRefused(Exception):
    pass


def clean(text):
    return ANSI.sub("", str(text)).strip()


def plain(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return str(value)


class Capture(logging.Handler):
    def __init__(self):
        logging.Handler.__init__(self, logging.WARNING)
        self.messages = []

    def emit(self, record):
        try:
            text = record.getMessage()
        except Exception:
            text = str(record.msg)
        self.messages.append(clean(text))


def unknown_flags(parser, args):
    known = parser._option_string_actions
    found = []
    for token in args:
        if token == "--":
            break
        if not token.startswith("--") or len(token) < 3:
            continue
        name = token.split("=", 1)[0]
        if name in known:
            continue
        if parser.allow_abbrev and len([flag for flag in known if flag.startswith(name)]) == 1:
            continue
        if name not in found:
            found.append(name)
    return found


def sglang_version():
    try:
        from importlib.metadata import version

        return version("sglang")
    except Exception:
        pass
    try:
        from sglang.version import __version__

        return __version__
    except Exception:
        return None


def quietly(function, *args):
    # warnings of an import are about the environment, not about the unit's flags
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("ignore")
        return function(*args)


def refusing_frame(exc):
    """Where SGLang's own argument code refused (path:line from sglang/), or None when the error
    is not one of its checks (a missing module, a GPU call, the model's files)."""
    if not isinstance(exc, REFUSALS):
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    path = frames[-1].filename.replace(os.sep, "/")
    for marker in CHECK_FILES:
        at = path.rfind(marker)
        if at >= 0:
            return "%s:%d" % (path[at:], frames[-1].lineno)
    return None


def platform_facts(compute_capability):
    """The facts SGLang's platform context reads, for the host's NVIDIA GPUs (compute capability
    "9.0"): the probe's own torch may lack CUDA (the lab's stand-in) while the host's GPUs have it."""
    major, minor = (int(part) for part in compute_capability.split(".", 1))
    return {"is_cuda": True, "device_capability": (major, minor), "device_sm": major * 10 + minor}


def startup_checks(server_args, request, result):
    """Run STARTUP_STEPS on the record; a refusal stops at the first, as SGLang's start-up does."""
    compute_capability = request.get("compute_capability")
    if not compute_capability:
        result["checks_skipped"].append("startup: the host's GPU compute capability is unknown")
        return
    try:
        runtime = quietly(importlib.import_module, "sglang.srt.runtime_context")
        scope = runtime.override_platform(**platform_facts(compute_capability))
    except Exception as exc:
        result["checks_skipped"].append("startup: no platform override in this SGLang: %s: %s" % (type(exc).__name__, clean(exc)))
        return
    if getattr(server_args, "device", None) is None:
        # what handle_missing_default_values sets through get_device() on a host with NVIDIA GPUs
        server_args.device = "cuda"
    with scope:
        for module_name, function_name in STARTUP_STEPS:
            try:
                step = getattr(quietly(importlib.import_module, module_name), function_name)
            except Exception as exc:
                result["checks_skipped"].append("startup %s: %s: %s" % (function_name, type(exc).__name__, clean(exc)))
                continue
            try:
                step(server_args)
            except Exception as exc:
                where = refusing_frame(exc)
                if where is None:
                    result["checks_skipped"].append("startup %s: %s: %s" % (function_name, type(exc).__name__, clean(exc)))
                    continue
                result["error"] = clean(exc) or type(exc).__name__
                result["error_check"] = "%s.%s (%s)" % (module_name.rsplit(".", 1)[-1], function_name, where)
                return
            result["checks"].append("startup " + function_name)


def probe(request, result, target):
    argv = list(request["argv"])
    server_args_class = getattr(target, "ServerArgs", None)
    prepare = getattr(target, "prepare_server_args", None)
    if server_args_class is None:
        result["probe_error"] = "%s has no ServerArgs" % request["module"]
        return

    seen = {}
    original_parse_known = argparse.ArgumentParser.parse_known_args
    original_error = argparse.ArgumentParser.error
    original_exit = argparse.ArgumentParser.exit

    def parse_known_args(self, args=None, namespace=None):
        seen["parser"] = self
        seen["args"] = list(sys.argv[1:] if args is None else args)
        parsed = original_parse_known(self, args, namespace)
        seen["namespace"] = parsed[0]
        return parsed

    def error(self, message):
        seen["parser"] = self
        raise ParserRefused("%s: error: %s" % (self.prog, message))

    def parser_exit(self, status=0, message=None):
        raise ParserRefused(clean(message or "") or "the parser exited with status %s (a --help or --version flag?)" % status)

    argparse.ArgumentParser.parse_known_args = parse_known_args
    argparse.ArgumentParser.error = error
    argparse.ArgumentParser.exit = parser_exit
    resolves_later = hasattr(server_args_class, "resolve_once") and prepare is not None
    server_args = None
    try:
        try:
            from sglang.srt.plugins import load_plugins
        except ImportError:
            load_plugins = None
        if load_plugins is not None:
            load_plugins()
        result["checks"].append("argparse")
        if resolves_later:
            server_args = prepare(argv)
            result["checks"].append("server_args")
        else:
            parser = argparse.ArgumentParser(prog="sglang serve")
            server_args_class.add_cli_args(parser)
            parser.parse_args(argv)
            result["checks_skipped"].append(
                "server_args: this SGLang resolves its arguments while it builds ServerArgs (GPU memory, the model's config), which needs the host's GPUs"
            )
    except ParserRefused as exc:
        result["error"] = str(exc)
    except SystemExit as exc:
        result["error"] = "the parser exited with status %s" % exc.code
    except Exception as exc:
        result["error"] = "%s: %s" % (type(exc).__name__, clean(exc))
    finally:
        argparse.ArgumentParser.parse_known_args = original_parse_known
        argparse.ArgumentParser.error = original_error
        argparse.ArgumentParser.exit = original_exit

    if "parser" in seen:
        result["unknown_flags"] = unknown_flags(seen["parser"], seen.get("args", argv))
    namespace = seen.get("namespace")
    if result["error"] is None and namespace is not None:
        values = vars(namespace)
        for name in sorted(values):
            if name in SUMMARY or name.startswith("speculative_ddtree"):
                result["server_args"][name] = plain(values[name])
        algorithm = values.get("speculative_algorithm")
        if algorithm:
            try:
                SpeculativeAlgorithm = quietly(importlib.import_module, "sglang.srt.speculative.spec_info").SpeculativeAlgorithm
            except Exception as exc:
                result["checks_skipped"].append(
                    "speculative_algorithm: cannot import sglang.srt.speculative.spec_info: %s: %s" % (type(exc).__name__, clean(exc))
                )
            else:
                result["checks"].append("speculative_algorithm")
                try:
                    SpeculativeAlgorithm.from_string(algorithm)
                except Exception as exc:
                    result["error"] = clean(exc) or type(exc).__name__
                    result["error_flag"] = "--speculative-algorithm"
                    result["error_value"] = algorithm
    if result["error"] is None and server_args is not None and not result["unknown_flags"]:
        startup_checks(server_args, request, result)
    result["valid"] = result["error"] is None and not result["unknown_flags"]


def main():
    request = json.loads(sys.stdin.read())
    answer = os.fdopen(os.dup(1), "w")
    # whatever SGLang prints goes to stderr; stdout carries only the answer
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    result = {
        "valid": False,
        "unknown_flags": [],
        "error": None,
        "error_flag": None,
        "error_value": None,
        "error_check": None,
        "warnings": [],
        "sglang_version": None,
        "server_args": {},
        "checks": [],
        "checks_skipped": [],
        "prefix": sys.prefix,
        "probe_error": None,
    }
    result["sglang_version"] = sglang_version()
    try:
        target = quietly(importlib.import_module, request["module"])
    except BaseException as exc:
        result["probe_error"] = "cannot import %s: %s: %s" % (request["module"], type(exc).__name__, clean(exc))
        answer.write(MARK + json.dumps(result, default=str) + "\n")
        answer.flush()
        return
    capture = Capture()
    root = logging.getLogger()
    root.addHandler(capture)
    original_basic_config = logging.basicConfig

    def basic_config(*args, **kwargs):
        # prepare_server_args calls basicConfig(force=True), which drops every root handler
        original_basic_config(*args, **kwargs)
        if capture not in root.handlers:
            root.addHandler(capture)

    logging.basicConfig = basic_config
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            probe(request, result, target)
        except BaseException as exc:
            result["probe_error"] = "%s: %s" % (type(exc).__name__, clean(exc))
    logging.basicConfig = original_basic_config
    root.removeHandler(capture)
    messages = list(capture.messages)
    for item in caught:
        if issubclass(item.category, QUIET_CATEGORIES) and "sglang" not in str(item.filename):
            continue
        messages.append("%s: %s" % (item.category.__name__, clean(item.message)))
    for text in messages:
        if text and text not in result["warnings"]:
            result["warnings"].append(text)
    answer.write(MARK + json.dumps(result, default=str) + "\n")
    answer.flush()


if __name__ == "__main__":
    main()
