"""The simulator's metrics against SGLang's own: every simulated name, type and label set is one that the real
sglang 0.5.23 wheel in the lab's wheelhouse declares (sglang/srt/observability/metrics_collector.py, read as source)."""

import ast
import glob
import os
import sys
import zipfile

import pytest

LAB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(LAB, "sglang_sim"))

from sglang_sim import metrics  # noqa: E402  pylint: disable=wrong-import-position

SOURCE = "sglang/srt/observability/metrics_collector.py"
KINDS = {"Gauge": "gauge", "Counter": "counter", "Histogram": "histogram", "Summary": "summary"}


def sglang_metrics(source):
    """{name: (kind, label names)} of every metric the collectors declare. A collector's labels are the dict of the
    function that builds them (the scheduler's: model_name ... moe_ep_rank; tokenizer_metric_labels: model_name,
    engine_type) plus the names a metric adds to labels.keys() (is_streaming)."""
    tree = ast.parse(source)
    base = {}
    for function in (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)):
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "labels" and isinstance(node.value, ast.Dict):
                keys = tuple(k.value for k in node.value.keys if isinstance(k, ast.Constant))
                base["SchedulerMetricsCollector" if "tp_rank" in keys else "TokenizerMetricsCollector"] = keys
    found = {}
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in KINDS:
                keywords = {k.arg: k.value for k in node.keywords}
                if not isinstance(keywords.get("name"), ast.Constant) or "labelnames" not in keywords:
                    continue
                extra = tuple(c.value for c in ast.walk(keywords["labelnames"]) if isinstance(c, ast.Constant) and isinstance(c.value, str))
                found[keywords["name"].value] = (KINDS[node.func.id], base.get(cls.name, ()) + extra)
    return found


@pytest.fixture(scope="module", name="declared")
def fixture_declared():
    wheels = glob.glob(os.path.join(LAB, "wheelhouse", "sglang-0.5.23-*.whl"))
    if not wheels:
        pytest.skip("the lab wheelhouse has no sglang 0.5.23 wheel (lab/build-wheelhouse.sh)")
    with zipfile.ZipFile(wheels[0]) as wheel:
        return sglang_metrics(wheel.read(SOURCE).decode("utf-8"))


def test_the_source_is_read_as_sglang_declares_it(declared):
    assert declared["sglang:num_running_reqs"] == ("gauge", ("model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank"))
    assert declared["sglang:prompt_tokens_total"] == ("counter", ("model_name", "engine_type", "is_streaming"))
    assert declared["sglang:inter_token_latency_seconds"] == ("histogram", ("model_name", "engine_type"))
    assert len(declared) > 100


@pytest.mark.parametrize("name, kind, labels", [m[:3] for m in metrics.METRICS], ids=[m[0] for m in metrics.METRICS])
def test_every_simulated_metric_is_sglang_s(declared, name, kind, labels):
    assert name in declared, "%s is no metric of SGLang 0.5.23" % name
    assert (kind, tuple(labels)) == declared[name]


def test_the_exposition_names_only_declared_series():
    recorder = metrics.Recorder()

    class Rate:  # pylint: disable=too-few-public-methods
        tokens_per_s = 120.0
        accept_length = 3.5

    recorder.observe(3, 8, 0.05, 0.4, Rate(), streaming=True)
    load = {"num_running_reqs": 1, "num_waiting_reqs": 2, "token_usage": 0.25}
    labels = {"model_name": "m", "engine_type": "unified", "tp_rank": 0, "pp_rank": 0, "moe_ep_rank": 0}
    lines = [line for line in recorder.render(labels, load).splitlines() if not line.startswith("#")]
    names = {m[0] for m in metrics.METRICS}
    for line in lines:
        sample = line.split("{", 1)[0]
        base = next((sample[: -len(suffix)] for suffix in ("_bucket", "_count", "_sum") if sample.endswith(suffix) and sample[: -len(suffix)] in names), sample)
        assert base in names, line
    assert 'sglang:num_queue_reqs{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"} 2.0' in lines
    assert 'sglang:generation_tokens_total{model_name="m",engine_type="unified",is_streaming="true"} 8.0' in lines
    assert 'sglang:inter_token_latency_seconds_bucket{model_name="m",engine_type="unified",le="0.06"} 1.0' in lines
