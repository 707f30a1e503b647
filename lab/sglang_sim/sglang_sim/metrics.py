"""SGLang's Prometheus metrics, SIMULATED: GET /metrics with --enable-metrics, as SGLang serves it.

The names, types and label names are SGLang 0.5.23's (sglang/srt/observability/metrics_collector.py of the
real wheel in the lab's wheelhouse): the scheduler's gauges carry model_name, engine_type, tp_rank, pp_rank and
moe_ep_rank, the tokenizer's counters and histograms model_name and engine_type. lab/tests/test_sim_metrics.py
reads them from that source and fails on a simulated name, type or label SGLang does not have. The values come
from the simulated scheduler (requests running and waiting, tokens, the simulated speed and accept length);
nothing here measures a GPU.
"""

import threading

SCHEDULER_LABELS = ("model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank")
TOKENIZER_LABELS = ("model_name", "engine_type")
# the tokenizer's token counters and most of its histograms split streamed requests from the others
STREAMING_LABELS = TOKENIZER_LABELS + ("is_streaming",)
# SGLang's own help texts; histograms with the bucket bounds of its collector (seconds)
METRICS = (
    ("sglang:num_running_reqs", "gauge", SCHEDULER_LABELS, "The number of running requests."),
    ("sglang:num_queue_reqs", "gauge", SCHEDULER_LABELS, "The number of requests in the waiting queue."),
    ("sglang:gen_throughput", "gauge", SCHEDULER_LABELS, "The generation throughput (token/s)."),
    ("sglang:token_usage", "gauge", SCHEDULER_LABELS, "The token usage."),
    ("sglang:cache_hit_rate", "gauge", SCHEDULER_LABELS, "The prefix cache hit rate."),
    (
        "sglang:spec_accept_length",
        "gauge",
        SCHEDULER_LABELS,
        "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward).",
    ),
    ("sglang:prompt_tokens_total", "counter", STREAMING_LABELS, "Number of prefill tokens processed."),
    ("sglang:generation_tokens_total", "counter", STREAMING_LABELS, "Number of generation tokens processed."),
    ("sglang:time_to_first_token_seconds", "histogram", STREAMING_LABELS, "Histogram of time to first token in seconds."),
    ("sglang:inter_token_latency_seconds", "histogram", TOKENIZER_LABELS, "Histogram of inter-token latency in seconds."),
    ("sglang:e2e_request_latency_seconds", "histogram", STREAMING_LABELS, "Histogram of End-to-end request latency in seconds"),
)
# one set of bounds for the three histograms (SGLang's differ per histogram; the parity test checks names, types and labels)
BUCKETS = (0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 60.0, 80.0, 120.0)


def _number(value):
    return repr(float(value)) if not float(value).is_integer() else "%s.0" % int(value)


def _labels(names, values):
    return ",".join('%s="%s"' % (name, str(values[name]).replace("\\", "\\\\").replace('"', '\\"')) for name in names)


class Recorder:
    """The tokenizer's counters and histograms, fed by each finished generation; thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self.last_rate = None
        # (name, is_streaming) -> value (counters) or [bucket counts..., +Inf count, sum] (histograms); is_streaming
        # is "" for a metric without that label
        self.values = {}

    def _series(self, name, streaming):
        labels = next(names for metric, _kind, names, _help in METRICS if metric == name)
        return (name, ("true" if streaming else "false") if "is_streaming" in labels else "")

    def observe(self, prompt_tokens, generation_tokens, ttft_s, e2e_s, rate, streaming=False):
        """One finished generation: its tokens, its time to first token and end-to-end time, the rate it ran at."""
        itl_s = (e2e_s - ttft_s) / max(1, generation_tokens - 1)
        with self._lock:
            self.last_rate = rate
            for name, amount in (("sglang:prompt_tokens_total", prompt_tokens), ("sglang:generation_tokens_total", generation_tokens)):
                key = self._series(name, streaming)
                self.values[key] = self.values.get(key, 0) + amount
            for name, seconds in (
                ("sglang:time_to_first_token_seconds", ttft_s),
                ("sglang:inter_token_latency_seconds", itl_s),
                ("sglang:e2e_request_latency_seconds", e2e_s),
            ):
                counts = self.values.setdefault(self._series(name, streaming), [0] * (len(BUCKETS) + 1) + [0.0])
                for index, bound in enumerate(BUCKETS):
                    if seconds <= bound:
                        counts[index] += 1
                counts[len(BUCKETS)] += 1  # +Inf, and the count
                counts[-1] += seconds

    def render(self, labels, load):
        """The exposition text (Prometheus 0.0.4): ``labels`` gives model_name, engine_type and the ranks, ``load`` the
        scheduler's numbers (SimState.load()). A counter or histogram shows the series requests have made."""
        with self._lock:
            rate = self.last_rate
            values = {key: list(value) if isinstance(value, list) else value for key, value in self.values.items()}
        gauges = {
            "sglang:num_running_reqs": load["num_running_reqs"],
            "sglang:num_queue_reqs": load["num_waiting_reqs"],
            "sglang:gen_throughput": rate.tokens_per_s if rate else 0.0,
            "sglang:token_usage": load["token_usage"],
            "sglang:cache_hit_rate": 0.0,
            "sglang:spec_accept_length": rate.accept_length if rate else 0.0,
        }
        lines = []
        for name, kind, names, help_text in METRICS:
            lines += ["# HELP %s %s" % (name, help_text), "# TYPE %s %s" % (name, kind)]
            if kind == "gauge":
                lines.append("%s{%s} %s" % (name, _labels(names, labels), _number(gauges[name])))
                continue
            for (metric, streaming), value in sorted(values.items()):
                if metric != name:
                    continue
                series = _labels(names, dict(labels, is_streaming=streaming))
                if kind == "counter":
                    lines.append("%s{%s} %s" % (name, series, _number(value)))
                    continue
                for index, bound in enumerate(BUCKETS):
                    lines.append('%s_bucket{%s,le="%s"} %s' % (name, series, bound, _number(value[index])))
                lines.append('%s_bucket{%s,le="+Inf"} %s' % (name, series, _number(value[len(BUCKETS)])))
                lines.append("%s_count{%s} %s" % (name, series, _number(value[len(BUCKETS)])))
                lines.append("%s_sum{%s} %s" % (name, series, _number(value[-1])))
        return "\n".join(lines) + "\n"
