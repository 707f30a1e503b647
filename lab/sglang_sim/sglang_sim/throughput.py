"""SIMULATED decode throughput: a model, not a measurement (docs/dev/lab.md, "Throughput model (simulated)").

The time a generation takes on the lab's simulated SGLang, from what sets it on a real GPU:

    steps/s of one request       = STEP_RATE_1 * tp_size ** 0.5 / step_cost / (1 + LOAD_COST * (running - 1))
    tokens/s of one request      = steps/s * accept_length * (1 - slow_share)
    no speculative algorithm     accept 1.0, step cost 1.0
    linear (DFLASH, EAGLE, ...)  accept 3.0, step cost 1.25          (speed-up 2.4 over plain decoding)
    DDTREE, budget b             accept 3.0 * (1 + 0.1 * log2 b),    step cost 1 + VERIFY_COST[class] * b / 16

The tree accepts more tokens a step than a linear draft but verifies b nodes; what that costs
depends on the GPU class (VERIFY_COST), chosen so that at budget 16 DDTree is DDTREE_OVER_LINEAR_AT_16
times linear: 1.24 on the Blackwell class (the field notes measured about 24 % more than linear DFlash
on ct200) and 0.96 on the A6000 class (a SIMULATED choice, no measurement: the notes give none), i.e.
VERIFY_COST = accept(16) / (2.4 * factor) - 1: blackwell 0.4113, ampere 0.8229, other 0.6. The class
comes from nvidia-smi's compute capability: major >= 10 blackwell, 8 ampere, anything else other.
Text (SIMULATED): a speculative algorithm's accept length is multiplied by text_factor(prompt), from
0.85 (no common English word in the prompt, as the former gate's word list) to 1.15 (half its words
or more, as prose), 1.0 under 20 words: a draft model guesses predictable text more often. Plain
decoding is unaffected.
Noise (SIMULATED): tokens/s is multiplied by ``speed``, the server process's factor times the request's
(launch_server: SGLANG_SIM_NOISE_PROCESS and SGLANG_SIM_NOISE_REQUEST, docs/dev/lab.md).
Time before the first token: prompt tokens / (PREFILL_TOKENS_PER_S_1 * tp_size ** 0.5); then
decode steps of step_s = accept_length / tokens_per_s each, step k bringing the count to
min(n, floor(k * accept_length)), at least one token a step (decode_steps).
"""

import math
from dataclasses import dataclass

LINEAR_ALGORITHMS = ("DFLASH", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")
LINEAR_ACCEPT = 3.0
LINEAR_STEP_COST = 1.25
DEFAULT_DDTREE_BUDGET = 16
# The field notes measured about 24 % more throughput than linear DFlash on ct200 (RTX PRO 6000
# Blackwell); on the ct129 (A6000) class, DDTree does not pay off in the lab.
DDTREE_OVER_LINEAR_AT_16 = {"blackwell": 1.24, "ampere": 0.96}
# SIMULATED text dependence: the share of a prompt's words among these stands for how predictable it is
COMMON_WORDS = frozenset(
    (
        "a",
        "about",
        "after",
        "all",
        "an",
        "and",
        "any",
        "as",
        "at",
        "be",
        "but",
        "by",
        "could",
        "for",
        "from",
        "had",
        "have",
        "he",
        "her",
        "herself",
        "him",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "one",
        "or",
        "out",
        "said",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "they",
        "this",
        "to",
        "up",
        "very",
        "was",
        "way",
        "were",
        "what",
        "when",
        "which",
        "with",
        "would",
        "you",
        "your",
    )
)
TEXT_FACTOR_RANGE = (0.85, 1.15)
TEXT_MIN_WORDS = 20
LOAD_COST = 0.05
PREFILL_TOKENS_PER_S_1 = 4000.0


def ddtree_accept(budget):
    """DDTree's tokens a step at budget b: linear's 3.0, 10 % more per doubling of the tree."""
    return LINEAR_ACCEPT * (1 + 0.1 * math.log2(budget))


def _verify_cost(factor):
    """The per-16-nodes verify cost that makes DDTree at budget 16 `factor` times linear."""
    cost_at_16 = ddtree_accept(16) / ((LINEAR_ACCEPT / LINEAR_STEP_COST) * factor)
    return cost_at_16 - 1


VERIFY_COST = {"blackwell": _verify_cost(DDTREE_OVER_LINEAR_AT_16["blackwell"]), "ampere": _verify_cost(DDTREE_OVER_LINEAR_AT_16["ampere"]), "other": 0.6}
# calibrated so that an ampere host at tp 2 with DDTREE budget 16 and one running request makes
# 100 tokens/s, the simulator's former fixed PER_TOKEN_S = 0.01, so the lab's timings stay as they
# were: 2.304 = that envelope's accept / step cost = 2.4 (linear) * 0.96 (DDTree over linear, ampere)
STEP_RATE_1 = 100 / (2**0.5 * 2.304)


@dataclass(frozen=True)
class Rate:
    """One request's simulated decode speed."""

    tokens_per_s: float
    accept_length: float
    step_s: float
    gpu_class: str


def gpu_class(compute_cap):
    """blackwell (compute capability 10 and up), ampere (8.x) or other, from nvidia-smi's "8.6"."""
    try:
        major = int(str(compute_cap).split(".", 1)[0])
    except ValueError:
        return "other"
    if major >= 10:
        return "blackwell"
    return "ampere" if major == 8 else "other"


def text_factor(prompt):
    """SIMULATED: 0.85 + 0.3 x min(1, 2 x the share of the prompt's words in COMMON_WORDS); 1.0 for a prompt of
    fewer than TEXT_MIN_WORDS words, too short to tell (the verdict's "The capital of France is")."""
    words = [w.strip(".,;:!?'\"()-_").lower() for w in (prompt or "").split()]
    words = [w for w in words if w]
    if len(words) < TEXT_MIN_WORDS:
        return 1.0
    share = sum(1 for w in words if w in COMMON_WORDS) / len(words)
    low, high = TEXT_FACTOR_RANGE
    return low + (high - low) * min(1.0, 2 * share)


def rate(tp_size, algorithm, budget, compute_cap, running=1, slow_share=0.0, text=1.0, speed=1.0):
    # pylint: disable=too-many-arguments,too-many-positional-arguments
    """The Rate of one request among `running` at once on this host's class and envelope; `text` multiplies
    a speculative algorithm's accept length (text_factor), `speed` the tokens/s (noise)."""
    if not 0 <= slow_share < 1:
        raise ValueError(f"slow_share {slow_share!r} is not in [0, 1)")
    klass = gpu_class(compute_cap)
    algorithm = (algorithm or "").upper()
    if algorithm == "DDTREE":
        budget = budget or DEFAULT_DDTREE_BUDGET
        accept, cost = ddtree_accept(budget) * text, 1 + VERIFY_COST[klass] * budget / 16
    elif algorithm in LINEAR_ALGORITHMS:
        accept, cost = LINEAR_ACCEPT * text, LINEAR_STEP_COST
    else:
        accept, cost = 1.0, 1.0
    steps_per_s = STEP_RATE_1 * speed * max(tp_size or 1, 1) ** 0.5 / cost / (1 + LOAD_COST * (max(running, 1) - 1))
    tokens_per_s = steps_per_s * accept * (1 - slow_share)
    return Rate(tokens_per_s=tokens_per_s, accept_length=accept, step_s=accept / tokens_per_s, gpu_class=klass)


def prefill_s(prompt_tokens, tp_size):
    """Seconds before the first decode step: the prompt at PREFILL_TOKENS_PER_S_1 * tp_size ** 0.5."""
    return prompt_tokens / (PREFILL_TOKENS_PER_S_1 * max(tp_size or 1, 1) ** 0.5)


def decode_steps(max_new_tokens, accept_length):
    """The cumulative token count after each decode step: min(n, floor(k * accept_length)) at step k,
    at least one more token a step; its length is the number of steps a generation takes."""
    counts, done = [], 0
    while done < max_new_tokens:
        # the epsilon: 3 * (1 + 0.1 * log2 16) is 4.199999999999999 in floats, and 10 steps of it are 42 tokens
        done = min(max_new_tokens, max(done + 1, math.floor((len(counts) + 1) * accept_length + 1e-9)))
        counts.append(done)
    return counts
