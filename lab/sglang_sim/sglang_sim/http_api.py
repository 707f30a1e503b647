"""SGLang's HTTP API with SIMULATED generation (deterministic words, no model).

JSON shapes follow sglang.srt.entrypoints (native /generate, /get_model_info, ...) and its
OpenAI-compatible routes; errors follow FastAPI/uvicorn (404 detail, 401 Unauthorized, bare
500 "Internal Server Error" after an "Exception in ASGI application" traceback). /v1/loads has
the shape of SGLang 0.5.x's load endpoint (sglang/srt/entrypoints/v1_loads.py), counted from the
simulated scheduler: at most max_running_requests generations run at once, the rest wait.
A generation takes the time of sglang_sim.throughput's SIMULATED model (tp, speculative algorithm and
budget, GPU class, requests running, the slow fault). Native /generate streams with "stream": true
as SGLang does: server-sent events "data: {json}" (text and completion_tokens cumulative), one per
decode step, then "data: [DONE]".
"""

import datetime
import hashlib
import json
import math
import random
import threading
import time
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import SIMULATED_SGLANG_VERSION, failures, log, metrics, throughput
from .args import public_args

VOCABULARY = (
    "the",
    "model",
    "tree",
    "draft",
    "token",
    "verify",
    "accept",
    "branch",
    "cache",
    "layer",
    "state",
    "batch",
    "serve",
    "signal",
    "stream",
    "budget",
    "simulated",
    "answer",
    "path",
    "node",
)
DEFAULT_MAX_NEW_TOKENS = 128
OPENAI_DEFAULT_MAX_TOKENS = 16
CHAT_TEMPLATE_TOKENS = 9


def simulated_words(prompt, count):
    """count words, the same for the same prompt: prompt words mixed with a fixed vocabulary."""
    pool = [w.strip(".,;:!?\"'()").lower() for w in prompt.split()]
    pool = [w for w in pool if w.isalpha()] + list(VOCABULARY)
    seed = hashlib.sha256(prompt.encode("utf-8")).digest()
    return [pool[(seed[i % len(seed)] + 7 * i) % len(pool)] for i in range(count)]


def count_tokens(text):
    return max(1, len(text.split()))


class SimState:  # pylint: disable=too-few-public-methods,too-many-instance-attributes
    """What the handlers read: the server args, the plan numbers, the fault, the time scale, and
    the simulated scheduler's counters (running and waiting generations, HTTP requests in flight)."""

    def __init__(
        self, args, model_cfg, context_length, fault, time_scale, max_running_requests=None, generate_s=None, compute_cap="", slow_share=0.0, noise=(0.0, 0.0)
    ):
        # pylint: disable=too-many-arguments,too-many-positional-arguments
        self.args = args
        self.model_cfg = model_cfg
        self.context_length = context_length
        self.fault = fault
        self.time_scale = time_scale
        self.model_id = args.served_model_name or args.model_path
        self.max_running_requests = max_running_requests or args.max_running_requests or 48
        # seconds every generation takes when set (SGLANG_SIM_GENERATE_S); else per token
        self.generate_s = generate_s
        # the throughput model's inputs: the GPU class (nvidia-smi's compute capability) and the slow fault's share
        self.compute_cap = compute_cap
        self.slow_share = slow_share
        # SIMULATED run-to-run noise (docs/dev/lab.md): this process's speed, drawn once, and each request's spread
        self._rng = random.Random()
        self.process_speed = math.exp(self._rng.gauss(0.0, noise[0])) if noise[0] else 1.0
        self.request_noise = noise[1]
        self.draining = False
        self._lock = threading.Condition()
        self.running = 0
        self.waiting = 0
        self.in_flight = 0
        self.total_tokens = 0
        # GET /metrics with --enable-metrics (sglang_sim.metrics)
        self.metrics = metrics.Recorder()

    def request_started(self):
        with self._lock:
            self.in_flight += 1

    def request_finished(self):
        with self._lock:
            self.in_flight -= 1
            self._lock.notify_all()

    def wait_idle(self, timeout):
        """True once no request is in flight (False if timeout passed first)."""
        with self._lock:
            return self._lock.wait_for(lambda: self.in_flight <= 0, timeout)

    def generation_slot(self, tokens):
        """Blocks while max_running_requests generations run, as SGLang's waiting queue does; returns
        (running, waiting) at the moment this generation got its slot (running counts it)."""
        with self._lock:
            self.waiting += 1
            self._lock.wait_for(lambda: self.running < self.max_running_requests)
            self.waiting -= 1
            self.running += 1
            self.total_tokens += tokens
            return self.running, self.waiting

    def generation_done(self, tokens):
        with self._lock:
            self.running -= 1
            self.total_tokens -= tokens
            self._lock.notify_all()

    def rate(self, running=1, prompt=None, noisy=True):
        """The SIMULATED decode speed of one request while `running` generations run: its text's accept length, this
        process's speed and the request's own noise (noisy=False: the model's own, as /get_server_info reports it)."""
        args = self.args
        speed = 1.0
        if noisy:
            speed = self.process_speed * (math.exp(self._rng.gauss(0.0, self.request_noise)) if self.request_noise else 1.0)
        return throughput.rate(
            args.tp_size,
            args.speculative_algorithm,
            args.speculative_ddtree_budget,
            self.compute_cap,
            running=running,
            slow_share=self.slow_share,
            text=throughput.text_factor(prompt),
            speed=speed,
        )

    def load(self):
        """One DP rank's core load fields, as LoadSnapshot.to_dict(include={"core"}) names them."""
        with self._lock:
            running, waiting, tokens = self.running, self.waiting, self.total_tokens
        capacity = max(self.context_length or 0, 1)
        return {
            "timestamp": time.time(),
            "dp_rank": 0,
            "num_running_reqs": running,
            "num_waiting_reqs": waiting,
            "num_waiting_uncached_tokens": 0,
            "num_used_tokens": tokens,
            "num_total_tokens": tokens,
            "num_active_tokens": tokens,
            "num_prealloc_ready_tokens": 0,
            "max_total_num_tokens": capacity,
            "max_running_requests": self.max_running_requests,
            "token_usage": round(tokens / capacity, 4),
            "gen_throughput": 0.0,
            "cache_hit_rate": 0.0,
            "utilization": round(running / self.max_running_requests, 4),
            "total_prefill_uncached_tokens": 0,
            "total_prefill_busy_us": 0,
        }


class Handler(BaseHTTPRequestHandler):
    """Routes of SGLang's HTTP server."""

    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""
    sim: SimState = None

    # --- plumbing -------------------------------------------------------------------------
    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        """Silenced: access lines are written by _send in uvicorn's format."""

    def handle(self):
        """A client that hangs up (one that stops reading a stream at data: [DONE] resets the
        connection) is no error to print, as with uvicorn."""
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send(self, status, body=b"", content_type="application/json"):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        log.access(self.client_address, self.requestline, status, HTTPStatus(status).phrase)

    def _json(self, obj, status=200):
        self._send(status, json.dumps(obj).encode("utf-8"))

    def _read_chunked(self):
        """A request body sent with Transfer-Encoding: chunked (smg forwards requests so, without a length), as
        uvicorn reads it: size lines in hex, each chunk and its CRLF, up to the zero-size chunk and the trailers."""
        parts = []
        while True:
            size = int(self.rfile.readline(1024).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def _body(self):
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            raw = self._read_chunked()
        else:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return None

    def _authorized(self, path):
        key = self.sim.args.api_key
        if key is None or path == "/health":
            return True
        return self.headers.get("Authorization", "") == f"Bearer {key}"

    def _route(self, routes):
        self.sim.request_started()
        try:
            self._dispatch(routes)
        finally:
            self.sim.request_finished()

    def _dispatch(self, routes):
        path = self.path.split("?", 1)[0]
        if self.sim.draining:
            # shutting down: the listener is closed; a request on a kept-alive connection gets a
            # 503 and the connection is closed, so a client (or router) goes elsewhere
            self.close_connection = True
            self._send(503, b"Service Unavailable", "text/plain; charset=utf-8")
            return
        if not self._authorized(path):
            self._json({"error": "Unauthorized"}, 401)
            return
        handler = routes.get(path)
        if handler is None:
            other = self.GET_ROUTES if routes is not self.GET_ROUTES else self.POST_ROUTES
            if path in other:
                self._json({"detail": "Method Not Allowed"}, 405)
            else:
                self._json({"detail": "Not Found"}, 404)
            return
        handler(self)

    def do_GET(self):  # pylint: disable=invalid-name
        self._route(self.GET_ROUTES)

    def do_POST(self):  # pylint: disable=invalid-name
        self._route(self.POST_ROUTES)

    # --- generation -----------------------------------------------------------------------
    def _generate_words(self, prompt, max_new_tokens, on_step=None):
        """Runs the simulated scheduler; None after logging the traceback when the fault is on. With
        on_step, called after each decode step with the tokens generated so far (a stream)."""
        if self.sim.fault == "generate_fails":
            frames, exc = failures.generate_request("SIMULATED fault generate_fails")
            log.uvicorn("ERROR", "Exception in ASGI application")
            log.error(log.traceback_text(frames, exc))
            return None
        prompt_tokens = count_tokens(prompt)
        tokens = prompt_tokens + max_new_tokens
        running, waiting = self.sim.generation_slot(tokens)
        try:
            log.info(
                f"Prefill batch, #new-seq: 1, #new-token: {prompt_tokens}, #cached-token: 0, token usage: 0.00, "
                f"#running-req: {running - 1}, #queue-req: {waiting}, ",
                rank=0,
            )
            # the speed of the moment the slot was granted, for the whole generation
            rate = self.sim.rate(running, prompt)
            started = time.monotonic()
            self._decode(prompt_tokens, max_new_tokens, rate, on_step)
            elapsed = time.monotonic() - started
            # the simulated prefill is the time to the first token (all of it when every generation takes generate_s)
            prefill = throughput.prefill_s(prompt_tokens, self.sim.args.tp_size) * self.sim.time_scale
            ttft = elapsed if self.sim.generate_s is not None else min(elapsed, prefill)
            self.sim.metrics.observe(prompt_tokens, max_new_tokens, ttft, elapsed, rate, streaming=on_step is not None)
            # the unscaled rate, so logs read the same at any SGLANG_SIM_TIME_SCALE
            log.info(
                f"Decode batch, #running-req: {running}, #token: {tokens}, token usage: 0.00, "
                f"accept len: {rate.accept_length:.2f}, accept rate: 0.80, cuda graph: {not self.sim.args.disable_cuda_graph}, "
                f"gen throughput (token/s): {rate.tokens_per_s:.2f}, #queue-req: {waiting}, ",
                rank=0,
            )
        finally:
            self.sim.generation_done(tokens)
        return simulated_words(prompt, max_new_tokens)

    def _decode(self, prompt_tokens, max_new_tokens, rate, on_step):
        """Sleeps through prefill and the decode steps (SGLANG_SIM_GENERATE_S instead, when set); each
        step's end is kept on an absolute schedule, so short steps do not drift by the sleeps' own overhead."""
        start = time.monotonic()
        if self.sim.generate_s is not None:
            time.sleep(self.sim.generate_s)
            if on_step:
                on_step(max_new_tokens)
            return
        scale = self.sim.time_scale
        first_at = throughput.prefill_s(prompt_tokens, self.sim.args.tp_size) * scale
        steps = throughput.decode_steps(max_new_tokens, rate.accept_length)
        if on_step is None:
            time.sleep(max(0.0, first_at + len(steps) * rate.step_s * scale))
            return
        for step, done in enumerate(steps, 1):
            wait = start + first_at + step * rate.step_s * scale - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            on_step(done)

    def _fail_500(self):
        self._send(500, b"Internal Server Error", "text/plain; charset=utf-8")

    def _usage(self, prompt_tokens, completion_tokens):
        return {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
            "prompt_tokens_details": None,
        }

    def generate(self):
        body = self._body()
        # as SGLang's GenerateReqInput: text or input_ids, either may be null (smg sends the token ids it made with the
        # model's tokenizer, and "text": null)
        text = body.get("text") if isinstance(body, dict) else None
        input_ids = body.get("input_ids") if isinstance(body, dict) else None
        if not isinstance(text, str) and not isinstance(input_ids, list):
            self._json({"error": {"message": "Either text, input_ids or input_embeds should be provided."}}, 400)
            return
        prompt = text if isinstance(text, str) else " ".join(map(str, input_ids))
        sampling = body.get("sampling_params") or {}
        max_new = int(sampling.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS))
        if body.get("stream"):
            self._generate_stream(prompt, max_new)
            return
        start = time.time()
        words = self._generate_words(prompt, max_new)
        if words is None:
            self._fail_500()
            return
        self._json(
            {
                "text": " ".join(words),
                "meta_info": {
                    "id": uuid.uuid4().hex,
                    "finish_reason": {"type": "length", "length": max_new},
                    "prompt_tokens": count_tokens(prompt),
                    "weight_version": "default",
                    "completion_tokens": max_new,
                    "cached_tokens": 0,
                    "e2e_latency": round(time.time() - start, 4),
                },
            }
        )

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _generate_stream(self, prompt, max_new):
        """SGLang's native stream: a server-sent event per decode step, text and completion_tokens
        cumulative, then data: [DONE]; chunked, so the connection stays open for the next request."""
        start = time.time()
        request_id = uuid.uuid4().hex
        prompt_tokens = count_tokens(prompt)
        words = simulated_words(prompt, max_new)
        started = []

        def begin():
            # headers only once the first token is there, so that a failure before it is a plain 500
            if not started:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                started.append(True)

        def on_step(done):
            begin()
            finish = {"type": "length", "length": max_new} if done >= max_new else None
            event = {
                "text": " ".join(words[:done]),
                "output_ids": list(range(done)),
                "meta_info": {
                    "id": request_id,
                    "finish_reason": finish,
                    "prompt_tokens": prompt_tokens,
                    "weight_version": "default",
                    "completion_tokens": done,
                    "cached_tokens": 0,
                    "e2e_latency": round(time.time() - start, 4),
                },
            }
            self._chunk(b"data: " + json.dumps(event, separators=(",", ":")).encode("utf-8") + b"\n\n")

        try:
            if self._generate_words(prompt, max_new, on_step) is None:
                self._fail_500()
                return
        except (BrokenPipeError, ConnectionResetError):
            # the client went away mid-stream: SGLang aborts the request; the slot is already free
            self.close_connection = True
            log.access(self.client_address, self.requestline, 200, "OK")
            return
        begin()  # max_new_tokens 0: no decode step, an empty stream
        # the last event and the terminating zero chunk in one write: a client that reads up to [DONE]
        # and closes finds nothing unread
        done = b"data: [DONE]\n\n"
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
        self.wfile.flush()
        log.access(self.client_address, self.requestline, 200, "OK")

    def completions(self):
        body = self._body() or {}
        prompt = body.get("prompt", "")
        prompt = prompt if isinstance(prompt, str) else " ".join(map(str, prompt))
        max_tokens = int(body.get("max_tokens") or OPENAI_DEFAULT_MAX_TOKENS)
        words = self._generate_words(prompt, max_tokens)
        if words is None:
            self._fail_500()
            return
        self._json(
            {
                "id": uuid.uuid4().hex,
                "object": "text_completion",
                "created": int(time.time()),
                "model": self.sim.model_id,
                "choices": [{"index": 0, "text": " ".join(words), "logprobs": None, "finish_reason": "length", "matched_stop": None}],
                "usage": self._usage(count_tokens(prompt), max_tokens),
            }
        )

    def chat_completions(self):
        body = self._body() or {}
        messages = body.get("messages") or []
        prompt = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_NEW_TOKENS)
        words = self._generate_words(prompt, max_tokens)
        if words is None:
            self._fail_500()
            return
        message = {"role": "assistant", "content": " ".join(words), "reasoning_content": None, "tool_calls": None}
        self._json(
            {
                "id": uuid.uuid4().hex,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.sim.model_id,
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "length", "matched_stop": None}],
                "usage": self._usage(count_tokens(prompt) + CHAT_TEMPLATE_TOKENS, max_tokens),
            }
        )

    # --- metadata -------------------------------------------------------------------------
    def health(self):
        self._send(200)

    def health_generate(self):
        if self._generate_words("health check", 1) is None:
            self._send(503)
        else:
            self._send(200)

    def models(self):
        self._json(
            {
                "object": "list",
                "data": [
                    {
                        "id": self.sim.model_id,
                        "object": "model",
                        "created": int(time.time()),
                        "owned_by": "sglang",
                        "root": self.sim.model_id,
                        "parent": None,
                        "max_model_len": self.sim.context_length,
                    }
                ],
            }
        )

    def model_info(self):
        cfg = self.sim.model_cfg
        self._json(
            {
                "model_path": self.sim.args.model_path,
                "tokenizer_path": self.sim.args.tokenizer_path or self.sim.args.model_path,
                "is_generation": True,
                "preferred_sampling_params": None,
                "weight_version": "default",
                "has_image_understanding": False,
                "has_audio_understanding": False,
                "model_type": cfg.get("model_type"),
                "architectures": cfg.get("architectures"),
            }
        )

    def server_info(self):
        info = public_args(self.sim.args)
        rate = self.sim.rate(noisy=False)
        info.update(
            {
                "context_length": self.sim.context_length,
                "version": SIMULATED_SGLANG_VERSION,
                "simulated": True,
                "internal_states": [{"last_gen_throughput": round(rate.tokens_per_s, 2), "avg_spec_accept_length": round(rate.accept_length, 2)}],
            }
        )
        self._json(info)

    def loads(self):
        """SGLang 0.5.x's /v1/loads (JSON only): per DP rank; ?include=core keeps the core fields
        (all the simulator has), ?dp_rank=N filters."""
        query = dict(part.partition("=")[::2] for part in self.path.partition("?")[2].split("&") if part)
        loads = [self.sim.load()]
        if query.get("dp_rank") not in (None, "") and query["dp_rank"] != "0":
            loads = []
        self._json(
            {
                "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                "version": SIMULATED_SGLANG_VERSION,
                "accelerator": None,
                "num_accelerators": self.sim.args.tp_size,
                "loads": loads,
            }
        )

    def prometheus(self):
        """SGLang's /metrics: only with --enable-metrics (else 404, as SGLang mounts it only then); one process, so
        every rank label is 0 and the engine is "unified" (no prefill/decode split)."""
        if not self.sim.args.enable_metrics:
            self._json({"detail": "Not Found"}, 404)
            return
        labels = {"model_name": self.sim.model_id, "engine_type": "unified", "tp_rank": 0, "pp_rank": 0, "moe_ep_rank": 0}
        self._send(200, self.sim.metrics.render(labels, self.sim.load()).encode("utf-8"), "text/plain; version=0.0.4; charset=utf-8")

    GET_ROUTES = {
        "/health": health,
        "/health_generate": health_generate,
        "/v1/models": models,
        "/get_model_info": model_info,
        "/model_info": model_info,
        "/get_server_info": server_info,
        "/server_info": server_info,
        "/v1/loads": loads,
        "/metrics": prometheus,
    }
    POST_ROUTES = {"/generate": generate, "/v1/completions": completions, "/v1/chat/completions": chat_completions}


class SimHTTPServer(ThreadingHTTPServer):
    """One thread per request, like uvicorn's concurrency for a health poller plus a generation."""

    daemon_threads = True
    # as uvicorn (asyncio) does on Linux: a restart must not trip over TIME_WAIT, a listener still refuses
    allow_reuse_address = True


def make_server(sim, host, port):
    """Binds (raises OSError like uvicorn would hit) and returns the server, not yet serving."""
    handler = type("BoundHandler", (Handler,), {"sim": sim})
    server = SimHTTPServer((host, port), handler)
    server.sim = sim
    return server
